/**
 * The decision bus: how a decision recorded anywhere wakes the run waiting on it.
 *
 * Contract:
 * - `publish(requestId, decision)` tells every current subscriber of that request, then resolves.
 *   A publish with no subscriber is dropped (the decision is in the store; a later `wait` reads it).
 * - `subscribe(requestId, fn)` returns the function that ends the subscription; a subscriber may be
 *   told more than once (the broker's waiters settle on the first and ignore the rest).
 * - The broker publishes only after the decision is stored, so a subscriber may rely on the store
 *   holding it.
 * - This implementation is one process (an EventEmitter). Across processes sharing a store, the
 *   broker polls the store while it waits; the next issue puts LISTEN/NOTIFY behind this interface.
 */
import { EventEmitter } from 'node:events';
import type { Decision } from './wording.js';

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
