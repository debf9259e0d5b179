/**
 * Aggregate pushdown of GROUP BY on fields read as their bytes (issue #17; docs/sql.md "Aggregate
 * pushdown"): bytes arrays, strings, 1- and 2-byte bytes, blobs, chess moves, a bytes view over an
 * integer. A randomised differential test: each batch is a real segment, scanned by the real
 * kernel — records for the record path, partials (per batch, or merged natively as a node sends
 * them) for the pushed path, both after the same field mask — and every statement answers exactly
 * as the record path does: column names, types, rows, row order under ORDER BY. Values that decode
 * alike from different bytes (invalid UTF-8, booleans and undefined enum codes in arrays, chess
 * codes of no move) and keys a mask hides collapse into one group, as rows do. GROUP BY ipv4, float
 * arrays, 16-byte strings and expressions keep the record path.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type * as arrow from 'apache-arrow';
import { decodeRecords } from '../../engine-rs/decode';
import { AggregateAccumulator, AggregatePlan, generateBatchIdNumber, HashChain, ScanFilter, Schema, SegmentScanner, SegmentWriter, zoneFieldsOf } from '../../engine-rs/index';
import { mulberry32 } from '../../lib/mulberry32';
import { LocalSql } from '../../local/localSql';
import { filterJson } from '../../query/filter';
import type { AggregatePartial } from '../../sql/aggregateMerge';
import { Catalog } from '../../sql/catalog';
import type { DatasetFetcher, FetchOutcome } from '../../sql/datasetFetcher';
import type { DatasetRead } from '../../sql/planner';
import { SqlEngine, type SqlResult } from '../../sql/sqlEngine';

const T0 = 1_700_000_040 - (1_700_000_040 % 60);
const RS = 96;
const schema = Schema.parse(
  JSON.stringify({
    id: 'bk',
    record_size: RS,
    time_field: 'ts',
    time_index_interval: 60,
    enums: { proto: { values: { icmp: 1, tcp: 6, udp: 17 }, default_label: 'other' } },
    fields: [
      { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
      { name: 'proto', offset: 8, size: 1, type: 'uint8', enum: 'proto' },
      { name: 'b1', offset: 9, size: 1, type: 'bytes' },
      { name: 'port', offset: 10, size: 2, type: 'uint16' },
      { name: 'pbytes', offset: 10, size: 2, type: 'bytes', overlay: true },
      { name: 'b2', offset: 12, size: 2, type: 'bytes' },
      { name: 'mv', offset: 14, size: 2, type: 'chess_move' },
      { name: 'bytes', offset: 16, size: 8, type: 'uint64' },
      { name: 'vlan', offset: 24, size: 8, type: 'bytes', array: { element: 'uint16', count: 4 } },
      { name: 'tag', offset: 32, size: 4, type: 'string' },
      { name: 'ip', offset: 36, size: 4, type: 'ipv4' },
      { name: 'flags', offset: 40, size: 2, type: 'bytes', array: { element: 'boolean', count: 2 } },
      { name: 'protos', offset: 42, size: 4, type: 'bytes', array: { element: 'uint8', count: 4, enum: 'proto' } },
      { name: 'ips', offset: 48, size: 8, type: 'bytes', array: { element: 'ipv4', count: 2 } },
      { name: 'blob8', offset: 56, size: 8, type: 'blob' },
      { name: 'rtts', offset: 64, size: 8, type: 'bytes', array: { element: 'float', count: 2 } },
      { name: 'name16', offset: 72, size: 16, type: 'string' },
    ],
  }),
);

const TAGS = [[0x41, 0x42], [0x41], [0x41, 0x42, 0x43, 0x44], [], [0x41, 0, 0x42], [0xff, 0xfe], [0xff], [0xfe], [0xc3, 0xa9], [0, 0, 0, 0x41]];
const VLANS = [[301], [301, 302], [302, 301], [100, 4095, 301], [], [0, 301], [301, 302, 303, 304]];
const MOVES = [0x0000, 0x011c, 0x015c, 0x0100, 0xf01c, 0xf11c, 0xfe00, 0xff06];
const IPS = [0x0a000009, 0x0a00000a, 0xc0000201, 0];

/** `batches` one-minute batches of `perBatch` records drawn from small value sets, so groups repeat. */
function records(seed: number, batches: number, perBatch: number): Buffer[] {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  return Array.from({ length: batches }, (_, b) => {
    const buf = Buffer.alloc(RS * perBatch);
    for (let i = 0; i < perBatch; i++) {
      const o = i * RS;
      buf.writeBigInt64LE(BigInt(T0 + b * 60 + Math.floor(rnd() * 60)), o);
      buf[o + 8] = pick([1, 6, 17, 6, 0, 200]);
      buf[o + 9] = pick([0, 7, 0xff]);
      buf.writeUInt16LE(pick([22, 53, 80, 443, 8080]), o + 10);
      buf.writeUInt16LE(pick([0, 1, 0xab00, 0xffff, 0x00ff]), o + 12);
      buf.writeUInt16BE(pick(MOVES), o + 14);
      buf.writeBigUInt64LE(BigInt(Math.floor(rnd() * 2 ** 40)), o + 16);
      pick(VLANS).forEach((v, k) => buf.writeUInt16LE(v, o + 24 + 2 * k));
      Buffer.from(pick(TAGS)).copy(buf, o + 32);
      buf.writeUInt32LE(pick(IPS), o + 36);
      for (let k = 0; k < 2; k++) buf[o + 40 + k] = pick([0, 1, 2, 0xff]);
      for (let k = 0; k < 4; k++) buf[o + 42 + k] = pick([1, 6, 0, 200, 255]);
      for (let k = 0; k < 2; k++) buf.writeUInt32LE(pick(IPS), o + 48 + 4 * k);
      Buffer.from(pick(['k1', 'key', '', 'key\u0000x', 'long-key'])).copy(buf, o + 56);
      for (let k = 0; k < 2; k++) buf.writeFloatLE(pick([0, -0, 1.5, Number.NaN]), o + 64 + 4 * k);
      Buffer.from(pick(['x', 'y', ''])).copy(buf, o + 72);
    }
    return buf;
  });
}

