/**
 * Contract: the wake-up of a drain loop (a turn queue's `idle()` and `close()`). `next(ms)`
 * resolves at the first `notify()` made AFTER it was called, or when its `ms` timer fires
 * (cleared on the notify, so waits leave no timers behind). A loop that checks its state, then
 * awaits `next()`, yields to the event loop between checks unless something really changed:
 * it never re-awaits a promise that settled already (`Promise.all([])`, a lane that ended), a
 * microtask spin that starves the very I/O it waits for and allocates until the heap runs out.
 * Callers notify on every change the loop checks; the timer covers state that changes unseen
 * (a run parked on a human, turns finished on another replica).
 */
export class Changes {
  private waiters = new Set<() => void>();

  /** Wakes every `next()` pending now (not later ones). */
  notify(): void {
    const woken = this.waiters;
    this.waiters = new Set();
    for (const w of woken) w();
  }

  next(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(1, ms));
      this.waiters.add(wake);
    });
  }
}
