/**
 * spawn_subagent through the whole stack on a console conversation (recording adapter, the real
 * Anthropic SDK against the fake): the sub-agent's answer is the parent's tool result, its calls go
 * through the parent's gate (cards in the parent conversation decided by the parent's approvers,
 * toolPolicy deny), it never gets more than its parent, its limits refuse naming the key, /stop ends
 * it, and its usage is rolled into the run's and shown apart.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SUMMARY_MARKER, SUMMARY_SYSTEM } from '../../../agent/context/keeper.js';
import { SUBAGENT_NOTE } from '../../../agent/tools/builtin/subagent/host.js';
import type { AgentEvent } from '../../../agent/events.js';
import { Harness, agentYaml, waitFor } from '../../helpers/harness.js';
import type { RecordedRequest } from '../../fakes/anthropic.js';
import type { Log } from '../../../bot/service/app.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

type Body = { system?: unknown; tools?: Array<{ name: string }>; messages: Array<{ role: string; content: unknown }> };
const body = (r: RecordedRequest) => r.body as Body;
const isSub = (r: RecordedRequest) => JSON.stringify(body(r).system ?? '').includes(SUBAGENT_NOTE.slice(0, 40));
const toolNames = (r: RecordedRequest) => (body(r).tools ?? []).map((t) => t.name).sort();

function lastResult(req: RecordedRequest): string {
  const last = body(req).messages.at(-1)!;
  const blocks = Array.isArray(last.content) ? (last.content as Array<{ type: string; content?: unknown }>) : [];
  const r = blocks.find((b) => b.type === 'tool_result');
  return typeof r?.content === 'string' ? r.content : JSON.stringify(r?.content);
}

const audit: Array<Record<string, unknown>> = [];
const log: Log = (_level, _msg, fields) => {
  if (fields && typeof fields === 'object' && (fields as Record<string, unknown>)['event']) audit.push(fields as Record<string, unknown>);
};

async function start(...lines: string[]): Promise<Harness> {
  audit.length = 0;
  const harness = await Harness.start({ yaml: agentYaml('approvers: { console: [local] }', 'approvalTimeoutMs: 60000', ...lines), log });
  mkdirSync(harness.workspace, { recursive: true });
  return harness;
}

const spawn = (input: Record<string, unknown>) => ({ toolUses: [{ name: 'spawn_subagent', input }] });

test('a sub-agent does the task with its own transcript; its answer is the tool result, its usage rolled up and shown apart', async () => {
  h = await start('tools: [read_file, ls, ask_user_question, context_info, spawn_subagent]', 'tier: low-risk');
  writeFileSync(join(h.workspace, 'notes.txt'), 'The fact is KIWI-7.');
  h.script(
    spawn({ task: 'Read notes.txt and report the fact in it.' }),
    { toolUses: [{ name: 'read_file', input: { path: 'notes.txt' } }], usage: { input_tokens: 100, output_tokens: 10 } },
    { text: 'The fact is KIWI-7.', usage: { input_tokens: 200, output_tokens: 20 } },
    { text: 'The sub-agent says: KIWI-7' },
  );
  await h.adapter.send('what is in the notes?');
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('The sub-agent says: KIWI-7');

  const reqs = h.modelRequests();
  expect(reqs.map(isSub)).toEqual([false, true, true, false]);
  // Its own transcript: the task only, none of the parent's conversation; no tool that asks the user
  // or works on the parent's transcript, and no spawn_subagent at the default maxDepth 1.
  expect(body(reqs[1]!).messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Read notes.txt and report the fact in it.' }] }]);
  expect(toolNames(reqs[1]!)).toEqual(['ls', 'read_file']);
  expect(lastResult(reqs[3]!)).toBe('The fact is KIWI-7.');

  const events = h.adapter.eventsOf('console:main');
  const started = events.flatMap((e) => (e.type === 'tool_started' ? [e.summary] : []));
  expect(started[0]).toMatch(/^sub-agent: Read notes.txt/);
  expect(started[1]).toMatch(/^sub-agent: .*notes\.txt/);
  const usage = (await waitFor('usage', () => h!.adapter.eventsOf('console:main', 'usage')[0])) as Extract<AgentEvent, { type: 'usage' }>;
  expect(usage.subagents).toMatchObject({ count: 1, usage: { inputTokens: 300, outputTokens: 30 } });
  expect(usage.usage.inputTokens).toBeGreaterThan(300);
});

test("an above-tier call posts a card in the parent conversation naming the sub-agent and its task; a stranger's click changes nothing", async () => {
  h = await start('tools: [read_file, mkdir, spawn_subagent]', 'tier: low-risk');
  h.script(
    spawn({ task: 'Create the folder build-out.', tools: ['mkdir'] }),
    { toolUses: [{ name: 'mkdir', input: { path: 'build-out' } }] },
    { text: 'created build-out' },
    { text: 'done' },
  );
  await h.adapter.send('make the folder');
  const card = await waitFor('card', () => h!.adapter.cards[0]);
  expect(card.key).toBe('console:main');
  expect(card.card.title).toBe('Sub-agent: approve mkdir?');
  expect(card.card.body).toContain('From a sub-agent. Its task: Create the folder build-out.');

  expect((await h.adapter.click(card, 'Approve', { user: 'mallory' })).accepted).toBe(false);
  expect(existsSync(join(h.workspace, 'build-out'))).toBe(false);
  expect(h.adapter.answers()).toEqual([]);

  expect((await h.adapter.click(card, 'Approve', { user: 'local' })).accepted).toBe(true);
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('done');
  expect(existsSync(join(h.workspace, 'build-out'))).toBe(true);
  expect(lastResult(h.modelRequests()[3]!)).toBe('created build-out');
});

test('a deny in toolPolicy blocks the call inside the sub-agent: no card, nothing done', async () => {
  h = await start('tools: [mkdir, spawn_subagent]', 'tier: low-risk', 'toolPolicy: { mkdir: deny }');
  h.script(spawn({ task: 'Create the folder x.' }), { toolUses: [{ name: 'mkdir', input: { path: 'x' } }] }, { text: 'could not' }, { text: 'ok' });
  await h.adapter.send('go');
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('ok');
  expect(h.adapter.cards).toHaveLength(0);
  expect(existsSync(join(h.workspace, 'x'))).toBe(false);
  const reqs = h.modelRequests();
  expect(isSub(reqs[2]!)).toBe(true);
  expect(lastResult(reqs[2]!)).toMatch(/toolPolicy/);
  expect(lastResult(reqs[3]!)).toBe('could not');
  // The same audit trail as the parent's calls: the decision is recorded under the run.
  expect(audit.filter((e) => e['event'] === 'gate_decision' && e['tool'] === 'mkdir')).toEqual([
    expect.objectContaining({ decision: 'deny', rule: 'agents.default.toolPolicy["mkdir"]', conversation: 'console:main', origin: 'sub-agent' }),
  ]);
});

test('"Always" on a sub-agent\'s card adds what the parent\'s own card would: that tool, nothing more', async () => {
  h = await start('tools: [mkdir, rm, spawn_subagent]', 'tier: low-risk');
  h.script(
    spawn({ task: 'Create the folder a.' }),
    { toolUses: [{ name: 'mkdir', input: { path: 'a' } }] },
    { text: 'made a' },
    { toolUses: [{ name: 'mkdir', input: { path: 'b' } }] },
    { toolUses: [{ name: 'rm', input: { path: 'a' } }] },
    { text: 'done' },
  );
  await h.adapter.send('go');
  const card = await waitFor('card', () => h!.adapter.cards[0]);
  expect(card.card.buttons.map((b) => b.label)).toContain('Always allow mkdir');
  expect((await h.adapter.click(card, 'Always allow mkdir')).accepted).toBe(true);
  // The parent's own mkdir now runs without a card, as after its own Always; its rm still asks.
  const rmCard = await waitFor('rm card', () => h!.adapter.cards[1]);
  expect(rmCard.card.title).toBe('Approve rm?');
  expect(existsSync(join(h.workspace, 'b'))).toBe(true);
  expect(h.adapter.cards).toHaveLength(2);
  expect((await h.adapter.click(rmCard, 'Deny')).accepted).toBe(true);
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('done');
  expect(existsSync(join(h.workspace, 'a'))).toBe(true);
});

test('tools the parent lacks, or that ask the user, are refused and no sub-agent starts', async () => {
  h = await start('tools: [read_file, ask_user_question, spawn_subagent]', 'tier: low-risk');
  h.script(spawn({ task: 'Run ls -la.', tools: ['read_file', 'execute_command', 'ask_user_question'] }), { text: 'ok' });
  await h.adapter.send('go');
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('ok');
  const reqs = h.modelRequests();
  expect(reqs.map(isSub)).toEqual([false, false]);
  const result = lastResult(reqs[1]!);
  expect(result).toContain("execute_command is not in this agent's toolset");
  expect(result).toContain('ask_user_question asks the user');
});

test('depth: at maxDepth 1 a sub-agent cannot get spawn_subagent; at 2 it spawns one that cannot', async () => {
  h = await start('tools: [read_file, spawn_subagent]', 'tier: low-risk');
  h.script(spawn({ task: 'Delegate further.', tools: ['spawn_subagent'] }), { text: 'ok' });
  await h.adapter.send('go');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  expect(lastResult(h.modelRequests()[1]!)).toMatch(/agents\.default\.subagents\.maxDepth is 1/);
  await h.close();

  h = await start('tools: [read_file, spawn_subagent]', 'tier: low-risk', 'subagents: { maxDepth: 2 }');
  h.script(spawn({ task: 'level one' }), spawn({ task: 'level two' }), { text: 'answer from two' }, { text: 'answer from one' }, { text: 'top' });
  await h.adapter.send('go');
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('top');
  const reqs = h.modelRequests();
  expect(toolNames(reqs[1]!)).toEqual(['read_file', 'spawn_subagent']);
  expect(toolNames(reqs[2]!)).toEqual(['read_file']);
  expect(lastResult(reqs[3]!)).toBe('answer from two');
  expect(lastResult(reqs[4]!)).toBe('answer from one');
});

test('count: past maxPerRun the spawn is refused naming the key', async () => {
  h = await start('tools: [read_file, spawn_subagent]', 'tier: low-risk', 'subagents: { maxPerRun: 1 }');
  h.script(spawn({ task: 'first' }), { text: 'first done' }, spawn({ task: 'second' }), { text: 'top' });
  await h.adapter.send('go');
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('top');
  const reqs = h.modelRequests();
  expect(reqs.map(isSub)).toEqual([false, true, false, false]);
  expect(lastResult(reqs[3]!)).toMatch(/already started 1 sub-agents, the most agents\.default\.subagents\.maxPerRun \(1\) allows/);
});

test('count: two spawns in one turn under maxPerRun 1 start one sub-agent; the other is refused', async () => {
  h = await start('tools: [read_file, spawn_subagent]', 'tier: low-risk', 'subagents: { maxPerRun: 1 }');
  h.script(
    {
      toolUses: [
        { name: 'spawn_subagent', input: { task: 'one' } },
        { name: 'spawn_subagent', input: { task: 'two' } },
      ],
    },
    { text: 'a sub answer' },
    { text: 'top' },
  );
  await h.adapter.send('go');
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('top');
  const reqs = h.modelRequests();
  expect(reqs.map(isSub)).toEqual([false, true, false]);
  const results = JSON.stringify(body(reqs[2]!).messages.at(-1));
  expect(results).toContain('a sub answer');
  expect(results).toContain('maxPerRun (1) allows');
});

test("/stop during a sub-agent's model call ends it; the model sees no request after the stop", async () => {
  h = await start('tools: [read_file, spawn_subagent]', 'tier: low-risk');
  h.script(spawn({ task: 'think for a long time' }), { hang: true });
  await h.adapter.send('go');
  await waitFor('sub-agent request', () => h!.modelRequests().find(isSub));
  await h.adapter.send('/stop');
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('Stopped.');
  await waitFor('run finished', () => h!.adapter.eventsOf('console:main', 'run_finished')[0]);
  expect(h.modelRequests()).toHaveLength(2);
  expect(h.adapter.eventsOf('console:main', 'run_finished')[0]).toMatchObject({ reason: 'stopped' });
});

test('/stop while a sub-agent call waits for its approval: nothing runs, the model sees no request after the stop', async () => {
  h = await start('tools: [mkdir, spawn_subagent]', 'tier: low-risk');
  h.script(spawn({ task: 'Create the folder late.' }), { toolUses: [{ name: 'mkdir', input: { path: 'late' } }] }, { text: 'should not be asked for' });
  await h.adapter.send('go');
  await waitFor('card', () => h!.adapter.cards[0]);
  await h.adapter.send('/stop');
  await waitFor('run finished', () => h!.adapter.eventsOf('console:main', 'run_finished')[0]);
  expect(h.adapter.answers()).toEqual(['Stopped.']);
  expect(h.modelRequests()).toHaveLength(2);
  expect(existsSync(join(h.workspace, 'late'))).toBe(false);
  // Its card is closed with the run, as the parent's own would be.
  await waitFor('card closed', () => h!.adapter.cards[0]!.updates.at(-1)?.outcome);
  expect(h.adapter.cards[0]!.updates.at(-1)!.outcome).toMatch(/the run was stopped/);
});

test('maxTurns ends a sub-agent without an answer; the parent is told which key', async () => {
  h = await start('tools: [ls, spawn_subagent]', 'tier: low-risk', 'subagents: { maxTurns: 1 }');
  h.script(spawn({ task: 'List forever.' }), { toolUses: [{ name: 'ls', input: {} }] }, { text: 'gave up' });
  await h.adapter.send('go');
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('gave up');
  const reqs = h.modelRequests();
  expect(reqs.map(isSub)).toEqual([false, true, false]);
  expect(lastResult(reqs[2]!)).toMatch(/made 1 model calls without a final answer \(agents\.default\.subagents\.maxTurns\)/);
});

test("a sub-agent's model calling a tool it was not given (the parent has it) gets Unknown tool: no card, nothing done", async () => {
  h = await start('tools: [ls, mkdir, spawn_subagent]', 'tier: low-risk');
  h.script(
    spawn({ task: 'Look around.', tools: ['ls'] }),
    {
      toolUses: [
        { name: 'mkdir', input: { path: 'sneaky' } },
        { name: 'spawn_subagent', input: { task: 'deeper' } },
      ],
    },
    { text: 'only looked' },
    { text: 'ok' },
  );
  await h.adapter.send('go');
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('ok');
  expect(h.adapter.cards).toHaveLength(0);
  expect(existsSync(join(h.workspace, 'sneaky'))).toBe(false);
  const results = JSON.stringify(body(h.modelRequests()[2]!).messages.at(-1));
  expect(results).toContain('Unknown tool \\"mkdir\\". Available tools: ls.');
  expect(results).toContain('Unknown tool \\"spawn_subagent\\". Available tools: ls.');
  expect(h.modelRequests().filter(isSub)).toHaveLength(2);
});

test('a restart while a sub-agent waits for an approval: the spawn is reported interrupted, never run twice', async () => {
  h = await start('tools: [mkdir, spawn_subagent]', 'tier: low-risk');
  h.script(spawn({ task: 'Create the folder r.' }), { toolUses: [{ name: 'mkdir', input: { path: 'r' } }] });
  await h.adapter.send('go');
  await waitFor('card', () => h!.adapter.cards[0]);
  await h.restart();
  h.script({ text: 'it was interrupted' });
  expect(await waitFor('answer after restart', () => h!.adapter.answers()[0])).toBe('it was interrupted');
  const reqs = h.modelRequests();
  expect(reqs.map(isSub)).toEqual([false, true, false]);
  expect(lastResult(reqs[2]!)).toMatch(/spawn_subagent was interrupted by a restart/);
  expect(existsSync(join(h.workspace, 'r'))).toBe(false);
  // Its card, shown again after the restart, is closed with the reason: nobody waits on it any more.
  const stale = h.adapter.cards[0]!;
  expect(stale.card.title).toBe('Sub-agent: approve mkdir?');
  await waitFor('stale card closed', () => stale.updates.at(-1)?.outcome);
  expect(stale.updates.at(-1)!.outcome).toMatch(/interrupted by a restart/);
  expect((await h.adapter.click(stale, 'Approve once', { user: 'local' })).accepted).toBe(false);
  await h.gh.runner.idle();
  expect(existsSync(join(h.workspace, 'r'))).toBe(false);
  expect(h.modelRequests()).toHaveLength(3);
});

test("no approver bound for the platform: the sub-agent's above-tier call is declined with the reason, no card", async () => {
  const harness = await Harness.start({ yaml: agentYaml('tools: [mkdir, spawn_subagent]', 'tier: low-risk', 'approvers: { telegram: ["42"] }') });
  h = harness;
  mkdirSync(harness.workspace, { recursive: true });
  h.script(spawn({ task: 'Create the folder n.' }), { toolUses: [{ name: 'mkdir', input: { path: 'n' } }] }, { text: 'not allowed' }, { text: 'ok' });
  await h.adapter.send('go');
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('ok');
  expect(h.adapter.cards).toHaveLength(0);
  expect(existsSync(join(h.workspace, 'n'))).toBe(false);
  expect(lastResult(h.modelRequests()[2]!)).toMatch(/^Declined: mkdir needs approval.*no approver is bound/s);
  const declined = h.adapter.eventsOf('console:main', 'tool_declined');
  expect(declined).toEqual([expect.objectContaining({ tool: 'mkdir', reason: expect.stringMatching(/^sub-agent: Declined: mkdir/) })]);
});

test('a long sub-agent task near the window: its own older turns are summarized, its usage counts, and it still answers', async () => {
  h = await start('tools: [read_file, spawn_subagent]', 'tier: low-risk', 'contextWindowTokens: 20000', 'maxTokens: 1000');
  const filler = (n: number) => `part ${n} ${'lorem ipsum dolor sit amet '.repeat(450)}`; // ~3,000 tokens each
  for (let i = 1; i <= 6; i++) writeFileSync(join(h.workspace, `part${i}.txt`), filler(i));
  const summaries: RecordedRequest[] = [];
  const summary = { text: 'SUB-SUMMARY: parts 1-4 were read; all lorem ipsum.', usage: { input_tokens: 5000, output_tokens: 50 } };
  h.fake.setHandler((req) => {
    if (body(req).system === SUMMARY_SYSTEM) return (summaries.push(req), summary);
    const next = h!.mainQueue.shift();
    return next === undefined ? { text: '(no scripted reply)' } : typeof next === 'function' ? next(req) : next;
  });
  const read = (i: number) => ({ toolUses: [{ name: 'read_file', input: { path: `part${i}.txt` } }] });
  h.script(
    spawn({ task: 'Read part1.txt to part6.txt, one by one, and say what they hold.' }),
    read(1),
    read(2),
    read(3),
    read(4),
    read(5),
    read(6),
    {
      text: 'They all hold lorem ipsum.',
    },
    { text: 'The sub-agent says: lorem ipsum.' },
  );
  await h.adapter.send('what do the parts hold?');
  expect(await waitFor('answer', () => h!.adapter.answers()[0])).toBe('The sub-agent says: lorem ipsum.');

  // The summarizer ran on the sub-agent's transcript (its task is in what it summarized), not the parent's.
  expect(summaries.length).toBeGreaterThanOrEqual(1);
  expect(JSON.stringify(body(summaries[0]!).messages)).toContain('Read part1.txt to part6.txt');
  const subs = h.modelRequests().filter(isSub);
  const last = subs.at(-1)!;
  expect(JSON.stringify(body(last).messages)).toContain(SUMMARY_MARKER);
  expect(JSON.stringify(body(last).messages)).toContain('SUB-SUMMARY');
  const sizes = subs.map((r) => JSON.stringify(body(r).messages).length);
  expect(sizes.at(-1)).toBeLessThan(Math.max(...sizes));
  // The parent's transcript was never summarized: its next request holds no summary.
  expect(JSON.stringify(body(h.modelRequests().at(-1)!).messages)).not.toContain(SUMMARY_MARKER);
  const usage = (await waitFor('usage', () => h!.adapter.eventsOf('console:main', 'usage')[0])) as Extract<AgentEvent, { type: 'usage' }>;
  expect(usage.subagents!.usage.inputTokens).toBeGreaterThanOrEqual(5000 * summaries.length);
});