/** Every batch as a segment file (with its zone fields, so whole batches may be answered by their summary). */
async function segments(dir: string, batches: readonly Buffer[]): Promise<string[]> {
  return Promise.all(
    batches.map(async (data, i) => {
      const id = generateBatchIdNumber(BigInt(i + 1));
      const w = SegmentWriter.create({ dir, name: `b${i}.hdseg`, datasetId: 'bk', batchId: id, recordSize: RS, blockSize: 64, algorithm: 'sha256', fields: zoneFieldsOf(schema) });
      await w.append(data);
      const c = new HashChain(id, { algorithm: 'sha256', recordSize: RS, blockSize: 64 });
      await c.update(data);
      return (await w.finish(c.finish().closingHash)).path;
    }),
  );
}

/**
 * Storage Nodes behind the Proxy over `files`, the caller's field `mask` applied: records, or
 * partials (`merged`: one frame of the batches merged natively, as hd_sql asks for). As the Proxy
 * does (docs/proxy.md), a branch that filters on a field with hidden bytes matches nothing.
 */
function node(files: readonly string[], mask: Buffer | undefined, merged: boolean): DatasetFetcher & { specs: unknown[] } {
  const specs: unknown[] = [];
  const hidden = (name: string): boolean => {
    const f = schema.fields.find((x) => x.name === name)!;
    return mask !== undefined && mask.subarray(f.offset, f.offset + f.size).some((b) => b !== 0xff);
  };
  /** The read's filter, or undefined when it can match nothing. */
  const filterOf = (read: DatasetRead): ScanFilter | undefined => {
    const window = { field: schema.timeField, op: 'between', values: [String(read.startTime), String(read.endTime)] };
    const branches = read.subQueries.length > 0 ? read.subQueries.filter((s) => !s.filters.some((f) => hidden(f.field))) : [{ filters: [] }];
    if (branches.length === 0) return undefined;
    return ScanFilter.compile(schema, JSON.stringify(branches.map((s) => ({ filters: [window, ...s.filters.map(filterJson)] }))));
  };
  const steps = async (s: SegmentScanner, each: (st: Awaited<ReturnType<SegmentScanner['next']>>) => void): Promise<void> => {
    for (let st = await s.next(1); ; st = await s.next(1)) {
      each(st);
      if (st.done) return;
    }
  };
  return {
    specs,
    async fetch(read, onBatch): Promise<FetchOutcome> {
      const f = filterOf(read);
      for (const file of f ? files : []) {
        const s = await SegmentScanner.open(file, f!);
        const parts: Buffer[] = [];
        await steps(s, (st) => parts.push(st.records)).finally(() => s.close());
        const hits = Buffer.concat(parts);
        if (mask) for (let i = 0; i < hits.length; i++) hits[i] = hits[i]! & mask[i % RS]!;
        if (hits.length > 0) await onBatch(await decodeRecords(schema, hits, read.columns ? { fields: read.columns } : undefined));
      }
      return { batchErrors: [], missingBatches: 0 };
    },
    async fetchAggregate(read, spec, onPartial): Promise<FetchOutcome> {
      specs.push(spec);
      const plan = AggregatePlan.compile(schema, JSON.stringify(spec), mask);
      const f = filterOf(read);
      const acc = AggregateAccumulator.create(plan);
      if (!f) onPartial({ v: 1, groups: [] });
      for (const file of f ? files : []) {
        const s = await SegmentScanner.open(file, f!);
        try {
          if (merged) {
            if (!s.setAggregateFold(plan)) await steps(s, () => undefined);
            if (!s.foldInto(acc)) throw new Error('max_groups');
          } else {
            let partial = s.setAggregate(plan);
            if (partial === undefined) await steps(s, (st) => (partial = st.partial ?? partial));
            onPartial(JSON.parse(partial!) as AggregatePartial);
          }
        } finally {
          s.close();
        }
      }
      if (merged && !acc.empty) onPartial({ v: 2, groups: JSON.parse(acc.take()) } as AggregatePartial);
      return { batchErrors: [], missingBatches: 0 };
    },
  };
}

