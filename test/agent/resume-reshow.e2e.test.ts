/**
 * After a restart every pending card and question is shown again through its adapter (a new
 * RecordingAdapter stands for any surface that starts without the old screen), and a message that
 * queues behind a waiting run says what it waits for. Also: the audit trail's approval lines, and
 * readable summaries (no raw JSON, no backticks) on cards and status lines.
 */
import { z } from 'zod';
import type { AgentEvent } from '../../agent/events.js';
import type { Tool } from '../../agent/tools/types.js';
import { ENGINES, type Harness, harnessOn, waitFor } from '../helpers/harness.js';
import { countingTool, runsLog } from '../helpers/tools.js';

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const YAML = `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [deploy_counter, ask_user_question, execute_command, lookup_order]
    tier: read-only
    workspace: "{{workspace}}"
    approvers: { console: [local] }
    approvalTimeoutMs: 60000
    questionTimeoutMs: 60000
`;

/** A high-risk tool without propose(): its card and status lines are built from its input. */
function lookupTool(): Tool<{ orderId: string; include: string[]; verbose: boolean }> {
  return {
    name: 'lookup_order',
    description: 'Looks up an order (test tool).',
    input: z.strictObject({ orderId: z.string(), include: z.array(z.string()), verbose: z.boolean() }),
    tier: 'high-risk',
    async execute(input) {
      return { content: JSON.stringify({ order: input.orderId, status: 'shipped', items: 3 }) };
    },
  };
}

describe.each(ENGINES)('on %s', (engine) => {
  const harness = harnessOn(engine);

  async function start(): Promise<Harness> {
    return harness.start({ yaml: YAML, extraTools: [countingTool(), lookupTool()] });
  }

  test('a pending approval is shown again after a restart, with the same buttons, and clicking it there runs the tool once', async () => {
    h = await start();
    h.script({ toolUses: [{ name: 'deploy_counter', input: { label: 'prod' } }] });
    await h.adapter.send('deploy prod');
    const before = await waitFor('card', () => h.adapter.cards[0]);
    await h.restart();
    const again = await waitFor('card shown again', () => h.adapter.cards[0]);
    expect(again.card.title).toBe('Approve deploy_counter?');
    expect(again.card.body).toContain('deploy prod');
    expect(again.card.buttons.map((b) => b.token)).toEqual(before.card.buttons.map((b) => b.token));
    h.script({ text: 'prod is deployed' });
    expect((await h.adapter.click(again, 'Approve once', { user: 'local' })).accepted).toBe(true);
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(runsLog(h.workspace)).toEqual(['prod']);
    expect(again.updates.at(-1)?.outcome).toMatch(/Approved once by local/);
    // Shown once, not once per restart of the lane.
    expect(h.adapter.cards).toHaveLength(1);
  });

  test('several pending cards (and the Approve all card) come back in their order; an expired one does not', async () => {
    h = await start();
    h.script({
      toolUses: [
        { name: 'deploy_counter', input: { label: 'a' } },
        { name: 'deploy_counter', input: { label: 'b' } },
      ],
    });
    await h.adapter.send('deploy both');
    await waitFor('three cards', () => h.adapter.cards.length === 3);
    const titles = h.adapter.cards.map((c) => c.card.title);
    await h.restart();
    await waitFor('cards shown again', () => h.adapter.cards.length === 3);
    expect(h.adapter.cards.map((c) => c.card.title)).toEqual(titles);
    h.script({ text: 'both deployed' });
    await h.adapter.click(h.adapter.cards[2]!, 'Approve all', { user: 'local' });
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(runsLog(h.workspace).sort()).toEqual(['a', 'b']);
    // Every copy shows its outcome.
    for (const c of h.adapter.cards) expect(c.updates.at(-1)?.outcome).toMatch(/Approved/);
  });

  test('a message sent while a run waits on an approval is queued and says so, before and after a restart', async () => {
    h = await start();
    h.script({ toolUses: [{ name: 'deploy_counter', input: { label: 'prod' } }] });
    await h.adapter.send('deploy prod');
    await waitFor('card', () => h.adapter.cards[0]);
    await waitFor('parked', () => h.gh.runner.isWaitingOnHuman('console:main'));
    const r = await h.adapter.send('and then?');
    expect(r.accepted).toBe(true);
    expect(r.reply).toBe('Queued: waiting for an approval on deploy_counter first; /stop to cancel it.');
    await h.restart();
    await waitFor('card shown again', () => h.adapter.cards[0]);
    const r2 = await h.adapter.send('still there?');
    expect(r2.reply).toMatch(/^Queued: waiting for an approval on deploy_counter first/);
    // /stop releases the lane; the queued turns then run in order.
    h.script({ text: 'first queued' }, { text: 'second queued' });
    await h.adapter.send('/stop');
    await waitFor('queued turns ran', () => h.adapter.answers().includes('second queued'));
    expect(runsLog(h.workspace)).toEqual([]);
  });

  test('a question without typed answers: a message queues behind it and names the question', async () => {
    h = await start();
    h.script({
      toolUses: [{ name: 'ask_user_question', input: { question: 'Which region?', suggestions: [{ value: 'eu', label: 'EU' }], allowCustom: false } }],
    });
    await h.adapter.send('deploy somewhere');
    await waitFor('question', () => h.adapter.cards[0]);
    await waitFor('parked', () => h.gh.runner.isWaitingOnHuman('console:main'));
    const r = await h.adapter.send('hello?');
    expect(r.reply).toBe('Queued: waiting for an answer to "Which region?" first; /stop to cancel it.');
  });

  test('cards and status lines of a tool without propose() are readable: no JSON, no backticks', async () => {
    h = await start();
    h.script({ toolUses: [{ name: 'lookup_order', input: { orderId: 'A-17', include: ['items', 'address'], verbose: true } }] }, { text: 'It shipped.' });
    await h.adapter.send('where is my order');
    const card = await waitFor('card', () => h.adapter.cards[0]);
    expect(card.card.body.split('\n')[0]).toBe('lookup_order orderId: A-17, include: 2 items, verbose: true');
    await h.adapter.click(card, 'Approve once', { user: 'local' });
    await waitFor('answer', () => h.adapter.answers()[0]);
    const lines = h.adapter
      .eventsOf('console:main')
      .flatMap((e: AgentEvent) => (e.type === 'tool_started' || e.type === 'tool_finished' || e.type === 'approval_asked' ? [e.summary] : []));
    expect(lines).toEqual([
      'lookup_order orderId: A-17, include: 2 items, verbose: true',
      'lookup_order orderId: A-17, include: 2 items, verbose: true',
      'order: A-17, status: shipped, items: 3',
    ]);
    for (const text of [...lines, card.card.body, ...card.card.buttons.map((b) => b.label)]) {
      expect(text).not.toMatch(/[{}`"]/);
    }
  });

  test('the Always button of a command names its key without backticks', async () => {
    h = await start();
    h.classifierReply = { text: 'high-risk' };
    h.script({ toolUses: [{ name: 'execute_command', input: { command: 'git push origin main' } }] });
    await h.adapter.send('push it');
    const card = await waitFor('card', () => h.adapter.cards[0]);
    const always = card.card.buttons.find((b) => b.label.startsWith('Always'))!;
    expect(always.label).not.toContain('`');
    expect(always.label).toMatch(/^Always allow “git push.*”$/);
  });
});
