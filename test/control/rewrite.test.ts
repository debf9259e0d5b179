import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CompiledPolicy, applyFieldMask, PolicyError } from '../../engine-rs/policy';
import { evaluateFilter, ScanFilter } from '../../engine-rs/scan';
import { Schema } from '../../engine-rs/schema';
import { HttpError } from '../../control/http/errors';
import { rewriteQuery } from '../../control/proxy/rewrite';
import { computeVerdict, type BatchFilter } from '../../control/proxy/verdict';
import type { SubQuery } from '../../query/filter';
import { FLOWS44 } from './fixtures';

const schema = Schema.parse(FLOWS44);

const POLICY = `package hd.authz
import rego.v1

default allow := true
allow := false if input.role == "banned"

hidden_fields contains f if { input.role != "admin"; some f in ["src_ip", "secret", "not_in_schema"] }

constraints contains {"field": "tenant", "value": "7"} if input.role == "analyst"
constraints contains {"field": "dst_ip", "value": "10.1.0.0", "mask": "ffff0000"} if input.role == "analyst"
`;
const policy = CompiledPolicy.compile(POLICY);

/** Records with random field values, seeded. */
function records(n: number, seed: number, hiddenSeed = seed): Buffer {
  const b = Buffer.alloc(n * 44);
  let x = seed;
  let h = hiddenSeed;
  const next = (): number => (x = (x * 1103515245 + 12345) >>> 0);
  const nextH = (): number => (h = (h * 1664525 + 1013904223) >>> 0);
  for (let i = 0; i < n; i++) {
    const o = i * 44;
    b.writeBigUInt64LE(BigInt(1_700_000_000 + i), o);
    b.writeUInt32LE(nextH(), o + 8); // src_ip: hidden
    b.writeUInt32LE(((10 << 24) | ((next() % 3) << 16) | (next() & 0xffff)) >>> 0, o + 12);
    b.writeUInt32LE(next() % 10, o + 16);
    b.writeBigUInt64LE(BigInt(next() % 5000), o + 20);
    b.write(`s${nextH() % 97}`.padEnd(4, 'x'), o + 28); // secret: hidden
  }
  return b;
}

/** What an identity receives: the records the rewritten query matches, with the mask applied. */
function receive(role: string, subQueries: SubQuery[], data: Buffer): Buffer {
  const d = policy.evaluate({ role, email: `${role}@x` });
  const rw = rewriteQuery(schema, subQueries, d);
  const hits = rw.subQueries.length === 0 ? Buffer.from(data) : evaluateFilter(ScanFilter.compile(schema, JSON.stringify(rw.subQueries)), data);
  if (rw.fieldMask) applyFieldMask(hits, Buffer.from(rw.fieldMask, 'hex'));
  return hits;
}

