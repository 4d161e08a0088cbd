/**
 * Expiry across processes sharing the store: every process watches the expiry of every undecided
 * request, not only of those it waits on, so a request whose waiting process died still expires on
 * time (its card says so, and the run that resumes elsewhere reads the outcome).
 *
 * Contract:
 * - `start` reads the undecided requests once (their expiry), then keeps the set current through
 *   the store's Signals: a request's announcement (./announce.ts, sent by the broker that created
 *   it), topic `decision` (decided: dropped), and a full re-read on every resync (signals may have
 *   been missed).
 * - One timer, for the soonest expiry (a wait is at most an hour, then re-armed). At expiry the
 *   broker's `expire` settles the request; its decideOnce lets exactly one process, of all that
 *   fire, record the outcome and update the card: the others find it decided and only wake their
 *   own waits. Failures are logged; the set is read again at the next resync.
 * - `stop` ends the timer and the subscriptions.
 */
import type { Signals } from '../store/types.js';
import { announced, REQUEST_CREATED_TOPIC } from './announce.js';
import { DECISION_TOPIC } from './decision-bus.js';
import type { ApprovalStore } from './store.js';
import type { Log } from '../log.js';
import { messageOf } from '../log.js';

const MAX_WAIT_MS = 3_600_000;

export interface ExpiryWatchOptions {
  signals: Signals;
  store: ApprovalStore;
  expire(requestId: string): Promise<unknown>;
  now: () => number;
  log?: Log;
}

export class ExpiryWatch {
  private readonly expiresAt = new Map<string, number>();
  private offs: Array<() => void> = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;

  constructor(private readonly opts: ExpiryWatchOptions) {}

  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    this.offs = [
      this.opts.signals.subscribe(REQUEST_CREATED_TOPIC, (payload) => void this.learn(announced(payload).id)),
      this.opts.signals.subscribe(DECISION_TOPIC, (id) => {
        if (this.expiresAt.delete(id)) this.arm();
      }),
      this.opts.signals.onResync(() => void this.reload().catch((err: unknown) => this.fail('re-read the pending requests', err))),
    ];
    await this.reload();
  }

  stop(): void {
    this.stopped = true;
    for (const off of this.offs) off();
    this.offs = [];
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** A request created here: watched at once (the broker announces it to the other processes). */
  noted(requestId: string, expiresAt: number): void {
    if (this.stopped) return;
    this.expiresAt.set(requestId, expiresAt);
    this.arm();
  }

  /** Requests watched now (tests). */
  get size(): number {
    return this.expiresAt.size;
  }

  private async learn(id: string): Promise<void> {
    if (this.stopped || this.expiresAt.has(id)) return;
    try {
      const req = await this.opts.store.get(id);
      if (req && !req.decision && !this.stopped) {
        this.expiresAt.set(id, req.expiresAt);
        this.arm();
      }
    } catch (err) {
      this.fail(`read request ${id}`, err);
    }
  }

  private async reload(): Promise<void> {
    const pending = await this.opts.store.allPending();
    const ids = new Set(pending.map((p) => p.id));
    for (const id of [...this.expiresAt.keys()]) if (!ids.has(id)) this.expiresAt.delete(id);
    for (const { id } of pending) await this.learn(id);
    this.arm();
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.stopped || this.expiresAt.size === 0) return;
    const soonest = Math.min(...this.expiresAt.values());
    const wait = Math.min(MAX_WAIT_MS, Math.max(0, soonest - this.opts.now()));
    this.timer = setTimeout(() => this.fire(), wait);
    // Stopping is stop()'s job; this timer alone must not keep a finished process alive.
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    const now = this.opts.now();
    for (const [id, at] of [...this.expiresAt]) {
      if (at > now) continue;
      this.expiresAt.delete(id);
      this.opts.expire(id).catch((err: unknown) => this.fail(`expire request ${id}`, err));
    }
    this.arm();
  }

  private fail(what: string, err: unknown): void {
    this.opts.log?.('warn', `approval expiry: could not ${what}: ${messageOf(err)}`);
  }
}
