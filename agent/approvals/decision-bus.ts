/**
 * The decision bus: how a decision recorded anywhere wakes the run waiting on it.
 *
 * Contract:
 * - `publish(requestId, decision)` tells every current subscriber of that request, in this process
 *   and (SignalDecisionBus) in every process sharing the store, then resolves. A publish with no
 *   subscriber is dropped (the decision is in the store; a later `wait` reads it).
 * - `subscribe(requestId, fn)` returns the function that ends the subscription; a subscriber may be
 *   told more than once (the broker's waiters settle on the first and ignore the rest).
 * - The broker publishes only after the decision is stored, so a subscriber may rely on the store
 *   holding it.
 * - InProcessDecisionBus: one process (an EventEmitter), for tests and embedders.
 * - SignalDecisionBus: over the store's Signals (agent/store/types.ts), topic `decision`, payload
 *   the request id alone (the store is the truth). This process's subscribers are told with the
 *   decision in hand; another process's read the stored decision when the signal names a request
 *   they wait on. On a resync (signals may have been missed) and every `safetyReadMs` (default
 *   60 s; 0: never) while subscriptions are open, each subscribed request is read again: a publish
 *   that failed (logged, never thrown: the decision is stored) still wakes its waiters.
 */
import { EventEmitter } from 'node:events';
import type { Signals } from '../store/types.js';
import type { Decision } from './wording.js';
import type { Log } from '../log.js';
import { messageOf } from '../log.js';

export interface DecisionBus {
  publish(requestId: string, decision: Decision): Promise<void>;
  subscribe(requestId: string, fn: (decision: Decision) => void): () => void;
}

export class InProcessDecisionBus implements DecisionBus {
  private readonly emitter = new EventEmitter();

  constructor() {
    // One listener per waiting run of a request, and many requests: no leak warning for that.
    this.emitter.setMaxListeners(0);
  }

  async publish(requestId: string, decision: Decision): Promise<void> {
    // A subscriber that throws must not keep the others (or the publisher) from going on.
    for (const fn of this.emitter.listeners(requestId) as Array<(d: Decision) => void>) {
      try {
        fn(decision);
      } catch {
        // the subscriber's own problem
      }
    }
  }

  subscribe(requestId: string, fn: (decision: Decision) => void): () => void {
    this.emitter.on(requestId, fn);
    return () => void this.emitter.off(requestId, fn);
  }

  /** Subscriptions still open (tests: a settled wait leaves none behind). */
  listenerCount(requestId: string): number {
    return this.emitter.listenerCount(requestId);
  }
}

export const DECISION_TOPIC = 'decision';

export interface SignalDecisionBusOptions {
  signals: Signals;
  /** The stored decision of a request (undefined: none yet, or not stored). */
  read(requestId: string): Promise<Decision | undefined>;
  log?: Log;
  safetyReadMs?: number;
}

export class SignalDecisionBus implements DecisionBus {
  private readonly local = new InProcessDecisionBus();
  private readonly subscribed = new Map<string, number>();
  private safety: NodeJS.Timeout | undefined;
  private readonly offs: Array<() => void>;

  constructor(private readonly opts: SignalDecisionBusOptions) {
    this.offs = [
      opts.signals.subscribe(DECISION_TOPIC, (id) => {
        if (this.subscribed.has(id)) this.reread(id);
      }),
      opts.signals.onResync(() => this.rereadAll()),
    ];
  }

  async publish(requestId: string, decision: Decision): Promise<void> {
    // Here first, with the decision in hand: the signal coming back then finds no subscriber to read for.
    await this.local.publish(requestId, decision);
    try {
      await this.opts.signals.publish(DECISION_TOPIC, requestId);
    } catch (err) {
      this.opts.log?.(
        'warn',
        `could not signal the decision of request ${requestId} to other processes (${messageOf(err)}); they see it at their next re-read`,
      );
    }
  }

  subscribe(requestId: string, fn: (decision: Decision) => void): () => void {
    const off = this.local.subscribe(requestId, fn);
    this.subscribed.set(requestId, (this.subscribed.get(requestId) ?? 0) + 1);
    this.armSafety();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      off();
      const n = (this.subscribed.get(requestId) ?? 1) - 1;
      if (n > 0) this.subscribed.set(requestId, n);
      else this.subscribed.delete(requestId);
      if (this.subscribed.size === 0 && this.safety) {
        clearInterval(this.safety);
        this.safety = undefined;
      }
    };
  }

  /** Subscriptions still open for a request (tests). */
  listenerCount(requestId: string): number {
    return this.local.listenerCount(requestId);
  }

  /** Ends the bus's own signal subscriptions (shutdown). */
  close(): void {
    for (const off of this.offs) off();
    if (this.safety) clearInterval(this.safety);
    this.safety = undefined;
  }

  private armSafety(): void {
    const every = this.opts.safetyReadMs ?? 60_000;
    if (every <= 0 || this.safety) return;
    this.safety = setInterval(() => this.rereadAll(), every);
    this.safety.unref();
  }

  private rereadAll(): void {
    for (const id of [...this.subscribed.keys()]) this.reread(id);
  }

  private reread(requestId: string): void {
    this.opts.read(requestId).then(
      (d) => {
        if (d) void this.local.publish(requestId, d);
      },
      (err: unknown) => this.opts.log?.('warn', `could not read the decision of request ${requestId}: ${messageOf(err)}`),
    );
  }
}