const rw = suite('query rewrite by policy');
rw('a hidden field is 0x00 in the field mask; a branch filtering on it becomes unmatchable; other branches keep their filters', () => {
  const d = policy.evaluate({ role: 'guest', email: 'g@x' });
  const r = rewriteQuery(schema, [{ filters: [{ field: 'src_ip', op: 'eq', value: '167772161' }] }, { filters: [{ field: 'bytes', op: 'gt', value: '10' }] }], d);
  assert.equal({ ...r.summary, hidden_fields: [...r.summary.hidden_fields].sort() }, { allow: true, hidden_fields: ['secret', 'src_ip'], constraints: 0, unmatchable_branches: 1 });
  const mask = Buffer.from(r.fieldMask as string, 'hex');
  assert.is(mask.length, 44);
  assert.ok(mask.subarray(8, 12).equals(Buffer.alloc(4)));
  assert.ok(mask.subarray(28, 44).equals(Buffer.alloc(16)));
  assert.ok(mask.subarray(0, 8).equals(Buffer.alloc(8, 0xff)));
  assert.equal(r.subQueries[0], { filters: [{ field: 'src_ip', op: 'masked_eq', value: '00000000', mask: 'ffffffff' }, { field: 'src_ip', op: 'masked_eq', value: 'ffffffff', mask: 'ffffffff' }] });
  assert.equal(r.subQueries[1], { filters: [{ field: 'bytes', op: 'gt', value: '10' }] });
});
rw('an enforced constraint is a masked_eq with 0xff bytes on every branch, and a branch of its own when the query has none', () => {
  const d = policy.evaluate({ role: 'analyst', email: 'a@x' });
  const r = rewriteQuery(schema, [{ filters: [{ field: 'bytes', op: 'lt', value: '100' }] }, { filters: [{ field: 'tenant', op: 'eq', value: '3' }] }], d);
  const tenant = { field: 'tenant', op: 'masked_eq', value: '07000000', mask: 'ffffffff' };
  // dst_ip 10.1.0.0 is stored little-endian as 00 00 01 0a: under mask ffff0000 only 00 00 counts.
  const subnet = { field: 'dst_ip', op: 'masked_eq', value: '00000000', mask: 'ffff0000' };
  const byField = (sq: SubQuery, f: string) => sq.filters.filter((x) => x.field === f);
  assert.equal(byField(r.subQueries[0], 'bytes'), [{ field: 'bytes', op: 'lt', value: '100' }]);
  assert.equal(byField(r.subQueries[0], 'tenant'), [tenant]);
  assert.equal(byField(r.subQueries[0], 'dst_ip'), [subnet]);
  assert.equal(byField(r.subQueries[1], 'tenant'), [{ field: 'tenant', op: 'eq', value: '3' }, tenant]);
  assert.equal(byField(r.subQueries[1], 'dst_ip'), [subnet]);
  assert.is(r.summary.constraints, 2);
  const none = rewriteQuery(schema, [], d);
  assert.is(none.subQueries.length, 1);
  assert.equal(byField(none.subQueries[0], 'tenant'), [tenant]);
  assert.is(none.subQueries[0].filters.length, 2);
});
rw('allow false: every field hidden, every branch unmatchable', () => {
  const r = rewriteQuery(schema, [], policy.evaluate({ role: 'banned', email: 'b@x' }));
  assert.is(r.summary.allow, false);
  assert.ok(Buffer.from(r.fieldMask as string, 'hex').equals(Buffer.alloc(44)));
  assert.is(r.subQueries.length, 1);
  const data = records(200, 5);
  assert.is(evaluateFilter(ScanFilter.compile(schema, JSON.stringify(r.subQueries)), data).length, 0);
});
rw('admin sees everything: no mask, the query unchanged', () => {
  const q: SubQuery[] = [{ filters: [{ field: 'src_ip', op: 'eq', value: '1' }] }];
  const r = rewriteQuery(schema, q, policy.evaluate({ role: 'admin', email: 'root@x' }));
  assert.is(r.fieldMask, undefined);
  assert.equal(r.subQueries, q);
});
rw('a constraint the schema cannot hold fails closed (policy_error)', () => {
  const p = CompiledPolicy.compile('package hd.authz\nconstraints := [{"field": "nope", "value": "1"}]\n');
  assert.throws(() => rewriteQuery(schema, [], p.evaluate({})), (e: Error) => e instanceof HttpError && e.code === 'policy_error' && /'nope'/.test(e.message));
  const q = CompiledPolicy.compile('package hd.authz\nconstraints := [{"field": "tenant", "value": "x"}]\n');
  assert.throws(() => rewriteQuery(schema, [], q.evaluate({})), (e: Error) => e instanceof HttpError && /does not encode/.test(e.message));
  const shape = CompiledPolicy.compile('package hd.authz\nhidden_fields := 3\n');
  assert.throws(() => shape.evaluate({}), (e: Error) => e instanceof PolicyError && e.code === 'ERR_POLICY_RESULT');
});

