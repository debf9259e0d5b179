/**
 * Helpers of the ingest integration tests: records with recognisable bytes, the SCC's closing hash
 * worked out locally, and readers of what a Storage Node process holds (its segment files, /health,
 * /metrics), polled without time limits of their own (uvu's run ends a hung test).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BatchID, generateBatchIdNumber, HashChain, verifySegment } from '../../engine-rs/index';
import type { ClusterSn } from '../support/cluster';

/** Bytes per record in these tests (the reference's default RECORD_SIZE). */
export const RS = 150;

/** `count` records whose bytes depend on `seed`. */
export function recordsOf(count: number, seed: number): Buffer {
  const b = Buffer.alloc(count * RS);
  for (let i = 0; i < b.length; i++) b[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return b;
}

/** A batch id per number. */
export const batch = (n: number): BatchID => generateBatchIdNumber(n);

/** The closing hash the SCC computes by default (sha512, blocks of 64 record hashes). */
export async function closingHashOf(id: BatchID, records: Buffer): Promise<Buffer> {
  const chain = new HashChain(id, { recordSize: RS, blockSize: 64, algorithm: 'sha512' });
  if (records.length > 0) await chain.update(records);
  return chain.finish().closingHash;
}

/** Waits a little. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves once `cond()` is true, checking every 50 ms. */
export async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await sleep(50);
}

/** The segment files (committed) and partial files of a dataset on a cluster Storage Node's device d0. */
export function filesOn(sn: ClusterSn, dataset: string): { segments: string[]; partials: string[] } {
  const dir = path.join(sn.dir, 'd0', dataset);
  if (!existsSync(dir)) return { segments: [], partials: [] };
  const names = readdirSync(dir).sort();
  return { segments: names.filter((n) => n.endsWith('.hdseg')), partials: names.filter((n) => n.endsWith('.partial')) };
}

/** The bytes of a committed segment of `id`, or undefined. */
export function segmentBytes(sn: ClusterSn, dataset: string, id: BatchID): Buffer | undefined {
  const file = path.join(sn.dir, 'd0', dataset, `${id.toHex()}.hdseg`);
  return existsSync(file) ? readFileSync(file) : undefined;
}

/** Verifies the segment of `id` on `sn`: its chain recomputed, its closing hash returned. */
export async function verifiedClosingHash(sn: ClusterSn, dataset: string, id: BatchID): Promise<Buffer> {
  const v = await verifySegment(path.join(sn.dir, 'd0', dataset, `${id.toHex()}.hdseg`));
  if (!v.ok) throw new Error(`segment of batch ${id.toString()} on ${sn.name} does not verify: ${v.code} ${v.message}`);
  return v.closingHash;
}

/** A JSON document from an HTTP endpoint. */
export async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  return (await res.json()) as T;
}

/** The SCC's /health, as far as these tests read it. */
export interface SccHealth {
  status: string;
  replicas: { healthy: number; replicas: { name: string; state: string; reason: string }[] };
}

/** Each replica's state from the SCC's /health, as `name state`. */
export async function replicaStates(port: number): Promise<string[]> {
  const h = await getJson<SccHealth>(`http://127.0.0.1:${port}/health`);
  return h.replicas.replicas.map((r) => `${r.name} ${r.state}`);
}
