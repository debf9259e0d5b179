/**
 * AggregateAccumulator.fromSummaries and absorb (engine-rs/scan.ts): one native call answers the
 * batches of a group whose summaries answer the aggregate (the filter proven for every record by
 * the batch's zones), with exactly the partial that folding them one by one gives; a batch its
 * summary cannot answer, a damaged footer, a missing file or a batch past max_groups is left
 * unanswered (-1); with a scan budget, small batches are scanned whole and folded with exactly the
 * counts and partial of their own scans (a field mask applying the same), a damaged block is never
 * folded, a batch past the group's budget is not tried (-2); absorb moves a whole accumulator and
 * refuses past max_groups or another plan.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { AggregateAccumulator, AggregatePlan, generateBatchIdNumber, HashChain, ScanError, ScanFilter, Schema, SegmentScanner, SegmentWriter, zoneFieldsOf } from '../../engine-rs/index';

const R = 16;
const schema = Schema.parse(
  JSON.stringify({
    id: 'grp',
    record_size: R,
    time_field: 'ts',
    enums: { proto: { values: { tcp: 6, udp: 17 }, default_label: 'other' } },
    fields: [
      { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
      { name: 'proto', offset: 8, size: 1, type: 'uint8', enum: 'proto' },
      { name: 'port', offset: 10, size: 2, type: 'uint16' },
      { name: 'amount', offset: 12, size: 4, type: 'int32' },
    ],
  }),
);

/** `n` records from ts `t0` on: proto cycles tcp / udp / 1, port and amount vary. */
function records(t0: number, n: number): Buffer {
  const b = Buffer.alloc(n * R);
  for (let i = 0; i < n; i++) {
    const o = i * R;
    b.writeBigInt64LE(BigInt(t0 + i), o);
    b.writeUInt8([6, 17, 1][i % 3] as number, o + 8);
    b.writeUInt16LE((i * 37) % 65536, o + 10);
    b.writeInt32LE((i % 2 === 0 ? 1 : -1) * i * 1001, o + 12);
  }
  return b;
}

async function write(dir: string, n: number, data: Buffer): Promise<string> {
  const id = generateBatchIdNumber(BigInt(n));
  const w = SegmentWriter.create({ dir, name: `b${n}.hdseg`, datasetId: 'grp', batchId: id, recordSize: R, blockSize: 16, algorithm: 'sha256', fields: zoneFieldsOf(schema) });
  if (data.length > 0) await w.append(data);
  const c = new HashChain(id, { algorithm: 'sha256', recordSize: R, blockSize: 16 });
  await c.update(data);
  return (await w.finish(c.finish().closingHash)).path;
}

/** Folds each batch one by one (the per-batch path): its summary, or scanned to its end. */
async function oneByOne(files: string[], filter: ScanFilter, plan: AggregatePlan): Promise<string> {
  const acc = AggregateAccumulator.create(plan);
  for (const f of files) {
    const s = await SegmentScanner.open(f, filter);
    try {
      if (!s.setAggregateFold(plan)) for (let st = await s.next(4); !st.done; st = await s.next(4));
      assert.ok(s.foldInto(acc));
    } finally {
      s.close();
    }
  }
  return acc.take();
}

const code = (c: string) => (e: unknown) => e instanceof ScanError && e.code === c;

let dir: string;
let files: string[];
const sizes = [100, 37, 0, 250];

const t = suite('AggregateAccumulator.fromSummaries and absorb');
t.before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-sumgroup-'));
  files = [];
  let ts = 1000;
  for (const [i, n] of sizes.entries()) {
    files.push(await write(dir, i + 1, records(ts, n)));
    ts += n;
  }
});
t.after(() => rmSync(dir, { recursive: true, force: true }));

