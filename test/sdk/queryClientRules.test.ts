/**
 * PlatformQueryClient rules that need no cluster: query building, QoS clamping, accounting, verdicts,
 * the listener port.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseHdQuery } from '../../query/hdQuery';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { QueryAccounting, verdictFromJson } from '../../sdk/queryAccounting';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const B = (n: number): string => n.toString(16).padStart(128, '0');
const quiet = { listenPort: 0, returnHost: '127.0.0.1', log: () => undefined };

const t = suite('PlatformQueryClient without a cluster');

t('generateHdQuery fills dataset, token, return address and targets; clamps QoS; names batches of a window', async () => {
  await using q = new PlatformQueryClient('', '127.0.0.1', '', quiet);
  q.loadDatasetSchema(schemaJson);
  q.setSccTargets([{ host: '127.0.0.9', port: 6987, grpcPort: 7000 }]);
  const bound = await q.ready();
  const json = await q.generateHdQuery({ start_time: 1_700_000_000, end_time: 1_700_000_100, query_qos: 999, sub_queries: [{ filters: [{ field: 'dst_port', op: 'eq', value: '443' }] }] });
  const parsed = parseHdQuery(json);
  assert.is(parsed.dataset, 'flows');
  assert.is(parsed.queryQos, 255, 'clamped to 255');
  assert.equal(parsed.returnAddress, { host: '127.0.0.1', port: bound.port });
  assert.equal(parsed.targets, [{ host: '127.0.0.9', port: 6987, grpcPort: 7000 }]);
  assert.is(parsed.token.length, 16);
  // [1_699_999_980, 1_700_000_160) in 60 s intervals: the reference's inclusive loop to the rounded end.
  assert.is(parsed.batchIds.length, q.generateBatchIdsTime(1_700_000_000, 1_700_000_100).length);
  assert.is(parseHdQuery(await q.generateHdQuery({ batch_ids: [], query_qos: 0 })).queryQos, 1);
  assert.is(parseHdQuery(await q.generateHdQuery({ batch_ids: [], query_qos: 'high' })).queryQos, 1, 'invalid QoS reads as 1');
  const a = parseHdQuery(await q.generateHdQuery({ batch_ids: [] }));
  const b = parseHdQuery(await q.generateHdQuery({ batch_ids: [] }));
  assert.not.equal(Buffer.from(a.token).toString('hex'), Buffer.from(b.token).toString('hex'), 'a fresh token per query');
});

t('bad input is refused with the key named', async () => {
  await using q = new PlatformQueryClient('', '', '', quiet);
  const err = async (input: string | Record<string, unknown>): Promise<string> => q.generateHdQuery(input).then(() => 'no error', (e: Error) => e.message);
  assert.match(await err({}), /no dataset schema is loaded/);
  q.loadDatasetSchema(schemaJson);
  assert.match(await err({}), /no SCC targets are set/);
  q.setSccTargets(['127.0.0.1:6987']);
  assert.match(await err('SELECT 1'), /neither HDQuery JSON nor SQL the client can run without a Proxy/);
  assert.match(await err({ token: 'ab' }), /token: is set by the client/);
  assert.match(await err({ return_address: { host: 'x', port: 1 } }), /return_address: is set by the client/);
  assert.match(await err({ start_time: 10, end_time: 20, batch_ids: [] }), /batch_ids or a start_time\/end_time window, not both/);
  assert.match(await err({ start_time: 20, end_time: 10 }), /end_time: is before start_time/);
  assert.match(await err({ start_time: 1.5, end_time: 10 }), /Unix seconds/);
  assert.match(await err({ batch_ids: [B(1)], sub_queries: [{ filters: [] }] }), /sub_queries\[0\]/);
  const many = Array.from({ length: 17 }, () => ({ filters: [{ field: 'dst_port', op: 'eq', value: '1' }] }));
  assert.match(await err({ batch_ids: [B(1)], sub_queries: many }), /too many branches: 17 sub-queries, the limit is 16/);
  assert.match(await err({ batch_ids: [B(1)], colour: 'red' }), /colour/);
  assert.throws(() => q.prepareQuery('x'), /query id must be a uint32/);
  assert.throws(() => q.setQueryTimeoutMs(-1), /query timeout/);
  assert.throws(() => q.addControlHeader('a b', 'c'), /not an HTTP header name/);
});

t('a filter value the schema cannot encode is not pushed and the log says so; an emptied sub-query means no pushdown', async () => {
  const lines: string[] = [];
  await using q = new PlatformQueryClient('', '127.0.0.1', '', { ...quiet, log: (l) => lines.push(l) });
  q.loadDatasetSchema(schemaJson);
  q.setSccTargets(['127.0.0.1:6987']);
  const port = { field: 'dst_port', op: 'eq', value: '443' };
  // 70000 does not fit dst_port (uint16): that one filter is left out, the rest of the sub-query stays.
  let parsed = parseHdQuery(await q.generateHdQuery({ batch_ids: [B(1)], sub_queries: [{ filters: [port, { field: 'src_port', op: 'eq', value: '70000' }] }] }));
  assert.equal(parsed.subQueries.map((sq) => sq.filters.map((f) => f.field)), [['dst_port']]);
  assert.is(lines.length, 1);
  assert.match(lines[0] as string, /sub_queries\[0\]\.filters\[1\] \(src_port eq 70000\) is not pushed down: /);
  // A sub-query left with nothing: it matches everything, so the whole query reads every record.
  lines.length = 0;
  parsed = parseHdQuery(await q.generateHdQuery({ batch_ids: [B(1)], sub_queries: [{ filters: [port] }, { filters: [{ field: 'proto', op: 'eq', value: 'no-such-label' }] }] }));
  assert.equal(parsed.subQueries, []);
  assert.match(lines.join('\n'), /sub_queries\[1\]\.filters\[0\] \(proto eq no-such-label\) is not pushed down/);
  assert.match(lines.join('\n'), /sub_queries\[1\] has no filter the Storage Nodes can apply, .* without pushdown/);
  // Filters that all encode are sent as given, with nothing logged.
  lines.length = 0;
  parsed = parseHdQuery(await q.generateHdQuery({ batch_ids: [B(1)], sub_queries: [{ filters: [port] }] }));
  assert.is(parsed.subQueries.length, 1);
  assert.equal(lines, []);
});

t('prepareQuery fixes the query id; health and metrics', async () => {
  await using q = new PlatformQueryClient('', '', '', quiet);
  q.loadDatasetSchema(schemaJson);
  q.setSccTargets(['127.0.0.1:6987']);
  q.prepareQuery('4242');
  assert.is(parseHdQuery(await q.generateHdQuery({ batch_ids: [] })).queryId, 4242);
  assert.is(JSON.parse(await q.getHealthStatus()).status, 'ok');
  assert.match(q.getMetrics(), /^queries_executed 0$/m);
  await q.stop();
  assert.is(JSON.parse(await q.getHealthStatus()).status, 'stopped');
});

t('a taken listener port rejects ready() and every query with the address', async () => {
  const blocker = net.createServer();
  const port = await new Promise<number>((r) => blocker.listen(0, '127.0.0.1', () => r((blocker.address() as net.AddressInfo).port)));
  const q = new PlatformQueryClient('', '127.0.0.1', '', { ...quiet, listenPort: port });
  q.loadDatasetSchema(schemaJson);
  q.setSccTargets(['127.0.0.1:6987']);
  const why = (p: Promise<unknown>): Promise<string> => p.then(() => 'resolved', (e: Error) => e.message);
  assert.match(await why(q.ready()), /EADDRINUSE|in use/);
  assert.match(await why(q.executeDataset({ batch_ids: [] })), /EADDRINUSE|in use/);
  await q.stop();
  await new Promise((r) => blocker.close(r));
});

t('registerWithDms without a CA bundle: failure that says what to set, no throw', async () => {
  const saved = process.env.PLATFORM_CA_CERT_PEM;
  delete process.env.PLATFORM_CA_CERT_PEM;
  try {
    await using q = new PlatformQueryClient('', '', '', quiet);
    const r = await q.registerWithDms('https://127.0.0.1:1', 'client-1');
    assert.is(r.success, false);
    assert.match(r.error_message, /PLATFORM_CA_CERT_PEM is not set/);
  } finally {
    if (saved !== undefined) process.env.PLATFORM_CA_CERT_PEM = saved;
  }
});

t('accounting: found, missing, one error per batch, verdict mismatches', () => {
  const a = new QueryAccounting();
  a.expect([B(1), B(2), B(3)]);
  assert.not.ok(a.complete);
  a.batchArrived(B(1), 5);
  a.batchFailed({ batchId: B(2), code: 12, message: 'hash mismatch' });
  a.batchFailed({ batchId: B(2), code: 13, message: 'again' });
  assert.is(a.batchErrors().length, 1, 'one entry per failed batch, not per notice');
  assert.is(a.batchErrors()[0]?.code, 12);
  assert.not.ok(a.complete);
  a.batchArrived(B(3), 0);
  assert.ok(a.complete);
  assert.equal(a.foundBatchIds(), [B(1), B(3)]);
  assert.equal(a.missingBatchIds(), [B(2)]);
  a.setVerdict({ wouldExcludeBatches: [B(1).toUpperCase(), B(3)], bloomrfMode: 'exact' });
  assert.equal(a.verdictMismatches(), [{ batchId: B(1), records: 5 }], 'an excluded batch that delivered records; an empty one is fine');
  a.batchArrived(B(2), 1);
  assert.is(a.batchErrors().length, 0, 'a re-routed copy that arrived withdraws the error');
  a.reset();
  assert.equal(a.foundBatchIds(), []);
  assert.is(a.filterVerdict, undefined);
});

t('accounting of a long window: completes exactly when the last of 50 000 batches settles; batches settled before the expectation count', () => {
  // 8 days of 60 s intervals is 11 520 batch ids; the dispatch limit is 100 000. Completeness is checked
  // after every notice, so it must not rescan the window each time.
  const n = 50_000;
  const a = new QueryAccounting();
  a.batchArrived(B(0), 1); // an early stream can beat set_expected_batches
  a.expect(Array.from({ length: n }, (_, i) => B(i)));
  let completions = 0;
  a.watch(() => void (a.complete && completions++));
  for (let i = 1; i < n; i++) {
    if (i % 3 === 0) a.batchArrived(B(i), 2);
    else a.batchFailed({ batchId: B(i), code: 13, message: `batch ${B(i)} of 'flows' is not held by node 'sn1'` });
    if (i === n - 2) assert.not.ok(a.complete, 'one batch still pending');
  }
  assert.ok(a.complete);
  assert.is(completions, 1, 'complete once, at the last batch');
  assert.is(a.batchErrors().length, 0, 'absent batches are not errors');
  assert.is(a.missingBatchIds().length, n - 1 - Math.floor((n - 1) / 3));
});

t('verdict JSON: the result event or the bare verdict; anything else is refused', () => {
  assert.equal(verdictFromJson(JSON.stringify({ verdict: { would_exclude_batches: [B(7)], bloomrf_mode: 'exact' } })), { wouldExcludeBatches: [B(7)], bloomrfMode: 'exact' });
  assert.equal(verdictFromJson(JSON.stringify({ would_exclude_batches: [] })), { wouldExcludeBatches: [], bloomrfMode: 'none' });
  assert.is(verdictFromJson('{'), undefined);
  assert.is(verdictFromJson('[]'), undefined);
  assert.is(verdictFromJson(JSON.stringify({ would_exclude_batches: ['xyz'] })), undefined);
});

t.run();
