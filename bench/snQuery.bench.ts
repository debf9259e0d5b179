/**
 * One Storage Node's query service end to end: `hd run pipelines/storage-node.yaml` as a real
 * process, batches of 150-byte records ingested through its production port (segments in page
 * cache, with zone maps from the schema), and queries sent on its command port as an SCC would,
 * results at a ResultListener in this process.
 *
 * - filtered: a time range (all of it, so zone maps skip nothing) plus two predicates; the figure is
 *   record bytes scanned per second by the node, from the query frame to the last batch's eob echo;
 * - unfiltered: every record delivered to the listener (records/s);
 *
 * beside, in the same run and this process: the engine-rs kernel over the same records in memory
 * (`evaluateFilter`, one thread) and a plain memory read of the same bytes (`Buffer.equals` against
 * a copy: memcmp, counted as the bytes of one buffer per the time it takes to read both, halved).
 *
 * Run: `npx tsx bench/snQuery.bench.ts [records] [batch records]` (defaults 2 000 000 and 100 000).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { encodeFrame, evaluateFilter, FrameDecoder, generateBatchIdNumber, HashChain, ScanFilter, Schema, type EobFrame, type Frame } from '../engine-rs/index';
import { serializeHdQuery, type HdQuery } from '../query/hdQuery';
import type { SubQuery } from '../query/filter';
import { newQueryToken } from '../query/token';
import { HdwpClient } from '../hdwp/hdwpClient';
import { ResultListener } from '../hdwp/resultListener';
import { freePort, startHd, waitForPort } from '../test/support/hdProcess';

const RECORDS = Number(process.argv[2] ?? 2_000_000);
const BATCH = Number(process.argv[3] ?? 100_000);
const R = 150;
const RUNS = 3;
const HOST = '127.0.0.1';
const T0 = 1_700_000_000;

const SCHEMA = {
  id: 'flows150',
  record_size: R,
  byte_order: 'little',
  time_field: 'ts',
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'src_ip', offset: 8, size: 4, type: 'ipv4' },
    { name: 'dst_ip', offset: 12, size: 4, type: 'ipv4' },
    { name: 'src_port', offset: 16, size: 2, type: 'uint16' },
    { name: 'dst_port', offset: 18, size: 2, type: 'uint16' },
    { name: 'proto', offset: 20, size: 1, type: 'uint8' },
    { name: 'packets', offset: 24, size: 8, type: 'uint64' },
    { name: 'bytes', offset: 32, size: 8, type: 'uint64' },
    { name: 'payload', offset: 40, size: 110, type: 'bytes' },
  ],
};

/** The records: ts rising one per record, random ports and protocols (generated once, per record, outside any timing). */
function generate(): Buffer {
  const b = Buffer.alloc(RECORDS * R);
  let x = 7;
  for (let i = 0; i < RECORDS; i++) {
    const o = i * R;
    x = (x * 1103515245 + 12345) >>> 0;
    b.writeBigInt64LE(BigInt(T0 + i), o);
    b.writeUInt32LE(x, o + 8);
    b.writeUInt16LE(x & 0xffff, o + 18);
    b.writeUInt8([6, 17, 1][x % 3], o + 20);
    b.writeBigUInt64LE(BigInt(x % 1000), o + 24);
  }
  return b;
}

const since = (t: bigint): number => Number(process.hrtime.bigint() - t) / 1e6;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** ts over the whole data (zone maps rule nothing out), proto = 6, dst_port < 1024. */
const FILTERED: SubQuery[] = [
  {
    filters: [
      { field: 'ts', op: 'between', values: [String(T0), String(T0 + RECORDS)] },
      { field: 'proto', op: 'eq', value: '6' },
      { field: 'dst_port', op: 'lt', value: '1024' },
    ],
  },
];