t('a group answers every batch whose zones prove the filter, with the partial of folding them one by one', async () => {
  const plan = AggregatePlan.compile(schema, JSON.stringify({ version: 1, group_by: [{ field: 'proto' }], measures: [{ fn: 'count' }, { fn: 'sum', field: 'amount' }] }));
  // No filter, and a time range every batch lies within: answered from the summaries.
  for (const json of ['[]', '[{"filters":[{"field":"ts","op":"ge","value":"1000"}]}]']) {
    const filter = ScanFilter.compile(schema, json);
    const g = await AggregateAccumulator.fromSummaries(files, filter, plan);
    // Answered exactly where the batch's own open takes its summary (an empty batch has no zones to prove a filter with).
    const own = await Promise.all(files.map((f) => SegmentScanner.open(f, filter).then((s) => {
          const n = s.setAggregateFold(plan) ? s.records : -1;
          s.close();
          return n;
        }),));
    assert.equal(own, json === '[]' ? sizes : [100, 37, -1, 250]);
    assert.equal([...g.records], own, json);
    assert.ok([...g.blocks].every((b, i) => (own[i] === -1 ? b === -1 : b === Math.ceil((sizes[i] as number) / 16))), json);
    const acc = AggregateAccumulator.create(plan);
    assert.ok(acc.absorb(g.acc));
    assert.ok(g.acc.empty, 'absorbed whole');
    assert.is(acc.take(), await oneByOne(files, filter, plan), json);
  }
  // A filter the zones do not prove: nothing answered, nothing folded.
  const port = ScanFilter.compile(schema, '[{"filters":[{"field":"port","op":"eq","value":"37"}]}]');
  const g = await AggregateAccumulator.fromSummaries(files, port, plan);
  assert.equal([...g.records], [-1, -1, -1, -1]);
  assert.ok(g.acc.empty);
});

t('a damaged footer, a missing file and a batch past max_groups are left to be read', async () => {
  const damaged = path.join(dir, 'damaged.hdseg');
  const bytes = readFileSync(files[0] as string);
  bytes[bytes.length - 40] ^= 0x5a;
  writeFileSync(damaged, bytes);
  const all = ScanFilter.compile(schema, '[]');
  const plan = AggregatePlan.compile(schema, JSON.stringify({ version: 1, measures: [{ fn: 'count' }] }));
  const g = await AggregateAccumulator.fromSummaries([damaged, path.join(dir, 'missing.hdseg'), files[1] as string], all, plan);
  assert.equal([...g.records], [-1, -1, 37]);
  // Its own open says why.
  await SegmentScanner.open(damaged, all).then(
    () => assert.unreachable('a damaged footer opens'),
    (e: unknown) => assert.match(String((e as Error).message), /checksum|corrupt|CRC/i),
  );
  // Three codes in the first batch: past max_groups 2, left out; the others fit.
  const two = AggregatePlan.compile(schema, JSON.stringify({ version: 1, group_by: [{ field: 'proto' }], measures: [{ fn: 'count' }], max_groups: 2 }));
  const small = await write(dir, 9, records(5000, 2));
  const g2 = await AggregateAccumulator.fromSummaries([files[0] as string, small], all, two);
  assert.equal([...g2.records], [-1, 2]);
});

/** A copy of `file` with one record byte of its first block changed (its CRC no longer holds). */
function damagedBlock(file: string, to: string): string {
  const bytes = readFileSync(file);
  // The first block follows the header; the header of these segments is well under 512 bytes.
  const at = bytes.indexOf(records(1000, 1).subarray(0, 8));
  assert.ok(at > 0, 'first record found');
  bytes[at + 9] ^= 0x5a;
  writeFileSync(to, bytes);
  return to;
}

