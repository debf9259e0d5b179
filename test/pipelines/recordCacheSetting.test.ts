/**
 * RECORD_CACHE_BYTES (roles/stages/recordCacheSetting.ts): the setting's range and units, and that
 * applying it sizes the process's record cache and shows it in /health's `recordCache` part.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_RECORD_CACHE_BYTES, recordCacheStats, setRecordCacheBytes } from '../../engine-rs/index';
import { Observability } from '../../lib/observability';
import { applyRecordCache, recordCacheSetting } from '../../roles/stages/recordCacheSetting';

const pos = { line: 1, col: 1 };
const parse = (value: unknown) => recordCacheSetting().parse({ value, pos, substituted: typeof value === 'string' }, { baseDir: '.' });

const s = suite('RECORD_CACHE_BYTES');
s.after(() => void setRecordCacheBytes(DEFAULT_RECORD_CACHE_BYTES));

s('defaults to 512 MiB and takes byte sizes from 0, from ${RECORD_CACHE_BYTES} strings too', () => {
  assert.is(recordCacheSetting().fallback, 512 * 1024 * 1024);
  assert.equal(parse('64MiB'), { ok: true, value: 64 * 1024 * 1024 });
  assert.equal(parse('0'), { ok: true, value: 0 });
  assert.equal(parse(4096), { ok: true, value: 4096 });
  for (const bad of [-1, 1.5, 'lots', '2 TB']) assert.is(parse(bad).ok, false, String(bad));
});

s('applying it sizes the record cache and shows it in /health', async () => {
  const obs = new Observability({ role: 'storageNode', nodeName: 'sn1', host: '127.0.0.1', port: 0 });
  assert.is(applyRecordCache(1 << 20, obs), 1 << 20);
  assert.is(recordCacheStats().limit, 1 << 20);
  const part = (await obs.health()).recordCache as { limit: number; hits: number; misses: number; bytes: number; pieces: number };
  assert.is(part.limit, 1 << 20);
  for (const k of ['hits', 'misses', 'bytes', 'pieces'] as const) assert.type(part[k], 'number');
  applyRecordCache(0, obs);
  assert.is(((await obs.health()).recordCache as { limit: number }).limit, 0);
});

s.run();