(async () => {
  const data = generate();
  const ids = Array.from({ length: Math.ceil(RECORDS / BATCH) }, (_, i) => generateBatchIdNumber(i + 1));
  console.log(`${RECORDS} records of ${R} bytes (${(data.length / 1e6).toFixed(0)} MB) in ${ids.length} batches; one Storage Node process, listener in this process\n`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-snqbench-'));
  mkdirSync(path.join(dir, 'schemas'));
  writeFileSync(path.join(dir, 'schemas', 'flows150.json'), JSON.stringify(SCHEMA));
  const ports = { production: await freePort(), command: await freePort(), obs: await freePort() };
  const config = path.join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({ node_name: 'sn-bench', production_ip: HOST, production_port: ports.production, command_port: ports.command, observability_port: ports.obs, reserve_bytes: 0, storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }] }),
  );
  const sn = startHd(['run', 'pipelines/storage-node.yaml', '--config', config, '--quiet'], { HASH_ALGORITHM: 'sha256', RECORD_SIZE: String(R), SCHEMA_DIR: path.join(dir, 'schemas') });
  const listener = new ResultListener({ host: HOST, port: 0 });
  const { port } = await listener.listen();
  try {
    await waitForPort(HOST, ports.production, sn);
    await waitForPort(HOST, ports.command, sn);
    const ingest = await HdwpClient.connect({ host: HOST, port: ports.production, role: 'scc', datasetId: 'flows150', recordSize: R });
    const acks: Promise<EobFrame>[] = [];
    for (const [i, id] of ids.entries()) {
      const slice = data.subarray(i * BATCH * R, Math.min(data.length, (i + 1) * BATCH * R));
      const chain = new HashChain(id, { recordSize: R, blockSize: 64, algorithm: 'sha256' });
      await chain.update(slice);
      await ingest.sendRecords(id, slice);
      acks.push(ingest.sendEob(id, slice.length / R, chain.finish().closingHash));
    }
    await Promise.all(acks);
    await ingest.close();

    // The SCC's side: one control connection, a query frame per run, eob echoes counted.
    const sock = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect({ host: HOST, port: ports.command }, () => resolve(s));
      s.once('error', reject);
    });
    const decoder = new FrameDecoder();
    const ends = new Map<number, number>();
    const waiters = new Map<number, () => void>();
    sock.on('data', (c: Buffer) => {
      for (const f of decoder.push(c) as Frame[]) {
        if ((f.kind === 'eob' || f.kind === 'bbn' || f.kind === 'error') && f.auth) {
          if (f.kind !== 'eob') throw new Error(`query ${f.auth.queryId} failed: ${JSON.stringify(f)}`);
          const n = (ends.get(f.auth.queryId) ?? 0) + 1;
          ends.set(f.auth.queryId, n);
          if (n === ids.length) waiters.get(f.auth.queryId)?.();
        }
      }
    });
    sock.write(encodeFrame({ kind: 'hello', version: 1, role: 'scc', datasetId: 'flows150', recordSize: R }));
    let nextId = 1;
    const run = async (subQueries: SubQuery[]): Promise<{ ms: number; records: number }> => {
      const queryId = nextId++;
      const token = newQueryToken();
      let records = 0;
      let batches = 0;
      let allIn!: () => void;
      const delivered = new Promise<void>((r) => (allIn = r));
      const echoed = new Promise<void>((r) => waiters.set(queryId, r));
      const open = listener.open({ queryId, token }, (r) => {
        if (r.kind !== 'batch') throw new Error(`query failed: ${JSON.stringify(r)}`);
        records += r.count;
        if (++batches === ids.length) allIn();
      });
      const q: HdQuery = { queryId, dataset: 'flows150', batchIds: ids.map((b) => b.toHex()), subQueries, targets: [], verifyHash: false, queryQos: 1, returnAddress: { host: HOST, port }, token };
      const t = process.hrtime.bigint();
      sock.write(encodeFrame({ kind: 'query', queryId, token, json: serializeHdQuery(q) }));
      await Promise.all([delivered, echoed]);
      const ms = since(t);
      open.close();
      return { ms, records };
    };
    await run(FILTERED); // warm the page cache and the JIT
    const filtered: number[] = [];
    let matched = 0;
    for (let i = 0; i < RUNS; i++) {
      const r = await run(FILTERED);
      filtered.push(r.ms);
      matched = r.records;
    }
    const unfiltered: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const r = await run([]);
      if (r.records !== RECORDS) throw new Error(`expected ${RECORDS} records, got ${r.records}`);
      unfiltered.push(r.ms);
    }
    sock.destroy();

    // In this process, over the same bytes in memory.
    const filter = ScanFilter.compile(Schema.parse(SCHEMA), JSON.stringify(FILTERED));
    const kernel: number[] = [];
    for (let i = 0; i < RUNS + 1; i++) {
      const t = process.hrtime.bigint();
      let n = 0;
      for (let at = 0; at < data.length; at += BATCH * R) n += evaluateFilter(filter, data.subarray(at, at + BATCH * R)).length / R;
      if (i > 0) kernel.push(since(t));
      if (n !== matched) throw new Error(`the kernel matched ${n}, the node ${matched}`);
    }
    const copy = Buffer.from(data);
    copy[copy.length - 1] ^= 1;
    const memread: number[] = [];
    for (let i = 0; i < RUNS + 1; i++) {
      const t = process.hrtime.bigint();
      if (data.equals(copy)) throw new Error('the copy should differ in its last byte');
      // memcmp read two buffers: the time to read one is half.
      if (i > 0) memread.push(since(t) / 2);
    }

    const gbs = (ms: number): string => (data.length / 1e6 / ms).toFixed(2);
    const mem = median(memread);
    console.log(`filter: ts over the whole range, proto = 6, dst_port < 1024 → ${matched} of ${RECORDS} records (${((matched / RECORDS) * 100).toFixed(1)}%)\n`);
    console.log('| path | median ms | GB/s scanned | records/s | vs memory read |');
    console.log('|---|---:|---:|---:|---:|');
    const row = (name: string, ms: number, recs = RECORDS): void => console.log(`| ${name} | ${ms.toFixed(0)} | ${gbs(ms)} | ${((recs / ms) * 1e3).toFixed(0)} | ${(mem / ms).toFixed(2)} |`);
    row('node: query frame → scan (segments in page cache) → matches at the listener, filtered', median(filtered));
    row('node: every record delivered to the listener, unfiltered', median(unfiltered));
    row('kernel in memory (evaluateFilter, one thread), same filter', median(kernel));
    row('memory read (memcmp of the bytes against a copy, per buffer)', mem);
  } finally {
    await listener.close();
    await sn.stop();
    rmSync(dir, { recursive: true, force: true });
  }
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
