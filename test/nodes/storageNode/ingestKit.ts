/**
 * What the Storage Node ingest tests share: the 40-byte `ticks` records they send, their closing
 * hash (sha256 chains of 16-record blocks), the pipeline file the nodes run, a node running it with a
 * config.json the way `hd run --config` passes it, an SCC's HDWP stream to it, and batches fed
 * straight to a node's `segmentStore` sink.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { from, lastValueFrom } from 'rxjs';
import { HashChain, generateBatchIdNumber, type BatchID } from '../../../engine-rs/index';
import { HdwpClient } from '../../../hdwp/hdwpClient';
import { loadPipelineFile } from '../../../pipelines/load';
import { runPipeline, type RunResult } from '../../../pipelines/run';
import { builtinRegistry } from '../../../roles/builtins';
import type { AckResult, Chunk } from '../../../stream/chunk';
import type { BatchStore } from '../../../nodes/storageNode/batchStore';
import { segmentStore } from '../../../nodes/storageNode/segmentStore';
import { freePort } from '../../support/hdProcess';

/** Record size of the `ticks` dataset. */
export const R = 40;
/** The dataset the tests ingest. */
export const DS = 'ticks';
/** The Storage Node pipeline file. */
export const yaml = path.resolve(__dirname, '../../../pipelines/storage-node.yaml');

/** `n` records whose bytes follow from `seed`. */
export function records(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n * R);
  for (let i = 0; i < b.length; i++) b[i] = (i * 7 + seed * 3) & 0xff;
  return b;
}

/** The closing hash of `data` as batch `id` (sha256, 16-record blocks). */
export async function closing(id: BatchID, data: Buffer): Promise<Buffer> {
  const c = new HashChain(id, { recordSize: R, blockSize: 16, algorithm: 'sha256' });
  await c.update(data);
  return c.finish().closingHash;
}

/** A Storage Node pipeline running in this process on free ports. */
export interface RunningNode {
  /** Its base directory (config.json and the devices' directories). */
  readonly dir: string;
  /** Its HDWP (production) port. */
  readonly port: number;
  /** Its observability port (`/health`, `/metrics`, `/v1/...`). */
  readonly obsPort: number;
  /** Stops the pipeline; resolves once its teardown has settled. */
  stop(): Promise<RunResult>;
}

/** What {@link startNode} varies. */
export interface StartNodeOptions {
  /** `node_name` (default `sn-ingest`). */
  readonly nodeName?: string;
  /** `storage_devices` (default one `dir` device `d0`). */
  readonly devices?: readonly Record<string, unknown>[];
}

/** Runs the Storage Node pipeline in `dir` with a config.json written there, as `hd run --config` passes it. */
export async function startNode(dir: string, opts: StartNodeOptions = {}): Promise<RunningNode> {
  const port = await freePort();
  const obsPort = await freePort();
  const config = {
    node_name: opts.nodeName ?? 'sn-ingest',
    production_ip: '127.0.0.1',
    production_port: port,
    command_port: await freePort(),
    observability_port: obsPort,
    reserve_bytes: 0,
    storage_devices: opts.devices ?? [{ name: 'd0', address: 'd0', type: 'dir' }],
  };
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  // What `hd run --config` passes: the file's keys and its path.
  const overrides = { CONFIG_FILE: file, production_ip: '127.0.0.1', production_port: String(port), HASH_ALGORITHM: 'sha256', HASH_CHAIN_BLOCK_SIZE: '16' };
  const loaded = await loadPipelineFile(yaml, { registry: builtinRegistry(), env: {}, overrides });
  if (!loaded.ok) throw new Error(loaded.problems.map((p) => p.message).join('\n'));
  const abort = new AbortController();
  const result = runPipeline(loaded.pipeline, { signal: abort.signal });
  return {
    dir,
    port,
    obsPort,
    stop: async () => {
      abort.abort();
      return result;
    },
  };
}

/** An SCC's HDWP stream of {@link DS} to the node on `port`, retried while the node is still recovering. */
export async function connect(port: number): Promise<HdwpClient> {
  for (let i = 0; ; i++) {
    try {
      return await HdwpClient.connect({ host: '127.0.0.1', port, role: 'scc', datasetId: DS, recordSize: R });
    } catch (err) {
      // The node listens once recovery is done; until then connections are refused.
      if (i > 200) throw err;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

/** Records per `sendRecords` of {@link sendBatch} (about 1 MB). */
export const SEND_RECORDS = 26_214;

/** Sends `data` as batch `id` in pieces of {@link SEND_RECORDS} records, then its eob with the closing hash; returns that hash and the one acknowledged. */
export async function sendBatch(c: HdwpClient, id: BatchID, data: Buffer): Promise<{ hash: Buffer; acked: Buffer }> {
  const hash = await closing(id, data);
  for (let at = 0; at < data.length; at += SEND_RECORDS * R) await c.sendRecords(id, data.subarray(at, at + SEND_RECORDS * R));
  const ack = await c.sendEob(id, data.length / R, hash);
  return { hash, acked: Buffer.from(ack.closingHash) };
}

/** Stores batches `keys` (ids from {@link generateBatchIdNumber}) of `n` records each through the `segmentStore` sink on `store`; returns their acks in order. */
export async function storeBatches(store: BatchStore, keys: readonly bigint[], n: number): Promise<AckResult[]> {
  const acks: AckResult[] = [];
  const els: Chunk[] = keys.flatMap((k): Chunk[] => [
    { kind: 'records', dataset: DS, batchId: generateBatchIdNumber(k), count: n, recordSize: R, buf: records(n, Number(k)) },
    { kind: 'eob', dataset: DS, batchId: generateBatchIdNumber(k), recordCount: n, ack: (a) => acks.push(a) },
  ]);
  await lastValueFrom(segmentStore({ open: async () => store })(from(els)), { defaultValue: undefined });
  return acks;
}
