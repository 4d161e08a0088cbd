// A clock that moves only when the test says so (agent/run/limits.ts RunClock): "a person takes
// longer than the run's budget" is `advance(ms)`, not a real wait, so the test means the same on a
// busy machine as on an idle one.
import type { RunClock } from '../../agent/run/limits.js';

export interface FakeClock extends RunClock {
  /** Moves time on by `ms`, firing (in order) every timer that falls due. */
  advance(ms: number): void;
  /** Timers set and not yet fired or cancelled. */
  pending(): number;
}

export function fakeClock(start = 1_000_000): FakeClock {
  let now = start;
  let next = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  return {
    now: () => now,
    setTimer(fn, ms) {
      const id = next++;
      timers.set(id, { at: now + Math.max(0, ms), fn });
      return () => void timers.delete(id);
    },
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const due = [...timers.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
        if (!due) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].fn();
      }
      now = until;
    },
    pending: () => timers.size,
  };
}
