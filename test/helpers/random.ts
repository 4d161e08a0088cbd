/**
 * Contract: seeded randomness for tests that generate random input or random moments.
 * - `seededRandom()` takes its seed from TEST_SEED when set (to replay a failure),
 *   otherwise picks one; the same seed gives the same sequence.
 * - `withSeed(rng, fn)` runs `fn` and, when it throws, rethrows with the seed and the replay
 *   command in the message, so a failure prints the seed it ran with.
 * Never Math.random() in a test: a failure that cannot be replayed cannot be fixed.
 */

export interface SeededRandom {
  readonly seed: number;
  /** In [0, 1). */
  next(): number;
  /** An integer in [lo, hi). */
  int(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
  /** A new array in a random order. */
  shuffle<T>(items: readonly T[]): T[];
  /** [a-z0-9]{length}. */
  word(length?: number): string;
}

export function seededRandom(seed: number = seedFromEnv()): SeededRandom {
  // mulberry32: small, fast, good enough to spread test input.
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo));
  return {
    seed,
    next,
    int,
    pick: (items) => items[int(0, items.length)]!,
    shuffle(items) {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = int(0, i + 1);
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
      return out;
    },
    word(length = 8) {
      const abc = 'abcdefghijklmnopqrstuvwxyz0123456789';
      let s = '';
      for (let i = 0; i < length; i++) s += abc[int(0, abc.length)];
      return s;
    },
  };
}

function seedFromEnv(): number {
  const given = process.env.TEST_SEED;
  if (given !== undefined && given !== '') {
    const n = Number(given);
    if (!Number.isInteger(n)) throw new Error(`TEST_SEED must be an integer, got ${JSON.stringify(given)}`);
    return n;
  }
  // The one place a test reads the ambient randomness: to choose a seed it then reports.
  return Math.floor(Math.random() * 2 ** 31);
}

/** Runs `fn`; a failure is rethrown with the seed so it can be replayed. */
export async function withSeed<T>(rng: SeededRandom, fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const note = `(random seed ${rng.seed}: replay with TEST_SEED=${rng.seed})`;
    if (err instanceof Error) {
      err.message = `${err.message}\n${note}`;
      throw err;
    }
    throw new Error(`${String(err)}\n${note}`);
  }
}
