/**
 * The flows the hd_sql process tests ingest into a real cluster and check answers against: `batches`
 * one-minute batches of `perBatch` flows each, an hour before now, with ports, protocols and byte
 * counts cycling so every filter has a known answer.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Cluster } from '../support/cluster';
import { ingestMinutes } from '../support/ingestMinutes';

/** The columns the tests look at. */
export interface Flow {
  readonly ts: number;
  readonly dst_port: number;
  readonly proto: string;
  readonly bytes: number;
}

/** `pipelines/examples/data/flows.schema.json`. */
export const flowsSchemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');

/** The flows of a test and the window holding them all. */
export interface FlowsFixture {
  /** Start of the first batch (a minute boundary). */
  readonly t0: number;
  readonly batches: number;
  readonly perBatch: number;
  readonly all: readonly Flow[];
  /** A SQL predicate selecting exactly the fixture's time range. */
  readonly window: string;
}

/** The flows of `batches` batches of `perBatch`, starting an hour before `now`. */
export function flowsFixture(batches: number, perBatch: number, now = Math.floor(Date.now() / 1000)): FlowsFixture {
  const t0 = now - 3600 - (now % 60);
  const all: Flow[] = [];
  for (let b = 0; b < batches; b++) {
    for (let i = 0; i < perBatch; i++) all.push({ ts: t0 + b * 60 + (i % 60), dst_port: [443, 80, 53, 22][i % 4] as number, proto: ['tcp', 'udp', 'icmp'][i % 3] as string, bytes: i * 10 + b });
  }
  return { t0, batches, perBatch, all, window: `ts >= ${t0} AND ts < ${t0 + batches * 60}` };
}

/** Ingests the fixture through the cluster's SCC, one batch per minute, each acknowledged durable. */
export async function ingestFlows(cluster: Cluster, f: FlowsFixture): Promise<void> {
  await ingestMinutes(cluster, flowsSchemaJson, f.t0, f.batches, (b) =>
    f.all.slice(b * f.perBatch, (b + 1) * f.perBatch).map((x) => ({ ts: String(x.ts), src_ip: '10.0.0.1', dst_ip: '10.0.0.2', src_port: '1000', dst_port: String(x.dst_port), proto: x.proto, packets: '1', bytes: String(x.bytes), duration_ms: '5' })),
  );
}
