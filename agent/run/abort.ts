/**
 * Abort wiring that cannot miss a stop.
 *
 * An 'abort' listener added to a signal that has ALREADY aborted never fires. Every place that links a
 * child operation to a run's signal after an await (a /stop can land during that await) must therefore
 * check `aborted` as it subscribes; these helpers do both in one step.
 *
 * Contract:
 * - `whenAborted(signal, fn)` calls `fn` once when `signal` aborts; at once (synchronously) when it
 *   already has. Returns the unsubscribe (a no-op after `fn` ran). No signal: never calls `fn`.
 * - `linkedController(parent)` is an AbortController aborted with `parent` (at once when `parent` already
 *   aborted, with its reason); `unlink()` stops following the parent (the controller keeps its state).
 */

export function whenAborted(signal: AbortSignal | undefined, fn: () => void): () => void {
  if (!signal) return () => {};
  if (signal.aborted) {
    fn();
    return () => {};
  }
  signal.addEventListener('abort', fn, { once: true });
  return () => signal.removeEventListener('abort', fn);
}

export function linkedController(parent: AbortSignal): { controller: AbortController; unlink: () => void } {
  const controller = new AbortController();
  const unlink = whenAborted(parent, () => controller.abort(parent.reason));
  return { controller, unlink };
}
