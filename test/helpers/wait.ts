/**
 * Contract: the one way a test waits for something to become true.
 * - `waitFor(what, check, opts)` calls `check` (sync or async) until it returns a truthy value and
 *   resolves with that value. It is bounded: after `timeoutMs` it rejects with
 *   "timed out after N ms waiting for <what>" plus `detail()` (e.g. a process's output), so a
 *   failing test says what it was waiting for and what it saw instead.
 * - A check that throws fails the wait at once with that error (a broken precondition is not a
 *   reason to keep polling).
 * - The deadline is a safety bound, not an assertion: pick it generously (a busy machine is slow),
 *   and prefer an event to a poll where there is one (see `waitForEvent` and process.ts).
 * - Never use a fixed sleep to wait for something to happen; `sleep` is for letting time pass when
 *   the passing of time is what a test is about (and nothing injects a clock there).
 */

export interface WaitOptions {
  /** Give up after this long (default 30 s). */
  timeoutMs?: number;
  /** Poll interval (default 5 ms for sync checks, 20 ms for async ones). */
  intervalMs?: number;
  /** Appended to the timeout error: what the test saw instead. */
  detail?: () => string;
}

type Falsy = undefined | null | false | 0 | '';

// Generous: a loaded 2-core machine running three jest workers took over 10 s to start an MCP server and post a card.
export const DEFAULT_WAIT_MS = 30_000;

/** Polls `check` until it returns a truthy value (bounded; rejects naming `what`). */
export async function waitFor<T>(what: string, check: () => T | Falsy | Promise<T | Falsy>, opts: WaitOptions | number = {}): Promise<T> {
  const o: WaitOptions = typeof opts === 'number' ? { timeoutMs: opts } : opts;
  const timeoutMs = o.timeoutMs ?? DEFAULT_WAIT_MS;
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = check();
    const isAsync = r instanceof Promise;
    const v = isAsync ? await r : r;
    if (v) return v as T;
    if (Date.now() > end) throw timedOut(what, timeoutMs, o.detail);
    await sleep(o.intervalMs ?? (isAsync ? 20 : 5));
  }
}

/** Like `waitFor` with the arguments in the order some older tests used: `until(pred, what, ms)`. */
export function until(pred: () => boolean, what: string, ms = DEFAULT_WAIT_MS): Promise<void> {
  return waitFor(what, pred, ms).then(() => undefined);
}

/**
 * Resolves with the first `event` from `target` whose arguments satisfy `pred` (default: any);
 * rejects after `timeoutMs` naming `what`. Event-driven: nothing polls.
 */
export function waitForEvent<A extends unknown[]>(
  target: { on(event: string, fn: (...args: A) => void): unknown; off(event: string, fn: (...args: A) => void): unknown },
  event: string,
  what: string,
  opts: WaitOptions & { pred?: (...args: A) => boolean } = {},
): Promise<A> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_WAIT_MS;
  return new Promise<A>((resolve, reject) => {
    const fn = (...args: A) => {
      if (opts.pred && !opts.pred(...args)) return;
      clearTimeout(timer);
      target.off(event, fn);
      resolve(args);
    };
    const timer = setTimeout(() => {
      target.off(event, fn);
      reject(timedOut(what, timeoutMs, opts.detail));
    }, timeoutMs);
    target.on(event, fn);
  });
}

/** Rejects with a timeout naming `what` unless `p` settles first. */
export async function within<T>(p: Promise<T>, what: string, timeoutMs = DEFAULT_WAIT_MS, detail?: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timedOut(what, timeoutMs, detail)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Lets time pass. Not a way to wait for something to happen: use `waitFor` or an event. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function timedOut(what: string, ms: number, detail?: () => string): Error {
  const more = detail?.();
  return new Error(`timed out after ${ms} ms waiting for ${what}${more ? `\n${more}` : ''}`);
}
