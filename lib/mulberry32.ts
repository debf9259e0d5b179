/**
 * Mulberry32: a small seeded PRNG. The same seed gives the same sequence on every machine, so demo
 * data and sample files are reproducible and a failing fuzz case can be replayed from its seed.
 */

/** A generator of floats in [0, 1) seeded with `seed` (taken as an unsigned 32-bit integer). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
