/**
 * HDQuery `time_window` (ours, version 1; docs/query.md "Time windows"): parsed and written back,
 * refused with a QueryError naming the key when malformed or beside named `batch_ids`; and the
 * SDK's choice (sdk/queryInput.ts) between enumerating a short window and sending a long one as
 * `time_window` in direct SCC mode.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Schema } from '../../engine-rs/schema';
import { parseHdQuery, QueryError, serializeHdQuery, TIME_WINDOW_VERSION } from '../../query/hdQuery';
import { buildQuery, MAX_ENUMERATED_INTERVALS } from '../../sdk/queryInput';
import { parseRefusal } from './hdQueryRefusal';

const base = {
  query_id: 7,
  dataset: 'flows',
  return_address: { host: '127.0.0.1', port: 6989 },
  token: '0123456789abcdef0123456789abcdef',
};
const W = { version: 1, start: 1, end: 1_700_000_000, interval: 60 };

/** The QueryError `base` with `extra`'s keys is refused with. */
function refusal(extra: Record<string, unknown>): QueryError {
  return parseRefusal({ ...base, ...extra });
}

test('time_window parses and is written back as it came', () => {
  const q = parseHdQuery(JSON.stringify({ ...base, time_window: W }));
  assert.equal(q.timeWindow, { start: 1, end: 1_700_000_000, interval: 60 });
  assert.equal(q.batchIds, []);
  assert.equal((JSON.parse(serializeHdQuery(q)) as { time_window: unknown }).time_window, W);
  assert.is(TIME_WINDOW_VERSION, 1);
  // An empty batch_ids beside it is no conflict (serialisers always write the key).
  assert.ok(parseHdQuery(JSON.stringify({ ...base, batch_ids: [], time_window: W })).timeWindow);
  assert.is(parseHdQuery(JSON.stringify(base)).timeWindow, undefined);
});

test('a malformed time_window, or one beside named batch_ids, is refused naming the key', () => {
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [{ time_window: [1, 2] }, 'time_window', /expected \{version: 1/],
    [{ time_window: { ...W, version: 2 } }, 'time_window.version', /expected 1/],
    [{ time_window: { start: 1, end: 2, interval: 60 } }, 'time_window.version', /expected 1/],
    [{ time_window: { ...W, step: 1 } }, 'time_window.step', /unknown/],
    [{ time_window: { ...W, start: 1.5 } }, 'time_window.start', /Unix seconds/],
    [{ time_window: { ...W, end: 0 } }, 'time_window.end', /before/],
    [{ time_window: { ...W, interval: 0 } }, 'time_window.interval', /1\.\.4294967295/],
    [{ time_window: W, batch_ids: ['ab'.repeat(64)] }, 'time_window', /not both/],
  ];
  for (const [extra, key, message] of cases) {
    const e = refusal(extra);
    assert.is(e.path, key, JSON.stringify(extra));
    assert.match(e.message, message);
  }
});

test('direct mode: a window up to MAX_ENUMERATED_INTERVALS is enumerated, a longer one goes as time_window', () => {
  const schema = Schema.parse(readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8'));
  const iv = schema.timeIndexInterval;
  const ctx = { schema, returnAddress: { host: '127.0.0.1', port: 1 }, targets: [] };
  // floor(start) .. ceil(end): a window of n − 1 intervals' width on the grid names n ids.
  const short = buildQuery({ start_time: 0, end_time: (MAX_ENUMERATED_INTERVALS - 1) * iv }, ctx);
  assert.is(short.batchIds.length, MAX_ENUMERATED_INTERVALS);
  assert.is(short.timeWindow, undefined);
  const long = buildQuery({ start_time: 0, end_time: MAX_ENUMERATED_INTERVALS * iv }, ctx);
  assert.equal(long.batchIds, []);
  assert.equal(long.timeWindow, { start: 0, end: MAX_ENUMERATED_INTERVALS * iv, interval: iv });
  const open = buildQuery({ start_time: 1, end_time: 1_800_000_000 }, ctx);
  assert.equal(open.timeWindow, { start: 1, end: 1_800_000_000, interval: iv });
  // Proxy mode sends the window to the Proxy: neither ids nor time_window.
  const proxied = buildQuery({ start_time: 1, end_time: 1_800_000_000 }, { ...ctx, upstreamNamesBatches: true });
  assert.equal(proxied.batchIds, []);
  assert.is(proxied.timeWindow, undefined);
});

test.run();
