import { describe, expect, it } from '@jest/globals';
import { announceRequest } from '../../agent/approvals/announce.js';
import { OpenRequests } from '../../agent/approvals/open-requests.js';
import { SignalHub } from '../../agent/store/signal-hub.js';
import type { Signals } from '../../agent/store/types.js';

describe('OpenRequests (which conversations may have undecided requests), on an exclusive store', () => {
  it('knows what was pending at start (one read) and what was created since', async () => {
    let reads = 0;
    const open = new OpenRequests({ allPending: async () => (reads++, [{ conversation: 'a' }]) });
    expect(await open.mayHave('a')).toBe(true);
    expect(await open.mayHave('b')).toBe(false);
    open.creating('b');
    expect(await open.mayHave('b')).toBe(true);
    expect(reads).toBe(1);
  });

  it('forgets a conversation a read found empty, unless a request was created after the read began', async () => {
    const open = new OpenRequests({ allPending: async () => [] });
    open.creating('a');
    await open.mayHave('a');
    const mark = open.mark('a');
    open.creating('a'); // created while the read was in flight
    open.nonePending('a', mark);
    expect(await open.mayHave('a')).toBe(true);
    open.nonePending('a', open.mark('a'));
    expect(await open.mayHave('a')).toBe(false);
  });

  it('a failed first read fails that call and is tried again', async () => {
    let n = 0;
    const open = new OpenRequests({
      allPending: async () => {
        if (n++ === 0) throw new Error('disk I/O error');
        return [{ conversation: 'a' }];
      },
    });
    await expect(open.mayHave('a')).rejects.toThrow('disk I/O error');
    expect(await open.mayHave('a')).toBe(true);
  });
});

describe('OpenRequests on a shared store (announcements through the signals)', () => {
  /** The store's Signals as the contract has them, in one process, with the listening state set by the test. */
  function signals() {
    const hub = new SignalHub();
    let live = true;
    const s: Signals = {
      publish: async (topic, payload) => hub.deliver(topic, payload),
      subscribe: (topic, fn) => hub.subscribe(topic, fn),
      onResync: (fn) => hub.onResync(fn),
      ready: async () => undefined,
      live: () => live,
    };
    return { s, down: () => void (live = false), up: () => ((live = true), hub.resync()) };
  }

  it('an announced conversation may have requests; while signals are down every conversation may; a resync seeds again', async () => {
    let reads = 0;
    const pending: Array<{ conversation: string }> = [];
    const sig = signals();
    const open = new OpenRequests({ allPending: async () => (reads++, [...pending]), signals: sig.s });
    expect(await open.mayHave('a')).toBe(false);
    await announceRequest(sig.s, 'req-1', 'a');
    expect(await open.mayHave('a')).toBe(true);
    expect(reads).toBe(1);

    sig.down();
    pending.push({ conversation: 'b' }); // created elsewhere while this process heard nothing
    expect(await open.mayHave('b')).toBe(true);
    expect(await open.mayHave('c')).toBe(true);
    expect(reads).toBe(1); // no seed while down: the caller reads the store itself
    sig.up();
    expect(await open.mayHave('b')).toBe(true);
    expect(await open.mayHave('c')).toBe(false);
    expect(reads).toBe(2);
  });

  it('a key too long for a signal is announced as "read everything again"', async () => {
    let reads = 0;
    const long = `slack:${'x'.repeat(2000)}`;
    const pending: Array<{ conversation: string }> = [];
    const sig = signals();
    const open = new OpenRequests({ allPending: async () => (reads++, [...pending]), signals: sig.s });
    expect(await open.mayHave(long)).toBe(false);
    pending.push({ conversation: long });
    await announceRequest(sig.s, 'req-2', long);
    expect(await open.mayHave(long)).toBe(true);
    expect(reads).toBe(2);
  });
});
