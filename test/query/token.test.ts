/** Query tokens and ids drawn from the pooled CSPRNG bytes: each one fresh, tokens owned by their caller. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { isZeroToken, newQueryId, newQueryToken, TOKEN_LEN } from '../../query/token';

const t = suite('query tokens and ids');

t('every token is 16 bytes, never all zero, and differs from every other (past a pool refill too)', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 2000; i++) {
    const tok = newQueryToken();
    assert.is(tok.length, TOKEN_LEN);
    assert.not.ok(isZeroToken(tok));
    const hex = tok.toString('hex');
    assert.not.ok(seen.has(hex), 'no token twice');
    seen.add(hex);
  }
});

t('a token is its own memory: changing it changes no other token, and it holds no more than its 16 bytes', () => {
  const a = newQueryToken();
  const b = newQueryToken();
  const bHex = b.toString('hex');
  a.fill(0);
  assert.is(b.toString('hex'), bHex);
  // A view into a shared pool or slab would expose other tokens' and ids' bytes through `.buffer`.
  assert.is(a.buffer.byteLength, TOKEN_LEN);
  assert.is(b.buffer.byteLength, TOKEN_LEN);
});

t('query ids are uint32 and vary', () => {
  const ids = new Set<number>();
  for (let i = 0; i < 1000; i++) {
    const id = newQueryId();
    assert.ok(Number.isInteger(id) && id >= 0 && id <= 0xffffffff);
    ids.add(id);
  }
  assert.ok(ids.size > 990, 'random ids rarely repeat');
});

t.run();
