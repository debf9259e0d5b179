/**
 * HASH_THREADS (roles/stages/hashThreadsSetting.ts): the setting's range, and that applying it sizes
 * the process's hashing pool and shows the count in /health's `hashing` part.
 */
import { availableParallelism } from 'node:os';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { hashThreads, setHashThreads } from '../../engine-rs/index';
import { Observability } from '../../lib/observability';
import { applyHashThreads, hashThreadsSetting } from '../../roles/stages/hashThreadsSetting';

const pos = { line: 1, col: 1 };
const parse = (value: unknown) => hashThreadsSetting().parse({ value, pos, substituted: typeof value === 'string' }, { baseDir: '.' });

const s = suite('HASH_THREADS');
const before = hashThreads();
s.after(() => void setHashThreads(before));

s('defaults to 0 and takes whole numbers 0..1024, from ${HASH_THREADS} strings too', () => {
  assert.is(hashThreadsSetting().fallback, 0);
  assert.equal(parse('4'), { ok: true, value: 4 });
  assert.equal(parse(0), { ok: true, value: 0 });
  for (const bad of [-1, 1025, 1.5, 'many']) assert.is(parse(bad).ok, false, String(bad));
});

s('applying it sizes the hashing pool and shows it in /health', async () => {
  const obs = new Observability({ role: 'scc', nodeName: 'scc1', host: '127.0.0.1', port: 0 });
  assert.is(applyHashThreads(3, obs), 3);
  assert.is(hashThreads(), 3);
  assert.equal((await obs.health()).hashing, { threads: 3 });
  assert.is(applyHashThreads(0, obs), availableParallelism());
  assert.is(hashThreads(), availableParallelism());
  assert.equal((await obs.health()).hashing, { threads: availableParallelism() });
});

s.run();
