/**
 * Contract: the SQLite engine's Signals (../types.ts). One process per SQLite store, so a signal
 * never leaves the process: `publish` delivers to this process's subscribers before it resolves,
 * nothing is ever missed (`live()` while open), and `onResync` listeners are never called. Signals after close reject.
 */
import { checkSignal, SignalHub } from '../signal-hub.js';
import { StoreError, type Signals } from '../types.js';

export function sqliteSignals(isClosed: () => boolean): Signals {
  const hub = new SignalHub();
  return {
    async publish(topic, payload) {
      checkSignal(topic, payload);
      if (isClosed()) throw new StoreError('the store is closed: no signal can be sent', 'closed');
      hub.deliver(topic, payload);
    },
    subscribe: (topic, fn) => hub.subscribe(topic, fn),
    onResync: (fn) => hub.onResync(fn),
    ready: async () => undefined,
    live: () => !isClosed(),
  };
}
