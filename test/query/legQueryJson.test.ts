/**
 * LegQueryJson: each leg's JSON is exactly what serializeHdQuery writes for the query narrowed to the
 * leg's batches (with the leg's trace context), and a leg over the size limit is refused the same way.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_QUERY_JSON_BYTES, parseHdQuery, QueryError, serializeHdQuery, type HdQuery } from '../../query/hdQuery';
import { LegQueryJson } from '../../query/legQueryJson';

const B = (n: number): string => n.toString(16).padStart(128, '0');
const base = {
  query_id: 7,
  dataset: 'flöws "x"',
  batch_ids: [B(1), B(2), B(3), B(4)],
  sub_queries: [{ filters: [{ field: 'ts', op: 'ge', value: '100' }, { field: 'proto', op: 'in', values: ['tcp', 'udp'] }] }],
  targets: [{ host: '127.0.0.1', port: 6987, grpc_port: 6990 }],
  verify_hash: true,
  query_qos: 3,
  return_address: { host: '::1', port: 6989, tls: true },
  token: '0102030405060708090a0b0c0d0e0f10',
};
const variants: Record<string, Record<string, unknown>> = {
  plain: base,
  aggregate: { ...base, aggregate: { version: 1, group_by: [{ field: 'proto' }], measures: [{ fn: 'count' }, { fn: 'sum', field: 'bytes' }] }, merge_batches: true },
  columns: { ...base, result_format: 'columns', columns: ['ts', 'proto'], limit: 10, field_mask: 'ff00ff' },
  top: { ...base, top: { field: 'bytes', k: 5, desc: true }, merge_batches: false },
  traced: { ...base, trace_context: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'a=b' } },
  empty: { ...base, sub_queries: [], targets: [], verify_hash: false, return_address: { host: 'h', port: 1 } },
};

const t = suite('LegQueryJson');

t('a leg is the query narrowed to its batches, byte for byte as serializeHdQuery writes it', () => {
  for (const [name, raw] of Object.entries(variants)) {
    const q = parseHdQuery(JSON.stringify(raw));
    const legs = new LegQueryJson(q);
    for (const ids of [[B(3)], [B(1), B(4)], [], q.batchIds]) {
      // The leg's own trace context replaces the query's (the SCC's leg span); none: the query's is left out.
      const plain: HdQuery = { ...q, batchIds: ids, traceContext: undefined };
      assert.is(legs.json(ids), serializeHdQuery(plain), `${name}, ${ids.length} batch(es), no trace context`);
      for (const tc of [{ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }, { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00', tracestate: 'k=v,x=y' }]) {
        assert.is(legs.json(ids, tc), serializeHdQuery({ ...plain, traceContext: tc }), `${name}, ${ids.length} batch(es), traced`);
      }
    }
    // What the node parses is the narrowed query, its own trace context left out.
    const parsed = parseHdQuery(legs.json([B(2)]));
    assert.equal(parsed.batchIds, [B(2)], name);
    assert.is(parsed.traceContext, undefined, name);
  }
});

t('a leg over the size limit is refused with the QueryError serializeHdQuery gives', () => {
  const q = parseHdQuery(JSON.stringify(base));
  const ids = Array.from({ length: 100 }, (_, i) => B(i + 1));
  const legs = new LegQueryJson(q);
  let ours: unknown;
  let theirs: unknown;
  try {
    legs.json(ids, undefined, 4000);
  } catch (err) {
    ours = err;
  }
  try {
    serializeHdQuery({ ...q, batchIds: ids }, { maxBytes: 4000 });
  } catch (err) {
    theirs = err;
  }
  assert.instance(ours, QueryError);
  assert.is((ours as Error).message, (theirs as Error).message);
  assert.ok(legs.json(ids).length < MAX_QUERY_JSON_BYTES, 'the default limit is the node frame limit');
});

t.run();
