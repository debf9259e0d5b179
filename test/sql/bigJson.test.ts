/**
 * sql/bigJson.ts: the fast paths (the engine's JSON.parse when no integer can be unsafe, the
 * engine's JSON.stringify with bigints marked) give exactly what the exact parser and writer give:
 * random values with bigints, unsafe and safe integers, doubles, escapes and strings holding the
 * writer's mark or long digit runs; malformed text fails with the offset.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseBigJson, stringifyBigJson, type BigJsonValue } from '../../sql/bigJson';

const test = suite('big JSON');

/** xorshift, seeded: failures reproduce. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
}

/** A random value: every kind parseBigJson gives. */
function randomValue(r: () => number, depth: number): BigJsonValue {
  const k = Math.floor(r() * (depth > 3 ? 7 : 9));
  switch (k) {
    case 0:
      return null;
    case 1:
      return r() < 0.5;
    case 2:
      return Math.floor((r() - 0.5) * 2 ** 40);
    case 3:
      return (r() < 0.5 ? -1n : 1n) * (2n ** 53n + BigInt(Math.floor(r() * 2 ** 50)) * 1000n);
    case 4:
      // A double that is not an integer (an integral double past 2^53 reads back as a bigint, by design).
      return r() < 0.5 ? Math.floor((r() - 0.5) * 10 ** Math.floor(r() * 12)) + 0.25 : (r() + 0.1) * 10 ** -Math.floor(r() * 30);
    case 5:
      return ['', 'a"b\\c', 'é😀\n', '12345678901234567', '~big', `x${Math.floor(r() * 1e6)}`][Math.floor(r() * 6)] as string;
    case 6:
      return 9_007_199_254_740_991;
    case 7:
      return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
    default: {
      const o: { [k: string]: BigJsonValue } = {};
      // Own properties, as JSON.parse makes them (`__proto__` too).
      for (let i = 0; i < Math.floor(r() * 4); i++) Object.defineProperty(o, ['type', 'value', 'query_location', 'a b', '1', '__proto__'][Math.floor(r() * 6)] as string, { value: randomValue(r, depth + 1), enumerable: true, writable: true, configurable: true });
      return o;
    }
  }
}

test('parse and stringify round-trip random values exactly, fast path or not', () => {
  const r = rng(3);
  for (let n = 0; n < 3000; n++) {
    const v = randomValue(r, 0);
    const text = stringifyBigJson(v);
    const back = parseBigJson(text);
    assert.is(stringifyBigJson(back), text);
    assert.equal(back, v);
  }
});

test('integers beyond 2^53 stay exact; a string that holds the mark of the writer is written as it is', () => {
  assert.equal(parseBigJson('{"v":18446744073709551615,"w":-9007199254740993,"x":9007199254740991,"d":1.5e300}'), { v: 18446744073709551615n, w: -9007199254740993n, x: 9007199254740991, d: 1.5e300 });
  assert.is(stringifyBigJson({ a: 2n ** 64n, b: [-(2n ** 70n)], c: 'x' }), `{"a":${2n ** 64n},"b":[-${2n ** 70n}],"c":"x"}`);
  // A string shaped like a marked bigint (whatever the mark is, the writer's output must keep strings as strings).
  for (const s of ['~big~1~big~', '"', '\\u0000']) assert.equal(parseBigJson(stringifyBigJson({ s, n: 2n ** 64n })), { s, n: 2n ** 64n });
  const proto = parseBigJson('{"__proto__":{"x":1}}') as { [k: string]: BigJsonValue };
  assert.equal(Object.keys(proto), ['__proto__']);
  assert.equal(parseBigJson('{"__proto__":{"x":1},"n":12345678901234567890}'), JSON.parse('{"__proto__":{"x":1},"n":0}', (k, v: unknown) => (k === 'n' ? 12345678901234567890n : v)));
});

test('malformed text fails with the offset of the first bad character', () => {
  for (const bad of ['{"a":}', '[1,2', '{"a" 1}', 'tru', '"abc', '{"a":1}x', '12345678901234567890x', '']) {
    assert.throws(() => parseBigJson(bad), (e: Error) => e instanceof SyntaxError && /offset \d+/.test(e.message), bad);
  }
});

test.run();
