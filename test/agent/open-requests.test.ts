import { describe, expect, it } from '@jest/globals';
import { OpenRequests } from '../../agent/approvals/open-requests.js';

describe('OpenRequests (which conversations may have undecided requests, on an exclusive store)', () => {
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
