/** A seeded generator of floats in [0, 1): sfc32, seeded through splitmix32 so nearby seeds differ. */
export type Random = () => number;

export function seeded(...seeds: number[]): Random {
  let h = 0x9e3779b9;
  for (const seed of seeds) h = splitmix(h ^ (seed | 0));
  let a = splitmix(h);
  let b = splitmix(a);
  let c = splitmix(b);
  let d = splitmix(c);
  const next = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  return next;
}

function splitmix(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** An exponentially distributed wait with the given mean (a Poisson process's gaps). */
export function exponential(random: Random, mean: number): number {
  return -Math.log(1 - random()) * mean;
}

/**
 * Runs `fn` with `Math.random` replaced by a seeded generator. The picker's schedules draw their
 * random starting point from `Math.random` (SmoothWeighted, EarliestDeadline, SchedulePicker) and
 * take no generator; everything else in the library that draws takes one and gets its own.
 */
export async function withSeededMathRandom<T>(seed: number, fn: () => Promise<T>): Promise<T> {
  const restore = seedMathRandom(seed);
  try {
    return await fn();
  } finally {
    restore();
  }
}

/** `withSeededMathRandom` for a `fn` that runs to its end at once (a fake-clock simulation). */
export function withSeededMathRandomSync<T>(seed: number, fn: () => T): T {
  const restore = seedMathRandom(seed);
  try {
    return fn();
  } finally {
    restore();
  }
}

/** Replaces `Math.random` by a generator seeded with `seed`; returns what puts the original back. */
function seedMathRandom(seed: number): () => void {
  const original = Math.random;
  Math.random = seeded(seed, 0x6d617468);
  return () => {
    Math.random = original;
  };
}
