/**
 * Contract: what both engines' Signals (types.ts) share: the check of a topic and payload, and the
 * subscribers of one process by topic. Delivery and resync never throw to the caller (a subscriber
 * that throws is its own problem) and call each subscriber open when they start.
 */
import { MAX_SIGNAL_PAYLOAD, StoreError, TOPIC_PATTERN } from './types.js';

/** Rejects a topic or payload outside the contract (both engines, so SQLite tests catch it too). */
export function checkSignal(topic: string, payload: string): void {
  if (!TOPIC_PATTERN.test(topic)) throw new StoreError(`a signal topic must match ${TOPIC_PATTERN} (got ${JSON.stringify(topic.slice(0, 60))})`, 'bad-signal');
  if (Buffer.byteLength(payload, 'utf8') > MAX_SIGNAL_PAYLOAD) {
    throw new StoreError(
      `a signal payload is at most ${MAX_SIGNAL_PAYLOAD} bytes (got ${Buffer.byteLength(payload, 'utf8')} on ${topic}): signal an id and keep the data in the store`,
      'bad-signal',
    );
  }
}

/** Subscribers by topic, shared by the engines' Signals (delivery never throws to the caller). */
export class SignalHub {
  private readonly byTopic = new Map<string, Set<(payload: string) => void>>();
  private readonly resyncs = new Set<() => void>();

  subscribe(topic: string, fn: (payload: string) => void): () => void {
    // A wrapper per subscription: the same function subscribed twice is two subscriptions.
    const sub = (p: string) => fn(p);
    const set = this.byTopic.get(topic) ?? new Set();
    set.add(sub);
    this.byTopic.set(topic, set);
    return () => {
      set.delete(sub);
      if (set.size === 0 && this.byTopic.get(topic) === set) this.byTopic.delete(topic);
    };
  }

  onResync(fn: () => void): () => void {
    const sub = () => fn();
    this.resyncs.add(sub);
    return () => void this.resyncs.delete(sub);
  }

  deliver(topic: string, payload: string): void {
    for (const fn of [...(this.byTopic.get(topic) ?? [])]) {
      try {
        fn(payload);
      } catch {
        // the subscriber's own problem
      }
    }
  }

  resync(): void {
    for (const fn of [...this.resyncs]) {
      try {
        fn();
      } catch {
        // the subscriber's own problem
      }
    }
  }
}
