/**
 * The runner's two limits on runs: how many run at once (Slots) and how long one may take (Deadline),
 * a budget that stops counting while the run waits on a human.
 *
 * Contract (Slots):
 * - A run asks for a slot with a claim: its user (`<platform>:<sender id>`) and its place
 *   (`placeOf`: a chat or channel with all its topics and threads). It starts when all hold:
 *   a global slot is free (`total`); its user runs fewer than `perUser`; its place runs fewer than
 *   `perPlace`; and, when its user already holds a slot, more than `reserved` slots are free (the
 *   last `reserved` are kept for users who hold none). So one user in many topics or threads can
 *   never fill the runner, and someone else's DM still gets a slot.
 * - A run that cannot start waits (never refused). Waiters start in arrival order among those that
 *   can start: one held back by its own user's or place's cap does not hold back the others.
 * - A run waiting on a human hands its slot back (release) and asks again (acquire) to go on.
 */
export interface SlotLimits {
  total: number;
  /** Runs at once per user, across places (Infinity: no cap). */
  perUser: number;
  /** Runs at once per place (Infinity: no cap). */
  perPlace: number;
  /** Global slots a user who already holds one cannot take (0: none kept). */
  reserved: number;
}

export interface SlotClaim {
  user: string;
  place: string;
}

const DEFAULT_SLOT_LIMITS: SlotLimits = { total: 8, perUser: 2, perPlace: 3, reserved: 1 };

/**
 * The place of a conversation key (see adapters/types.ts): the chat or channel, without the forum
 * topic or thread, so a group's topics count as one place. Other keys (console, cli) are their own place.
 */
export function placeOf(key: string): string {
  const parts = key.split(':');
  const keep = parts[0] === 'telegram' ? 2 : parts[0] === 'slack' || parts[0] === 'discord' ? 3 : parts.length;
  return parts.slice(0, keep).join(':');
}

/** Run slots under a global, a per-user and a per-place cap, with slots kept for other users. */
export class Slots {
  private running = 0;
  private readonly byUser = new Map<string, number>();
  private readonly byPlace = new Map<string, number>();
  private readonly waiting: Array<{ claim: SlotClaim; start: () => void }> = [];
  private readonly limits: SlotLimits;

  constructor(limits: Partial<SlotLimits> | number = {}) {
    const l = typeof limits === 'number' ? { total: limits } : limits;
    const total = l.total ?? DEFAULT_SLOT_LIMITS.total;
    this.limits = {
      total,
      perUser: l.perUser ?? DEFAULT_SLOT_LIMITS.perUser,
      perPlace: l.perPlace ?? DEFAULT_SLOT_LIMITS.perPlace,
      // Never all of them: someone must be able to run at all.
      reserved: Math.min(l.reserved ?? DEFAULT_SLOT_LIMITS.reserved, total - 1),
    };
  }

  /** How many runs hold a slot now, in all and for a user or place (tests, status). */
  held(of?: { user?: string; place?: string }): number {
    if (of?.user !== undefined) return this.byUser.get(of.user) ?? 0;
    if (of?.place !== undefined) return this.byPlace.get(of.place) ?? 0;
    return this.running;
  }

  /** Runs waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  private canStart(c: SlotClaim): boolean {
    const free = this.limits.total - this.running;
    if (free <= 0) return false;
    const mine = this.byUser.get(c.user) ?? 0;
    if (mine >= this.limits.perUser) return false;
    if ((this.byPlace.get(c.place) ?? 0) >= this.limits.perPlace) return false;
    return mine === 0 || free > this.limits.reserved;
  }

  private take(c: SlotClaim): void {
    this.running++;
    this.byUser.set(c.user, (this.byUser.get(c.user) ?? 0) + 1);
    this.byPlace.set(c.place, (this.byPlace.get(c.place) ?? 0) + 1);
  }

  /** Resolves once the claim holds a slot. `wouldWait` is told (once) when it has to wait. */
  acquire(claim: SlotClaim, wouldWait?: () => void): Promise<void> {
    // After every release the waiters that can start have started, so one that can start now
    // passes no one who could.
    if (this.canStart(claim)) {
      this.take(claim);
      return Promise.resolve();
    }
    wouldWait?.();
    return new Promise<void>((start) => this.waiting.push({ claim, start }));
  }

  release(claim: SlotClaim): void {
    this.running--;
    dec(this.byUser, claim.user);
    dec(this.byPlace, claim.place);
    for (let i = 0; i < this.waiting.length; ) {
      const w = this.waiting[i]!;
      if (this.canStart(w.claim)) {
        this.waiting.splice(i, 1);
        this.take(w.claim);
        w.start();
      } else i++;
    }
  }
}

function dec(m: Map<string, number>, k: string): void {
  const n = (m.get(k) ?? 0) - 1;
  if (n > 0) m.set(k, n);
  else m.delete(k);
}

/**
 * The clock a run's deadline reads and sets its timer on. Tests pass a fake one and move it by hand,
 * so "a person takes longer than the budget" needs no real waiting; the default is the real timers.
 */
export interface RunClock {
  now(): number;
  setTimer(fn: () => void, ms: number): () => void;
}

const realClock: RunClock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};

/** A run's time budget; paused while it waits on a human. */
export class Deadline {
  private cancel: (() => void) | undefined;
  private remaining: number;
  private startedAt = 0;
  constructor(
    ms: number,
    private readonly onExpire: () => void,
    private readonly clock: RunClock = realClock,
  ) {
    this.remaining = ms;
    this.resume();
  }
  pause(): void {
    if (!this.cancel) return;
    this.cancel();
    this.cancel = undefined;
    this.remaining -= this.clock.now() - this.startedAt;
  }
  resume(): void {
    if (this.cancel) return;
    this.startedAt = this.clock.now();
    this.cancel = this.clock.setTimer(this.onExpire, Math.max(0, this.remaining));
  }
  clear(): void {
    this.cancel?.();
    this.cancel = undefined;
  }
}
