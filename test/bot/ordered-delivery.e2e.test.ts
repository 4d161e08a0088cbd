/**
 * The seam's delivery contract on the real core: one conversation's events reach `render` in order
 * and never overlapping, even while text streams faster than the adapter shows it; streamed text
 * comes in segments (text before a tool call is its own), and `answer` is the last segment whole.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConversationRef } from '../../adapters/types.js';
import type { AgentEvent } from '../../agent/events.js';
import { Harness, waitFor } from '../helpers/harness.js';
import { RecordingAdapter } from '../helpers/recording-adapter.js';

/** An adapter as slow as a real platform call, that notices a render starting before the last ended. */
class SlowAdapter extends RecordingAdapter {
  inFlight = new Map<string, number>();
  overlaps = 0;
  override async render(ref: ConversationRef, event: AgentEvent): Promise<void> {
    const n = (this.inFlight.get(ref.key) ?? 0) + 1;
    this.inFlight.set(ref.key, n);
    if (n > 1) this.overlaps++;
    await new Promise((r) => setTimeout(r, event.type === 'text' ? 3 : 10));
    await super.render(ref, event);
    this.inFlight.set(ref.key, (this.inFlight.get(ref.key) ?? 1) - 1);
  }
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

test('a slow adapter sees one render at a time per conversation, in order, segments marked', async () => {
  const slow = new SlowAdapter();
  h = await Harness.start({ adapters: () => [slow] });
  mkdirSync(h.workspace, { recursive: true });
  writeFileSync(join(h.workspace, 'notes.txt'), 'pineapple\n');
  const before = 'Let me look at the notes file first. '.repeat(6);
  const after = 'The word in the notes is pineapple, as written there.';
  h.script({ text: before, toolUses: [{ name: 'read_file', input: { path: 'notes.txt' } }] }, { text: after });
  await slow.send('what is the word?');
  await waitFor('run finished', () => slow.eventsOf('console:main', 'run_finished')[0]);

  expect(slow.overlaps).toBe(0);
  const events = slow.eventsOf('console:main');
  const types = events.map((e) => e.type);
  // the text before the tool call, all of it, then the tool, then the answer's text, then the answer
  const firstTool = types.indexOf('tool_started');
  const texts = events.flatMap((e) => (e.type === 'text' ? [e] : []));
  const seg1 = texts
    .filter((t) => t.segment === 1)
    .map((t) => t.delta)
    .join('');
  const seg2 = texts
    .filter((t) => t.segment === 2)
    .map((t) => t.delta)
    .join('');
  expect(seg1).toBe(before);
  expect(seg2).toBe(after);
  expect(texts.map((t) => t.segment)).toEqual([...texts].map((t) => t.segment).sort());
  const lastSeg1 = events.findLastIndex((e) => e.type === 'text' && e.segment === 1);
  const firstSeg2 = events.findIndex((e) => e.type === 'text' && e.segment === 2);
  expect(lastSeg1).toBeLessThan(firstTool);
  expect(firstSeg2).toBeGreaterThan(types.indexOf('tool_finished'));
  expect(slow.answers()).toEqual([after]);
  expect(types.indexOf('answer')).toBeGreaterThan(events.findLastIndex((e) => e.type === 'text'));
  expect(types[types.length - 1]).toBe('run_finished');
});

test('two conversations deliver independently: a stuck render in one does not hold up the other', async () => {
  const slow = new SlowAdapter();
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const render = slow.render.bind(slow);
  slow.render = async (ref, event) => {
    if (ref.key === 'console:a' && event.type === 'text') await held; // a platform call that hangs
    return render(ref, event);
  };
  h = await Harness.start({ adapters: () => [slow] });
  h.script({ text: 'first answer, for a' }, { text: 'quick' });
  await slow.send('long please', { conversation: 'a' });
  await waitFor('a is rendering', () => (slow.inFlight.get('console:a') ?? 0) > 0 || h!.modelRequests().length > 0);
  await slow.send('short please', { conversation: 'b' });
  await waitFor('answer in b', () => slow.answers('console:b')[0]);
  expect(slow.eventsOf('console:a', 'text')).toHaveLength(0); // a's first delta is still being shown
  expect(slow.eventsOf('console:a', 'answer')).toHaveLength(0); // and its answer waits behind it
  release();
  await waitFor('answer in a', () => slow.answers('console:a')[0]);
  expect(slow.overlaps).toBe(0);
  const a = slow.eventsOf('console:a');
  expect(a.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join('')).toBe('first answer, for a');
  expect(a.findIndex((e) => e.type === 'answer')).toBeGreaterThan(a.findLastIndex((e) => e.type === 'text'));
});