const W = `ts >= ${T0} AND ts < ${T0 + 600}`;
const WHERES = ['', ` WHERE ${W}`, ` WHERE ${W} AND list_contains(vlan, 301)`, ` WHERE ${W} AND port IN (80, 443)`, ` WHERE ${W} AND tag = 'AB'`, ' WHERE ts < 0'];

/** `{W}` is each WHERE; `split: false`: must keep the record path. */
const SHAPES: { sql: string; split?: false }[] = [
  { sql: 'SELECT vlan, count(*) AS flows FROM bk{W} GROUP BY vlan ORDER BY flows DESC, vlan LIMIT 5' },
  { sql: 'SELECT tag, count(*), sum(bytes), min(port), max(port) FROM bk{W} GROUP BY tag ORDER BY tag' },
  { sql: 'SELECT b2, b1, count(*) AS n FROM bk{W} GROUP BY b2, b1 ORDER BY b2, b1' },
  { sql: 'SELECT vlan, tag, proto, count(*), avg(port) FROM bk{W} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3' },
  { sql: 'SELECT mv, count(*) FROM bk{W} GROUP BY mv ORDER BY mv NULLS FIRST' },
  { sql: 'SELECT flags, protos, count(*), sum(port) FROM bk{W} GROUP BY flags, protos ORDER BY 1, 2' },
  { sql: 'SELECT blob8, ts - ts % 120 AS m, count(*) FROM bk{W} GROUP BY blob8, m ORDER BY 1, 2' },
  { sql: 'SELECT pbytes, port, count(*) FROM bk{W} GROUP BY pbytes, port ORDER BY 1, 2' },
  { sql: 'SELECT ips, count(*) AS n FROM bk{W} GROUP BY ips ORDER BY ips' },
  { sql: 'SELECT upper(tag) AS u, vlan[1] AS v1, count(*) AS n FROM bk{W} GROUP BY tag, vlan HAVING count(*) > 2 ORDER BY u, v1, n' },
  { sql: 'SELECT tag FROM bk{W} GROUP BY tag' },
  { sql: 'SELECT ip, count(*) FROM bk{W} GROUP BY ip ORDER BY ip', split: false },
  { sql: 'SELECT rtts, count(*) FROM bk{W} GROUP BY rtts ORDER BY 1', split: false },
  { sql: 'SELECT name16, count(*) FROM bk{W} GROUP BY name16 ORDER BY 1', split: false },
  { sql: 'SELECT substr(tag, 1, 1) AS t, count(*) FROM bk{W} GROUP BY substr(tag, 1, 1) ORDER BY 1', split: false },
];

/** Field masks: none; vlan hidden; half of tag, b2's low nibble and mv's first byte hidden. */
function masks(): (Buffer | undefined)[] {
  const vlan = Buffer.alloc(RS, 0xff).fill(0, 24, 32);
  const partial = Buffer.alloc(RS, 0xff).fill(0, 34, 36);
  partial[13] = 0xf0;
  partial[14] = 0;
  return [undefined, vlan, partial];
}

function show(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  if (v instanceof Uint8Array) return `x${Buffer.from(v).toString('hex')}`;
  if (typeof v === 'object' && Symbol.iterator in v) return `[${[...(v as Iterable<unknown>)].map(show).join(',')}]`;
  return JSON.stringify(v);
}

function rowsOf(t: arrow.Table, sorted: boolean): string[] {
  const rows = Array.from({ length: t.numRows }, (_, i) => t.schema.fields.map((_f, c) => show(t.getChildAt(c)?.get(i))).join('|'));
  return sorted ? rows.sort() : rows;
}

function same(sql: string, a: SqlResult, b: SqlResult): void {
  const cols = (r: SqlResult): string => r.table.schema.fields.map((f) => `${f.name}:${String(f.type)}`).join(', ');
  assert.is(cols(a), cols(b), `columns of ${sql}`);
  assert.equal(rowsOf(a.table, !/ORDER BY/i.test(sql)), rowsOf(b.table, !/ORDER BY/i.test(sql)), `rows of ${sql}`);
}

