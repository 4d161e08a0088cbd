/**
 * Fencing through the real runner (PostgreSQL store, so the shared pg-boss queue and its fences):
 * a run whose conversation was claimed by another replica meanwhile writes nothing more, posts no
 * answer, and logs one line saying so. The claim is taken through the store's leases, as another
 * replica's queue would.
 */
import { z } from 'zod';
import type { Tool } from '../../agent/tools/types.js';
import { agentYaml, Harness, waitFor } from '../helpers/harness.js';

function holdTool(into: Map<string, () => void>): Tool<Record<string, never>> {
  return {
    name: 'hold',
    description: 'Holds the run until released (test tool).',
    input: z.strictObject({}),
    tier: 'read-only',
    async execute(_input, ctx) {
      await new Promise<void>((resolve) => into.set(ctx.conversationKey, resolve));
      return { content: 'released' };
    },
  };
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

test('a run that lost its conversation to another replica neither writes nor posts, and says so once', async () => {
  const held = new Map<string, () => void>();
  const logs: string[] = [];
  h = await Harness.start({
    engine: 'postgres',
    yaml: agentYaml('tools: [hold]', 'tier: read-only'),
    extraTools: [holdTool(held)],
    log: (_l, m) => logs.push(m),
  });
  h.script({ toolUses: [{ name: 'hold', input: {} }] }, { text: 'the answer nobody may see' });
  await h.adapter.send('go', { conversation: 'f' });
  const key = 'console:f';
  const release = await waitFor('the tool running', () => held.get(key), 30_000);
  const before = await h.store.transcripts.load(key);
  const mine = await h.store.leases.current(key);
  expect(mine?.epoch).toBe(1);
  // Another replica claims the conversation (a pause past the lease, as its queue would).
  const theirs = await h.store.leases.take(key, 'another-replica', Date.now());
  release();
  await waitFor('the lost line', () => logs.find((m) => m.startsWith(`lost conversation ${key}`)), 30_000);
  await h.gh.runner.idle();
  expect(logs.filter((m) => m.includes('lost conversation'))).toEqual([
    `lost conversation ${key} to another replica (epoch 1, now ${theirs.epoch}): not writing or posting`,
  ]);
  expect(h.adapter.answers(key)).toEqual([]);
  // Nothing it did after losing the claim reached the transcript.
  expect((await h.store.transcripts.load(key))?.revision).toBe(before?.revision);
}, 120_000);
