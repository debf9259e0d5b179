/**
 * Query ids and tokens (docs/hdwp.md, "Query result streams: query id + token"): the token is 128
 * bits from the operating system's CSPRNG, never all zero (HDWP refuses an all-zero token), and is
 * compared in constant time wherever a frame or a cancel presents it.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';

/** Bytes in a query token. */
export const TOKEN_LEN = 16;

/** A fresh query token: 16 random bytes, never all zero. */
export function newQueryToken(): Buffer {
  for (;;) {
    const t = randomBytes(TOKEN_LEN);
    if (!isZeroToken(t)) return t;
  }
}

/** A fresh random query id (a uint32), for clients that do not number their own queries. */
export function newQueryId(): number {
  return randomBytes(4).readUInt32BE(0);
}

/** True when every byte of `t` is zero (a token HDWP refuses). */
export function isZeroToken(t: Uint8Array): boolean {
  return t.every((b) => b === 0);
}

/** Constant-time equality of two tokens (false for different lengths). */
export function sameToken(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
