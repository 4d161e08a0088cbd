/**
 * agent/run/changes.ts: a drain loop's wait resolves at the first notify made after it began (or
 * its timer), never at once; so a loop that checks and waits cannot spin on microtasks.
 */
import { setImmediate as turn } from 'node:timers/promises';
import { Changes } from '../../../agent/run/changes.js';

test('next() ignores a notify made before it, and wakes on the next one', async () => {
  const c = new Changes();
  c.notify();
  let woke = 0;
  void c.next(600_000).then(() => woke++);
  await turn(); // a full event-loop turn: a wait settled already would have resolved by now
  expect(woke).toBe(0);
  c.notify();
  await turn();
  expect(woke).toBe(1);
  c.notify(); // nothing is waiting any more: no second wake
  await turn();
  expect(woke).toBe(1);
});

test('every wait pending at a notify wakes, and one begun after it waits for the next', async () => {
  const c = new Changes();
  const woke: string[] = [];
  void c.next(600_000).then(() => woke.push('a'));
  void c.next(600_000).then(() => woke.push('b'));
  c.notify();
  void c.next(600_000).then(() => woke.push('c'));
  await turn();
  expect(woke).toEqual(['a', 'b']);
  c.notify();
  await turn();
  expect(woke).toEqual(['a', 'b', 'c']);
});

test('with no notify, the wait ends at its timer', async () => {
  const c = new Changes();
  await c.next(1); // resolves with no notify (jest would time out otherwise)
});
