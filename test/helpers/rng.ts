/**
 * A small deterministic pseudo-random generator (mulberry32): `mulberry32(seed)` returns a function
 * giving numbers in [0, 1), the same sequence for the same 32-bit seed, for tests that generate
 * inputs and must replay a failure from its seed.
 */
export function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