const leak = suite('a masked field never leaks, whatever the query asks');
leak('the records a masked identity receives carry zeros in hidden fields and do not depend on hidden values', () => {
  const data = records(2000, 11, 99);
  // The same records with every hidden value different.
  const other = records(2000, 11, 12345);
  for (let i = 0; i < 2000; i++) assert.ok(data.subarray(i * 44 + 12, i * 44 + 28).equals(other.subarray(i * 44 + 12, i * 44 + 28)));
  const probe = data.readUInt32LE(8);
  const queries: SubQuery[][] = [
    [],
    [{ filters: [{ field: 'src_ip', op: 'eq', value: String(probe) }] }],
    [{ filters: [{ field: 'src_ip', op: 'lt', value: '2147483648' }, { field: 'bytes', op: 'gt', value: '100' }] }],
    [{ filters: [{ field: 'secret', op: 'prefix', value: 's1' }] }, { filters: [{ field: 'tenant', op: 'eq', value: '3' }] }],
    [{ filters: [{ field: 'src_ip', op: 'masked_eq', value: '00000080', mask: '00000080' }] }],
    [{ filters: [{ field: 'secret', op: 'is_not_null' }] }, { filters: [{ field: 'src_ip', op: 'in', values: [String(probe), '5'] }] }],
    [{ filters: [{ field: 'bytes', op: 'between', values: ['10', '4000'] }] }],
  ];
  for (const role of ['guest', 'analyst']) {
    for (const q of queries) {
      const got = receive(role, q, data);
      const gotOther = receive(role, q, other);
      for (let o = 0; o < got.length; o += 44) {
        assert.ok(got.subarray(o + 8, o + 12).equals(Buffer.alloc(4)), `src_ip leaked to ${role} for ${JSON.stringify(q)}`);
        assert.ok(got.subarray(o + 28, o + 44).equals(Buffer.alloc(16)), `secret leaked to ${role} for ${JSON.stringify(q)}`);
      }
      assert.ok(got.equals(gotOther), `what ${role} receives depends on hidden values for ${JSON.stringify(q)}`);
      if (role === 'analyst') for (let o = 0; o < got.length; o += 44) assert.is(got.readUInt32LE(o + 16), 7);
    }
  }
  // Admin, unrestricted, sees the hidden values (the test data does hold some).
  assert.ok(receive('admin', [], data).equals(data));
});

const verdict = suite('filter verdict (would_exclude_batches)');
verdict('batches whose min/max cannot match every branch are excluded; unknown batches never are', () => {
  const filters = new Map<string, BatchFilter>([
    ['a', { bytes: { min: '0', max: '50' }, tenant: { min: '0', max: '9' } }],
    ['b', { bytes: { min: '60', max: '90' } }],
    ['c', { bytes: { min: '200', max: '100' } }], // an empty zone: no records
  ]);
  const q: SubQuery[] = [{ filters: [{ field: 'bytes', op: 'ge', value: '55' }] }];
  assert.equal(computeVerdict(schema, q, ['a', 'b', 'c', 'd'], filters), { would_exclude_batches: ['a', 'c'], bloomrf_mode: 'partial' });
  const two: SubQuery[] = [...q, { filters: [{ field: 'tenant', op: 'eq', value: '3' }] }];
  // 'c' has no tenant range, so the tenant branch might match there: only proof excludes.
  assert.equal(computeVerdict(schema, two, ['a', 'b', 'c'], filters), { would_exclude_batches: [], bloomrf_mode: 'minmax' });
  assert.equal(computeVerdict(schema, [], ['a'], filters), { would_exclude_batches: [], bloomrf_mode: 'minmax' });
  assert.equal(computeVerdict(schema, q, ['x'], new Map()), { would_exclude_batches: [], bloomrf_mode: 'off' });
  const ops: [SubQuery, boolean][] = [
    [{ filters: [{ field: 'bytes', op: 'eq', value: '70' }] }, false],
    [{ filters: [{ field: 'bytes', op: 'eq', value: '91' }] }, true],
    [{ filters: [{ field: 'bytes', op: 'lt', value: '60' }] }, true],
    [{ filters: [{ field: 'bytes', op: 'le', value: '60' }] }, false],
    [{ filters: [{ field: 'bytes', op: 'gt', value: '90' }] }, true],
    [{ filters: [{ field: 'bytes', op: 'between', values: ['0', '59'] }] }, true],
    [{ filters: [{ field: 'bytes', op: 'in', values: ['1', '95'] }] }, true],
    [{ filters: [{ field: 'bytes', op: 'in', values: ['1', '65'] }] }, false],
    [{ filters: [{ field: 'bytes', op: 'ne', value: '1' }] }, false],
  ];
  for (const [sq, excluded] of ops) assert.is(computeVerdict(schema, [sq], ['b'], filters).would_exclude_batches.length === 1, excluded, JSON.stringify(sq));
});

rw.run();
leak.run();
verdict.run();
