/**
 * Issue 4 end to end: approval and question cards through the adapter seam, against the fake model.
 * Attackers here: a non-approver tapping, a replayed token, a token from another conversation, a
 * forged token, a model trying to pre-select a picker option.
 */
import { ENGINES, type Harness, harnessOn, waitFor } from '../helpers/harness.js';
import { countingTool, pickerTool, runsLog } from '../helpers/tools.js';
import { askReply } from '../helpers/questions.js';

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const YAML = `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [deploy_counter, pick_region, ask_user_question, execute_command, write_file]
    tier: read-only
    workspace: "{{workspace}}"
    approvers: { console: [local] }
    approvalTimeoutMs: 60000
    questionTimeoutMs: 60000
`;

describe.each(ENGINES)('on %s', (engine) => {
  const harness = harnessOn(engine);

  async function start(yaml = YAML): Promise<Harness> {
    return harness.start({ yaml, extraTools: [countingTool(), pickerTool()] });
  }

  function toolResults(req: { body: unknown }): Array<{ content: unknown; is_error?: boolean }> {
    const msgs = (req.body as { messages: Array<{ content: Array<{ type: string }> }> }).messages;
    return msgs.at(-1)!.content.filter((b) => b.type === 'tool_result') as unknown as Array<{ content: unknown; is_error?: boolean }>;
  }

  test('a non-approver (even the person who asked) changes nothing; the approver decides', async () => {
    h = await start();
    h.script({ toolUses: [{ name: 'deploy_counter', input: { label: 'v1' } }] }, { text: 'deployed' });
    await h.adapter.send('deploy v1', { user: 'alice' });
    const card = await waitFor('card', () => h.adapter.cards[0]);
    const byAsker = await h.adapter.click(card, 'Approve once', { user: 'alice' });
    expect(byAsker.accepted).toBe(false);
    expect(byAsker.notice).toMatch(/Only a bound approver/);
    const byStranger = await h.adapter.click(card, 'Approve once', { user: 'mallory' });
    expect(byStranger.accepted).toBe(false);
    expect(runsLog(h.workspace)).toEqual([]);
    expect(card.updates).toHaveLength(0);
    const ok = await h.adapter.click(card, 'Approve once', { user: 'local' });
    expect(ok.accepted).toBe(true);
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(runsLog(h.workspace)).toEqual(['v1']);
  });

  test('replayed, foreign-conversation and forged tokens change nothing and get a notice', async () => {
    h = await start();
    h.script(
      { toolUses: [{ name: 'deploy_counter', input: { label: 'a' } }] },
      { toolUses: [{ name: 'deploy_counter', input: { label: 'b' } }] },
      { text: 'done a' },
      { text: 'done b' },
    );
    await h.adapter.send('deploy a', { conversation: 'a' });
    await h.adapter.send('deploy b', { conversation: 'b' });
    const cardA = await waitFor('card a', () => h.adapter.cards.find((c) => c.key === 'console:a'));
    const cardB = await waitFor('card b', () => h.adapter.cards.find((c) => c.key === 'console:b'));

    // A's token clicked in conversation B: refused.
    const approveA = cardA.card.buttons[0]!.token;
    const foreign = await h.adapter.clickToken(approveA, { user: 'local', conversation: 'b' });
    expect(foreign).toEqual({ accepted: false, notice: expect.stringMatching(/another conversation/) });
    // Forged tokens: well-formed but unknown, and malformed.
    expect((await h.adapter.clickToken('AAAAAAAAAAAAAAAAAAAAAAAA', { user: 'local', conversation: 'a' })).accepted).toBe(false);
    expect((await h.adapter.clickToken('../../etc/passwd', { user: 'local', conversation: 'a' })).accepted).toBe(false);
    expect(runsLog(h.workspace)).toEqual([]);

    // First valid click wins; the same token again, or another button of the same card, is a replay.
    expect((await h.adapter.clickToken(approveA, { user: 'local', conversation: 'a' })).accepted).toBe(true);
    const replay = await h.adapter.clickToken(approveA, { user: 'local', conversation: 'a' });
    expect(replay.accepted).toBe(false);
    expect(replay.notice).toMatch(/Already decided/);
    const denyAfter = await h.adapter.click(cardA, 'Deny', { user: 'local' });
    expect(denyAfter.accepted).toBe(false);
    await waitFor('a answered', () => h.adapter.answers('console:a')[0]);
    expect(runsLog(h.workspace)).toEqual(['a']);

    // B is untouched by all of the above.
    expect(cardB.updates).toHaveLength(0);
    await h.adapter.click(cardB, 'Deny', { user: 'local' });
    await waitFor('b answered', () => h.adapter.answers('console:b')[0]);
    expect(runsLog(h.workspace)).toEqual(['a']);
  });

  test('the same platform event delivered twice (a platform retry) is handled once', async () => {
    h = await start();
    h.script({ toolUses: [{ name: 'deploy_counter', input: { label: 'x' } }] }, { text: 'ok' });
    await h.adapter.send('deploy');
    const card = await waitFor('card', () => h.adapter.cards[0]);
    const first = await h.adapter.click(card, 'Approve once', { user: 'local', eventId: 'same-event' });
    const retry = await h.adapter.click(card, 'Approve once', { user: 'local', eventId: 'same-event' });
    expect(first.accepted).toBe(true);
    expect(retry.accepted).toBe(false);
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(runsLog(h.workspace)).toEqual(['x']);
  });

  test('Always approve for a command key: the same key then runs without a card, also after a restart', async () => {
    h = await start();
    h.classifierReply = { text: 'high-risk' };
    h.script(
      { toolUses: [{ name: 'execute_command', input: { command: 'git status --short' } }] },
      { text: 'status shown' },
      { toolUses: [{ name: 'execute_command', input: { command: 'git status' } }] },
      { text: 'again' },
    );
    await h.adapter.send('status please');
    const card = await waitFor('card', () => h.adapter.cards[0]);
    const always = card.card.buttons.find((b) => b.label.startsWith('Always'));
    expect(always?.label).toContain('git status');
    await h.adapter.click(card, 'Always', { user: 'local' });
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(card.updates.at(-1)?.outcome).toMatch(/Always approved by local/);

    await h.gh.runner.idle();
    await h.restart();
    await h.adapter.send('status again');
    await waitFor('answer after restart', () => h.adapter.answers()[0]);
    expect(h.adapter.cards).toHaveLength(0);
    // A compound command does not ride on the `git status` entry.
    h.script({ toolUses: [{ name: 'execute_command', input: { command: 'git status && touch pwned' } }] }, { text: 'asked' });
    await h.adapter.send('and this');
    const second = await waitFor('card for compound', () => h.adapter.cards[0]);
    expect(second.card.title).toMatch(/execute_command/);
    await h.adapter.click(second, 'Deny', { user: 'local' });
    await waitFor('answer', () => h.adapter.answers()[1]);
  });

  test('Always for a tool covers the other queued card of the same turn; approve-all card appears', async () => {
    h = await start();
    h.script(
      {
        toolUses: [
          { name: 'deploy_counter', input: { label: 'one' } },
          { name: 'deploy_counter', input: { label: 'two' } },
        ],
      },
      { text: 'both done' },
    );
    await h.adapter.send('deploy twice');
    await waitFor('three cards', () => h.adapter.cards.length === 3);
    const [c1, c2, all] = h.adapter.cards;
    expect(all!.card.kind).toBe('approve_all');
    await h.adapter.click(c1!, 'Always', { user: 'local' });
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(runsLog(h.workspace).sort()).toEqual(['one', 'two']);
    expect(c2!.updates.at(-1)?.outcome).toMatch(/covered by an Always/);
  });

  test('Approve all decides every card of the turn, and only for an approver', async () => {
    h = await start();
    h.script(
      {
        toolUses: [
          { name: 'deploy_counter', input: { label: 'x' } },
          { name: 'deploy_counter', input: { label: 'y' } },
        ],
      },
      { text: 'done' },
    );
    await h.adapter.send('deploy x and y');
    await waitFor('three cards', () => h.adapter.cards.length === 3);
    const all = h.adapter.cards[2]!;
    expect((await h.adapter.click(all, 'Approve all', { user: 'mallory' })).accepted).toBe(false);
    expect(runsLog(h.workspace)).toEqual([]);
    expect((await h.adapter.click(all, 'Approve all', { user: 'local' })).accepted).toBe(true);
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(runsLog(h.workspace).sort()).toEqual(['x', 'y']);
    for (const c of h.adapter.cards.slice(0, 2)) expect(c.updates.at(-1)?.outcome).toMatch(/Approve all/);
  });

  test('a picker: one button per option plus Deny; the chosen id reaches execute, the model cannot set it', async () => {
    // Even at high-risk tier a picker is never auto-approved.
    h = await start(YAML.replace('tier: read-only', 'tier: high-risk'));
    h.script({ toolUses: [{ name: 'pick_region', input: { service: 'api', _selectedOptionId: 'us-east' } }] }, { text: 'deployed' });
    await h.adapter.send('deploy the api');
    const card = await waitFor('card', () => h.adapter.cards[0]);
    expect(card.card.kind).toBe('picker');
    expect(card.card.buttons.map((b) => b.label)).toEqual(['EU West', 'US East', 'Deny']);
    await h.adapter.click(card, 'EU West', { user: 'local' });
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(String(toolResults(h.modelRequests()[1]!)[0]!.content)).toBe('deployed api to eu-west');
  });

  test('questions: answered by a button; by typed text; a stranger is ignored; nobody answers', async () => {
    h = await start(YAML.replace('questionTimeoutMs: 60000', 'questionTimeoutMs: 400'));
    const ask = (q: string) =>
      askReply(
        q,
        [
          { value: 'blue-value', label: 'Blue' },
          { value: 'red', label: 'Red' },
        ],
        true,
      );
    // 1. by button, clicked by the person who asked (not an approver, but the asker may answer).
    h.script(ask('Which colour?'), { text: 'blue it is' });
    await h.adapter.send('pick a colour', { user: 'alice' });
    const q1 = await waitFor('question card', () => h.adapter.cards[0]);
    expect(q1.card.kind).toBe('question');
    expect((await h.adapter.click(q1, 'Blue', { user: 'mallory' })).accepted).toBe(false);
    expect((await h.adapter.click(q1, 'Blue', { user: 'alice' })).accepted).toBe(true);
    await waitFor('answer 1', () => h.adapter.answers()[0]);
    expect(String(toolResults(h.modelRequests()[1]!)[0]!.content)).toContain('blue-value');

    // 2. by typed text; a stranger's typed text does not answer it.
    h.script(ask('Which size?'), { text: 'large it is' });
    await h.adapter.send('pick a size', { user: 'alice' });
    await waitFor('question 2', () => h.adapter.cards[1]);
    await h.adapter.send('tiny, says mallory', { user: 'mallory' });
    await h.adapter.send('large please', { user: 'alice' });
    await waitFor('answer 2', () => h.adapter.answers()[1]);
    const results = toolResults(h.modelRequests()[3]!);
    expect(String(results[0]!.content)).toContain('large please');
    expect(String(results[0]!.content)).not.toContain('mallory');

    // 3. nobody answers in time.
    await h.gh.runner.idle();
    h.script(ask('Which day?'), { text: 'assuming Monday' });
    await h.adapter.send('pick a day', { user: 'alice' });
    await waitFor('answer 3', () => h.adapter.answers().includes('assuming Monday'));
    const noAnswer = h.modelRequests().at(-1)!;
    expect(String(toolResults(noAnswer)[0]!.content)).toMatch(/Nobody answered/);
    expect(h.adapter.cards[2]!.updates.at(-1)?.outcome).toMatch(/No answer/);
  });

  test('a restart while waiting: the click after it continues the run and the tool runs exactly once', async () => {
    h = await start();
    h.script({ toolUses: [{ name: 'deploy_counter', input: { label: 'prod' } }] });
    await h.adapter.send('deploy prod');
    const card = await waitFor('card', () => h.adapter.cards[0]);
    const approveToken = card.card.buttons[0]!.token;
    await h.restart();
    h.script({ text: 'prod is deployed' });
    // The click arrives at the new process, with the token the old card carried.
    const r = await h.adapter.clickToken(approveToken, { user: 'local' });
    expect(r.accepted).toBe(true);
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(h.adapter.answers()).toEqual(['prod is deployed']);
    expect(runsLog(h.workspace)).toEqual(['prod']);
    // The replayed click and another restart run nothing again.
    await h.gh.runner.idle();
    expect((await h.adapter.clickToken(approveToken, { user: 'local' })).accepted).toBe(false);
    await h.restart();
    await h.gh.runner.idle();
    expect(runsLog(h.workspace)).toEqual(['prod']);
  });

  test('a call that was executing when the process died is reported, not run again', async () => {
    h = await start();
    h.script({ toolUses: [{ name: 'deploy_counter', input: { label: 'hang' } }] });
    await h.adapter.send('deploy');
    const card = await waitFor('card', () => h.adapter.cards[0]);
    await h.adapter.click(card, 'Approve once', { user: 'local' });
    await waitFor('started', () => runsLog(h.workspace).length === 1);
    // The process dies mid-execution: the decision and the start were recorded, the result was not.
    await h.restart();
    h.script({ text: 'recovered' });
    await waitFor('answer after restart', () => h.adapter.answers()[0]);
    expect(runsLog(h.workspace)).toEqual(['hang']);
    const result = toolResults(h.modelRequests().at(-1)!)[0]!;
    expect(result.is_error).toBe(true);
    expect(String(result.content)).toMatch(/interrupted by a restart/);
  });

  test('a crash during the model call after a tool ran: the run continues after the restart, the tool is not re-run', async () => {
    h = await start();
    h.script({ toolUses: [{ name: 'deploy_counter', input: { label: 'once' } }] }, { hang: true });
    await h.adapter.send('deploy once');
    const card = await waitFor('card', () => h.adapter.cards[0]);
    await h.adapter.click(card, 'Approve once', { user: 'local' });
    await waitFor('second model call', () => h.modelRequests().length === 2);
    await h.restart();
    h.script({ text: 'recovered' });
    await waitFor('answer after restart', () => h.adapter.answers()[0]);
    expect(runsLog(h.workspace)).toEqual(['once']);
  });

  test('a restart while a question waits: the answer after it continues the run', async () => {
    h = await start();
    h.script({ toolUses: [{ name: 'ask_user_question', input: { question: 'Ship it?', suggestions: [{ value: 'yes', label: 'Yes' }], allowCustom: true } }] });
    await h.adapter.send('ask me', { user: 'alice' });
    const card = await waitFor('question card', () => h.adapter.cards[0]);
    await h.restart();
    h.script({ text: 'shipping' });
    // Shown again after the restart: the same question (same buttons), not a new one.
    const again = await waitFor('question shown again', () => h.adapter.cards[0]);
    expect(again.card.buttons.map((b) => b.token)).toEqual(card.card.buttons.map((b) => b.token));
    // The asker's typed answer reaches the resumed run.
    await h.adapter.send('yes, ship it', { user: 'alice' });
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(h.adapter.answers()).toEqual(['shipping']);
    expect(h.adapter.cards).toHaveLength(1);
    expect(again.updates.at(-1)?.outcome).toMatch(/Answered by alice/);
    expect(String(toolResults(h.modelRequests().at(-1)!)[0]!.content)).toContain('yes, ship it');
    void card;
  });
});
