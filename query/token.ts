/**
 * Query ids and tokens (docs/hdwp.md, "Query result streams: query id + token"): the token is 128
 * bits from the operating system's CSPRNG, never all zero (HDWP refuses an all-zero token), and is
 * compared in constant time wherever a frame or a cancel presents it.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';

/** Bytes in a query token. */
export const TOKEN_LEN = 16;

/** Random bytes drawn from the CSPRNG at once and handed out in order, each byte once: a client drew 20 bytes a query in two calls. */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolAt = 0;

/** The next `n` bytes of the pool (a fresh pool when it runs out); each byte is handed out once. */
function random(n: number): Buffer {
  if (poolAt + n > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolAt = 0;
  }
  const out = pool.subarray(poolAt, poolAt + n);
  poolAt += n;
  return out;
}

/** A fresh query token: 16 random bytes, never all zero, in memory of its own (not a view of the pool, nor of Buffer's shared slab). */
export function newQueryToken(): Buffer {
  for (;;) {
    const t = Buffer.alloc(TOKEN_LEN);
    const drawn = random(TOKEN_LEN);
    drawn.copy(t);
    drawn.fill(0); // the pool keeps no copy of a token
    if (!isZeroToken(t)) return t;
  }
}

/** A fresh random query id (a uint32), for clients that do not number their own queries. */
export function newQueryId(): number {
  return random(4).readUInt32BE(0);
}

/** True when every byte of `t` is zero (a token HDWP refuses). */
export function isZeroToken(t: Uint8Array): boolean {
  return t.every((b) => b === 0);
}

/** Constant-time equality of two tokens (false for different lengths). */
export function sameToken(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