t('with a scan budget, small batches are scanned in the group exactly as their own scans, masks included', async () => {
  const mask = Buffer.alloc(R, 0xff).fill(0, 12, 16);
  const plans = [
    AggregatePlan.compile(schema, JSON.stringify({ version: 1, group_by: [{ field: 'proto' }], measures: [{ fn: 'count' }, { fn: 'sum', field: 'amount' }] })),
    // amount hidden: its sums read zeros, on both paths.
    AggregatePlan.compile(schema, JSON.stringify({ version: 1, group_by: [{ field: 'proto' }], measures: [{ fn: 'sum', field: 'amount' }, { fn: 'max', field: 'port' }] }), mask),
  ];
  const bad = damagedBlock(files[0] as string, path.join(dir, 'badblock.hdseg'));
  let badFails = 0;
  const filters = ['[]', '[{"filters":[{"field":"port","op":"eq","value":"37"}]}]', '[{"filters":[{"field":"port","op":"gt","value":"65535"}]}]', '[{"filters":[{"field":"port","op":"le","value":"65535"}]}]'];
  for (const json of filters) {
    const filter = ScanFilter.compile(schema, json);
    for (const plan of plans) {
      const g = await AggregateAccumulator.fromSummaries([...files, bad], filter, plan, { batchBytes: 200 * R, groupBytes: 1 << 20 });
      // Batch 4 (250 records) is larger than a batch the group scans; the damaged one is read on its own (it fails there).
      for (let i = 0; i < files.length; i++) {
        const s = await SegmentScanner.open(files[i] as string, filter);
        const fromSummary = s.setAggregateFold(plan);
        let matched = fromSummary ? s.records : 0;
        let scanned = 0;
        let skipped = fromSummary ? s.blocks : 0;
        if (!fromSummary) {
          for (;;) {
            const st = await s.next(1);
            matched += st.matched;
            scanned += st.scanned;
            skipped += st.blocksSkipped;
            if (st.done) break;
          }
        }
        s.close();
        // Folded: from its summary, small, or ruled out whole by the batch's zones (nothing to read).
        const ruledOut = scanned === 0 && s.blocks > 0 && skipped === s.blocks;
        const want = fromSummary || ruledOut || (sizes[i] as number) <= 200 ? [s.records, s.blocks, matched, scanned, skipped] : [-1, -1, -1, -1, -1];
        assert.equal([g.records[i], g.blocks[i], g.matched[i], g.scanned[i], g.skipped[i]], want, `${json} batch ${i}`);
      }
      const last = files.length;
      const badOwn = await SegmentScanner.open(bad, filter).then(async (s) => {
        try {
          if (s.setAggregateFold(plan)) return 'summary';
          for (let st = await s.next(4); !st.done; st = await s.next(4));
          return 'read';
        } catch {
          return 'fails';
        } finally {
          s.close();
        }
      });
      // Folded only where its own read does not fail either (a summary, or zones ruling the damaged block out).
      assert.is(g.records[last] === -1, badOwn === 'fails', `${json}: damaged block ${badOwn}`);
      if (badOwn === 'fails') badFails++;
      const acc = AggregateAccumulator.create(plan);
      assert.ok(acc.absorb(g.acc));
      const folded = [...files, bad].filter((_, i) => (g.records[i] as number) >= 0);
      assert.is(acc.take(), await oneByOne(folded, filter, plan), json);
    }
  }
  assert.ok(badFails >= 2, 'the damaged block was read and refused');
  // The group's budget: the first batch scanned always fits, the next past it is not tried.
  const port = ScanFilter.compile(schema, '[{"filters":[{"field":"port","op":"eq","value":"37"}]}]');
  const g = await AggregateAccumulator.fromSummaries(files, port, plans[0] as AggregatePlan, { batchBytes: 1 << 20, groupBytes: 120 * R });
  assert.equal([...g.records], [100, -2, 0, -2]);
  await AggregateAccumulator.fromSummaries(files, port, plans[0] as AggregatePlan, { batchBytes: -1, groupBytes: 0 }).then(
    () => assert.unreachable('a negative budget is refused'),
    (e: unknown) => assert.instance(e, RangeError),
  );
});

t('absorb refuses past max_groups, another plan and itself', async () => {
  const all = ScanFilter.compile(schema, '[]');
  const two = AggregatePlan.compile(schema, JSON.stringify({ version: 1, group_by: [{ field: 'proto' }], measures: [{ fn: 'count' }], max_groups: 2 }));
  const tcpOnly = await write(dir, 10, records(6000, 1));
  const udpOnly = await write(dir, 11, records(6001, 2).subarray(R));
  const a = await AggregateAccumulator.fromSummaries([tcpOnly], all, two);
  const b = await AggregateAccumulator.fromSummaries([udpOnly], all, two);
  const c = await AggregateAccumulator.fromSummaries([await write(dir, 12, records(6002, 1).fill(1, 8, 9))], all, two);
  assert.ok(a.acc.absorb(b.acc));
  assert.is(a.acc.groups, 2);
  assert.not.ok(a.acc.absorb(c.acc), 'a third group does not fit');
  assert.is(c.acc.groups, 1, 'left unchanged');
  assert.throws(() => a.acc.absorb(a.acc), code('ERR_SCAN_HANDLE'));
  const other = AggregateAccumulator.create(AggregatePlan.compile(schema, JSON.stringify({ version: 1, measures: [{ fn: 'count' }] })));
  assert.throws(() => other.absorb(c.acc), code('ERR_SCAN_PLAN'));
});

t.run();