function engines(fetcher: DatasetFetcher): { pushed: SqlEngine; records: SqlEngine; local: LocalSql } {
  const local = new LocalSql({ threads: 1 });
  const base = { lookbackSec: 3600, timeoutMs: 20_000, maxRows: 0, qos: 1, explainPushdown: true };
  const catalog = new Catalog([schema]);
  return { pushed: new SqlEngine(catalog, local, fetcher, base, () => T0 + 3000), records: new SqlEngine(catalog, local, fetcher, { ...base, aggregatePushdown: false }, () => T0 + 3000), local };
}

const byteKeys = suite('aggregate pushdown: GROUP BY fields read as their bytes');
let dir = '';
byteKeys.before(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-agg-bytes-'));
});
byteKeys.after(() => rmSync(dir, { recursive: true, force: true }));

for (const seed of [3, 8]) {
  byteKeys(`seed ${seed}: every shape, WHERE and field mask gives the record path's answer`, async () => {
    const files = await segments(mkdtempSync(path.join(dir, 's')), records(seed, 6, 300));
    let splits = 0;
    let total = 0;
    for (const [m, mask] of masks().entries()) {
      const { pushed, records: recs, local } = engines(node(files, mask, (seed + m) % 2 === 0));
      try {
        for (const shape of SHAPES) {
          for (const w of WHERES) {
            const sql = shape.sql.replace('{W}', w);
            const a = await pushed.execute(sql);
            same(sql, a, await recs.execute(sql));
            total++;
            if (shape.split === false) assert.not.ok(a.aggregatePushed, `must not split: ${sql}`);
            else if (!a.aggregatePushed) assert.unreachable(`should split: ${sql} (${a.notices.join('; ')})`);
            if (a.aggregatePushed) splits++;
          }
        }
        // The hidden vlan collapses to one group: all zeros, as every row reads it.
        if (m === 1) {
          const r = await pushed.execute(`SELECT vlan, count(*) AS n FROM bk WHERE ${W} GROUP BY vlan`);
          assert.is(r.table.numRows, 1);
          assert.is(show(r.table.getChildAt(0)?.get(0)), '[0,0,0,0]');
        }
      } finally {
        await local.close();
      }
    }
    console.log(`  seed ${seed}: ${splits} of ${total} statements pushed their aggregates, all answers equal to the record path's`);
  });
}

byteKeys('distinct bytes that decode alike are one group; the spec names the byte keys', async () => {
  const files = await segments(mkdtempSync(path.join(dir, 's')), records(5, 3, 400));
  const fetcher = node(files, undefined, true);
  const { pushed, local } = engines(fetcher);
  try {
    // 0xff, 0xfe (invalid UTF-8) and 0xff 0xfe read as U+FFFD, U+FFFD and U+FFFD U+FFFD.
    const r = await pushed.execute(`SELECT tag, count(*) AS n FROM bk WHERE ${W} GROUP BY tag ORDER BY tag`);
    assert.ok(r.aggregatePushed);
    const tags = rowsOf(r.table, false).map((x) => x.split('|')[0]);
    assert.is(new Set(tags).size, tags.length, tags.join(' '));
    assert.ok(tags.includes(JSON.stringify('\ufffd')) && tags.includes(JSON.stringify('\ufffd\ufffd')), tags.join(' '));
    const spec = fetcher.specs[0] as { group_by: unknown[] };
    assert.equal(spec.group_by, [{ field: 'tag' }]);
  } finally {
    await local.close();
  }
});

byteKeys('timings (log only): GROUP BY vlan over 150k records, pushed and record path', async () => {
  const files = await segments(mkdtempSync(path.join(dir, 's')), records(9, 10, 15_000));
  const { pushed, records: recs, local } = engines(node(files, undefined, true));
  try {
    const sql = `SELECT vlan, count(*) AS flows FROM bk WHERE ${W} AND list_contains(vlan, 301) GROUP BY vlan ORDER BY flows DESC LIMIT 5`;
    same(`${sql}, vlan`, await pushed.execute(`${sql.replace('DESC', 'DESC, vlan')}`), await recs.execute(`${sql.replace('DESC', 'DESC, vlan')}`));
    const t0 = performance.now();
    const a = await pushed.execute(sql);
    const t1 = performance.now();
    await recs.execute(sql);
    const t2 = performance.now();
    assert.ok(a.aggregatePushed);
    console.log(`  150k records, GROUP BY vlan: pushed ${(t1 - t0).toFixed(1)} ms (partials by the real kernel, in process), record path ${(t2 - t1).toFixed(1)} ms`);
  } finally {
    await local.close();
  }
});

byteKeys.run();
