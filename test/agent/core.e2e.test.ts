/**
 * Issue 2 end to end: the real Gatehouse (router, runner, executor, gate, SQLite store, the real
 * Anthropic SDK) against the fake model server, driven through the adapter seam.
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_YAML, ENGINES, type Harness, harnessOn, agentYaml, waitFor } from '../helpers/harness.js';
import type { RecordedRequest } from '../fakes/anthropic.js';
import { fakeClock } from '../helpers/fake-clock.js';

let h: Harness;
afterEach(async () => {
  await h?.close();
});

function lastToolResults(req: { body: unknown }): Array<{ content: unknown; is_error?: boolean }> {
  const msgs = (req.body as { messages: Array<{ role: string; content: Array<{ type: string; content?: unknown; is_error?: boolean }> }> }).messages;
  const last = msgs[msgs.length - 1]!;
  return last.content.filter((b) => b.type === 'tool_result') as Array<{ content: unknown; is_error?: boolean }>;
}

describe.each(ENGINES)('on %s', (engine) => {
  const harness = harnessOn(engine);

  test('a plain answer streams and is delivered once, with usage and cost', async () => {
    h = await harness.start();
    h.script({ text: 'Hello there, how can I help?' });
    await h.adapter.send('hi');
    await waitFor('answer', () => h.adapter.answers()[0]);
    await h.gh.runner.idle();
    expect(h.adapter.answers()).toEqual(['Hello there, how can I help?']);
    const deltas = h.adapter.eventsOf('console:main', 'text').map((e) => (e.type === 'text' ? e.delta : ''));
    expect(deltas.join('')).toBe('Hello there, how can I help?');
    const usage = h.adapter.eventsOf('console:main', 'usage')[0];
    expect(usage?.type === 'usage' && usage.usage.costKnown).toBe(true);
    expect(usage?.type === 'usage' && usage.usage.costUSD).toBeGreaterThan(0);
    const types = h.adapter.eventsOf('console:main').map((e) => e.type);
    expect(types[0]).toBe('run_started');
    expect(types.slice(-2)).toEqual(['usage', 'run_finished']);
  });

  test('an adapter that shows only whole answers gets them without a streamed request', async () => {
    h = await harness.start();
    h.adapter.streamsText = false;
    h.script({ text: 'Whole answer.' });
    await h.adapter.send('hello');
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(h.adapter.answers()).toEqual(['Whole answer.']);
    expect(h.adapter.eventsOf('console:main', 'text')).toEqual([]);
    expect((h.modelRequests()[0]!.body as { stream?: boolean }).stream).toBe(false);
  });

  test('a tool loop: read_file runs, its result reaches the model, then the answer', async () => {
    h = await harness.start();
    mkdirSync(h.workspace, { recursive: true });
    writeFileSync(join(h.workspace, 'notes.txt'), 'the secret word is pineapple\n');
    h.script({ toolUses: [{ name: 'read_file', input: { path: 'notes.txt' } }] }, { text: 'The word is pineapple.' });
    await h.adapter.send('what is the word in notes.txt?');
    await waitFor('answer', () => h.adapter.answers()[0]);
    const second = h.modelRequests()[1]!;
    const results = lastToolResults(second);
    expect(JSON.stringify(results[0]!.content)).toContain('pineapple');
    expect(results[0]!.is_error).toBeFalsy();
    expect(h.adapter.eventsOf('console:main', 'tool_finished')).toHaveLength(1);
    expect(h.adapter.cards).toHaveLength(0);
  });

  test('a model that offers a tool outside its toolset gets an error result, not a crash', async () => {
    h = await harness.start();
    h.script({ toolUses: [{ name: 'delete_everything', input: {} }] }, { text: 'ok' });
    await h.adapter.send('go');
    await waitFor('answer', () => h.adapter.answers()[0]);
    const r = lastToolResults(h.modelRequests()[1]!)[0]!;
    expect(r.is_error).toBe(true);
    expect(String(r.content)).toMatch(/Unknown tool "delete_everything"/);
  });

  test('malformed tool arguments come back as an error result the model can fix', async () => {
    h = await harness.start();
    h.script({ toolUses: [{ name: 'read_file', input: { path: 42, bogus: true } }] }, { text: 'sorry' });
    await h.adapter.send('read');
    await waitFor('answer', () => h.adapter.answers()[0]);
    const r = lastToolResults(h.modelRequests()[1]!)[0]!;
    expect(r.is_error).toBe(true);
    expect(String(r.content)).toMatch(/Invalid arguments for read_file/);
    expect(String(r.content)).toMatch(/path/);
  });

  test('path escapes are refused: .., absolute outside, and a symlink that leads out', async () => {
    h = await harness.start();
    mkdirSync(h.workspace, { recursive: true });
    writeFileSync(join(h.dir, 'outside.txt'), 'TOP SECRET');
    symlinkSync(join(h.dir, 'outside.txt'), join(h.workspace, 'link.txt'));
    h.script(
      {
        toolUses: [
          { name: 'read_file', input: { path: '../outside.txt' } },
          { name: 'read_file', input: { path: join(h.dir, 'outside.txt') } },
          { name: 'read_file', input: { path: 'link.txt' } },
        ],
      },
      { text: 'could not' },
    );
    await h.adapter.send('read the secret');
    await waitFor('answer', () => h.adapter.answers()[0]);
    const results = lastToolResults(h.modelRequests()[1]!);
    expect(results).toHaveLength(3);
    for (const r of results) {
      expect(r.is_error).toBe(true);
      expect(JSON.stringify(r.content)).not.toContain('TOP SECRET');
    }
  });

  test('a gated call: approve runs it, and the card shows who decided', async () => {
    h = await harness.start();
    h.script({ toolUses: [{ name: 'write_file', input: { path: 'hello.txt', content: 'hi\n' } }] }, { text: 'written' });
    await h.adapter.send('write hello.txt');
    const card = await waitFor('card', () => h.adapter.cards[0]);
    expect(card.card.kind).toBe('approval');
    expect(card.card.preview).toContain('+hi');
    expect(() => readFileSync(join(h.workspace, 'hello.txt'))).toThrow(); // propose mutates nothing
    const r = await h.adapter.click(card, 'Approve once', { user: 'local' });
    expect(r.accepted).toBe(true);
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(readFileSync(join(h.workspace, 'hello.txt'), 'utf8')).toBe('hi\n');
    expect(card.updates.at(-1)?.outcome).toMatch(/Approved once by local/);
    expect(card.updates.at(-1)?.buttons).toHaveLength(0);
  });

  test('a gated call: deny does not run it and the model is told', async () => {
    h = await harness.start();
    h.script({ toolUses: [{ name: 'write_file', input: { path: 'x.txt', content: 'x' } }] }, { text: 'ok, not writing' });
    await h.adapter.send('write x');
    const card = await waitFor('card', () => h.adapter.cards[0]);
    await h.adapter.click(card, 'Deny');
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(() => readFileSync(join(h.workspace, 'x.txt'))).toThrow();
    const r = lastToolResults(h.modelRequests()[1]!)[0]!;
    expect(r.is_error).toBe(true);
    expect(String(r.content)).toMatch(/did not run: denied by local/);
    expect(card.updates.at(-1)?.outcome).toMatch(/Denied by local/);
  });

  test('a gated call nobody decides expires: not run, card says so, model told', async () => {
    h = await harness.start({
      yaml: agentYaml('tools: [write_file]', 'tier: read-only', 'approvers: { console: [local] }', 'approvalTimeoutMs: 150'),
    });
    h.script({ toolUses: [{ name: 'write_file', input: { path: 'x.txt', content: 'x' } }] }, { text: 'it expired' });
    await h.adapter.send('write x');
    const card = await waitFor('card', () => h.adapter.cards[0]);
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(card.updates.at(-1)?.outcome).toMatch(/Expired/);
    expect(String(lastToolResults(h.modelRequests()[1]!)[0]!.content)).toMatch(/expired/);
    expect(() => readFileSync(join(h.workspace, 'x.txt'))).toThrow();
    const late = await h.adapter.click(card, 'Approve once');
    expect(late.accepted).toBe(false);
  });

  test('with no approver bound the call is declined at once, with no card, naming the fix', async () => {
    h = await harness.start({
      yaml: agentYaml('tools: [write_file]', 'tier: read-only', 'approvers: { telegram: ["123"] }'),
    });
    h.script({ toolUses: [{ name: 'write_file', input: { path: 'x.txt', content: 'x' } }] }, { text: 'declined' });
    await h.adapter.send('write x');
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(h.adapter.cards).toHaveLength(0);
    const r = lastToolResults(h.modelRequests()[1]!)[0]!;
    expect(r.is_error).toBe(true);
    expect(String(r.content)).toContain('agents.default.approvers.console');
    expect(String(r.content)).toContain('autoApprovedTools');
  });

  test('two conversations run in parallel while one conversation stays serial', async () => {
    h = await harness.start();
    // A's first reply is slow. If conversations ran one after another, B would wait behind it.
    h.script({ text: 'A1', delayMs: 1500 }, { text: 'B1' }, { text: 'A2' });
    await h.adapter.send('first in A', { conversation: 'a' });
    await waitFor('A asked the model', () => h.modelRequests().length === 1);
    await h.adapter.send('first in B', { conversation: 'b' });
    await h.adapter.send('second in A', { conversation: 'a' });
    await waitFor('all answers', () => h.adapter.answers('console:a').length === 2 && h.adapter.answers('console:b').length === 1);
    // Parallel: B was answered while A's first turn was still waiting for the model.
    const order = h.adapter.events.filter((e) => e.event.type === 'answer').map((e) => (e.event.type === 'answer' ? e.event.text : ''));
    expect(order).toEqual(['B1', 'A1', 'A2']);
    // Serial: A's second turn started after its first, and saw its answer.
    const reqs = h.modelRequests();
    expect(reqs).toHaveLength(3);
    const aSecond = reqs[2]!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(JSON.stringify(aSecond.messages)).toContain('A1');
    expect(aSecond.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(h.adapter.answers('console:a')).toEqual(['A1', 'A2']);
  });

  test('a 429 with retry-after, then success: the user sees only the answer', async () => {
    h = await harness.start();
    h.script({ error: { status: 429, type: 'rate_limit_error', message: 'slow down', retryAfterSec: 0.2 } }, { text: 'made it' });
    await h.adapter.send('hello');
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(h.adapter.answers()).toEqual(['made it']);
    const [a, b] = h.modelRequests();
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(190);
  });

  test('when retries run out the user gets a short error and nothing is saved half-way', async () => {
    h = await harness.start();
    const overloaded = { error: { status: 529, type: 'overloaded_error', message: 'Overloaded' } } as const;
    h.script(overloaded, overloaded, overloaded, overloaded, overloaded);
    await h.adapter.send('hello');
    await waitFor('error', () => h.adapter.answers()[0]);
    expect(h.adapter.answers()[0]).toMatch(/^ERROR: The model is overloaded/);
    await h.gh.runner.idle();
    // The failed turn left no trace: the next turn's transcript starts fresh.
    h.script({ text: 'fine now' });
    await h.adapter.send('again');
    await waitFor('answer', () => h.adapter.answers()[1]);
    const last = h.modelRequests().at(-1)!.body as { messages: unknown[] };
    expect(last.messages).toHaveLength(1);
  });

  test('a restart keeps the conversation', async () => {
    h = await harness.start();
    h.script({ text: 'Nice to meet you, Ada.' });
    await h.adapter.send('my name is Ada');
    await waitFor('answer', () => h.adapter.answers()[0]);
    await h.gh.runner.idle();
    await h.restart();
    h.script({ text: 'Your name is Ada.' });
    await h.adapter.send('what is my name?');
    await waitFor('answer', () => h.adapter.answers()[0]);
    const body = h.modelRequests().at(-1)!.body as { messages: Array<{ role: string }> };
    expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(JSON.stringify(body.messages)).toContain('my name is Ada');
  });

  test('retention: at most maxConversations per agent, the least recently active is forgotten', async () => {
    h = await harness.start({
      // The old key, still read as retention.maxConversations.
      yaml: agentYaml('tools: [get_time]', 'maxConversations: 2'),
    });
    for (const c of ['a', 'b', 'a', 'c']) {
      h.script({ text: `reply in ${c}` });
      await h.adapter.send(`hello from ${c}`, { conversation: c });
      await waitFor(`answer in ${c}`, () => h.gh.runner.isBusy(`console:${c}`) === false && h.adapter.answers(`console:${c}`).length > 0);
      await h.gh.runner.idle();
    }
    // Retention is applied at start and at most once a minute (one query, not a list rewritten per
    // conversation): the restart applies it. b was least recently active: deleted. a survives.
    await h.restart();
    h.script({ text: 'x' }, { text: 'y' });
    await h.adapter.send('again a', { conversation: 'a' });
    await h.gh.runner.idle();
    await h.adapter.send('again b', { conversation: 'b' });
    await h.gh.runner.idle();
    const reqs = h.modelRequests();
    const aAgain = reqs.at(-2)!.body as { messages: unknown[] };
    const bAgain = reqs.at(-1)!.body as { messages: unknown[] };
    expect(bAgain.messages).toHaveLength(1);
    expect(aAgain.messages.length).toBeGreaterThan(1);
  });

  test('/stop mid-tool interrupts it and leaves a valid transcript', async () => {
    h = await harness.start({
      yaml: agentYaml('tools: [execute_command]', 'tier: high-risk'),
    });
    h.script({ toolUses: [{ name: 'execute_command', input: { command: 'sleep 30' } }] });
    await h.adapter.send('sleep a while');
    await waitFor('tool started', () => h.adapter.eventsOf('console:main', 'tool_started')[0]);
    const r = await h.adapter.send('/stop');
    expect(r.reply).toMatch(/Stopping/);
    await waitFor('run finished', () => h.adapter.eventsOf('console:main', 'run_finished')[0]);
    const fin = h.adapter.eventsOf('console:main', 'run_finished')[0]!;
    expect(fin.type === 'run_finished' && fin.reason).toBe('stopped');
    // The next turn's transcript pairs every tool_use with a tool_result (the fake rejects it otherwise).
    h.script({ text: 'ok' });
    await h.adapter.send('what happened?');
    await waitFor('answer', () => h.adapter.answers().includes('ok'));
    const body = h.modelRequests().at(-1)!.body as { messages: Array<{ role: string; content: Array<{ type: string; is_error?: boolean }> }> };
    const results = body.messages.flatMap((m) => m.content.filter((b) => b.type === 'tool_result'));
    expect(results).toHaveLength(1);
    expect(results[0]!.is_error).toBe(true);
  });

  test('maxIterations ends a run that keeps calling tools, with a message saying so', async () => {
    h = await harness.start({ yaml: agentYaml('tools: [get_time]', 'maxIterations: 3') });
    const again = { toolUses: [{ name: 'get_time', input: {} }] };
    h.script(again, again, again, again, again);
    await h.adapter.send('loop forever');
    await waitFor('error', () => h.adapter.answers()[0]);
    expect(h.adapter.answers()[0]).toMatch(/^ERROR: Stopped after 3 steps/);
    expect(h.modelRequests()).toHaveLength(3);
    const fin = await waitFor('run finished', () => h.adapter.eventsOf('console:main', 'run_finished')[0]);
    expect(fin?.type === 'run_finished' && fin.reason).toBe('max_iterations');
  });

  test('runTimeoutMs stops a run that takes too long', async () => {
    h = await harness.start({ yaml: agentYaml('tools: [get_time]', 'runTimeoutMs: 300') });
    h.script({ hang: true });
    await h.adapter.send('think forever');
    await waitFor('timeout', () => h.adapter.answers()[0]);
    expect(h.adapter.answers()[0]).toMatch(/^ERROR: Stopped: the run took longer than/);
    const fin = await waitFor('run finished', () => h.adapter.eventsOf('console:main', 'run_finished')[0]);
    expect(fin?.type === 'run_finished' && fin.reason).toBe('timeout');
  });

  test('time spent waiting for a human does not count against runTimeoutMs', async () => {
    const clock = fakeClock();
    h = await harness.start({
      yaml: agentYaml('tools: [ask_user_question]', 'runTimeoutMs: 1500', 'approvers: { console: [local] }'),
      runClock: clock,
    });
    h.script(
      { toolUses: [{ name: 'ask_user_question', input: { question: 'Ready?', suggestions: [{ value: 'yes', label: 'Yes' }] } }] },
      { text: 'Off we go.' },
    );
    await h.adapter.send('start');
    const card = await waitFor('question', () => h.adapter.cards[0]);
    clock.advance(2000); // a person taking their time, longer than the run's budget
    const r = await h.adapter.click(card, 'Yes');
    expect(r).toMatchObject({ accepted: true });
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(h.adapter.answers()).toEqual(['Off we go.']);
  });

  test('the same time spent on the model does count: the run is stopped', async () => {
    const clock = fakeClock();
    h = await harness.start({ yaml: agentYaml('tools: [get_time]', 'runTimeoutMs: 1500'), runClock: clock });
    h.script({ hang: true });
    await h.adapter.send('start');
    await waitFor('the model call', () => (h.modelRequests().length > 0 ? true : undefined));
    clock.advance(1400);
    expect(h.adapter.answers()).toEqual([]);
    clock.advance(600);
    await waitFor('answer', () => h.adapter.answers()[0]);
    expect(h.adapter.answers()[0]).toMatch(/^ERROR: Stopped: the run took longer than 2 s \(runTimeoutMs\)/);
  });

  test('results of a parallel batch come back in the calls order', async () => {
    h = await harness.start({ yaml: agentYaml('tools: [execute_command]', 'tier: high-risk') });
    // The first and third wait for a file the second makes: they can only see it if the calls run
    // at once (one after another, the first gives up waiting and says "alone"). No timing race: the
    // wait is an event (the file), bounded at 30 s so that a sandbox start on a busy machine is
    // not taken for a sequential run.
    const waitForGo = (word: string) => `for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done; [ -e go ] && echo ${word} || echo ${word}-alone`;
    h.script(
      {
        toolUses: [
          { name: 'execute_command', input: { command: waitForGo('first') } },
          { name: 'execute_command', input: { command: 'echo second; touch go' } },
          { name: 'execute_command', input: { command: waitForGo('third') } },
        ],
      },
      { text: 'done' },
    );
    await h.adapter.send('run three');
    await waitFor('answer', () => h.adapter.answers()[0], 45_000);
    const results = lastToolResults(h.modelRequests()[1]!).map((r) => String(r.content));
    expect(results[0]).toContain('first');
    expect(results[1]).toContain('second');
    expect(results[2]).toContain('third');
    // They ran at once: the first and third saw the second's file.
    expect(results.join('\n')).not.toContain('alone');
  }, 60_000);

  test('after a crash, every conversation with accepted messages is answered, running or waiting for a slot', async () => {
    h = await harness.start({ yaml: `${DEFAULT_YAML}access:\n  rateLimit: { messages: 100, perSeconds: 60 }\n` });
    const n = 25;
    for (let i = 0; i < n; i++) h.script({ hang: true });
    // One user each: a single user holds at most runner.maxRunsPerUser slots (test/agent/run-slots.e2e.test.ts).
    for (let i = 0; i < n; i++) expect((await h.adapter.send(`question ${i}`, { conversation: `c${i}`, user: `u${i}` })).accepted).toBe(true);
    // 8 runs reach the model (the default concurrency); the rest wait for a slot.
    await waitFor('runs started', () => h.modelRequests().length === 8);
    h.mainQueue.length = 0;
    await h.store.runs.enqueueTurn('console:broken', 'broken', 'not a turn', Date.now()); // left by a bad write or an old version
    const userText = (req: RecordedRequest) => {
      const msgs = (req.body as { messages: Array<{ content: Array<{ text?: string }> }> }).messages;
      return msgs.at(-1)!.content[0]!.text!;
    };
    // Scripted before the restart: the resumed runs may reach the model before restart() returns.
    for (let i = 0; i < n; i++) h.script((req) => ({ text: `answer to ${userText(req)}` }));
    await h.restart();
    await waitFor('all answered', () => Array.from({ length: n }, (_, i) => h.adapter.answers(`console:c${i}`).length === 1).every(Boolean));
    for (let i = 0; i < n; i++) expect(h.adapter.answers(`console:c${i}`)).toEqual([`answer to question ${i}`]);
    expect((await h.store.runs.queuedTurns()).map((q) => q.conversation)).not.toContain('console:broken');
    await h.gh.runner.idle();
    expect(await h.store.runs.queuedTurns()).toEqual([]);
  });

  test('when the store fails, a message is refused with a reply saying so, never taken and lost', async () => {
    h = await harness.start();
    // The disk is gone, as far as the bot can tell.
    await h.store.close();
    const result = await h.adapter.send('are you there?');
    expect(result.accepted).toBe(false);
    expect(result.reply).toMatch(/could not take that message.*send it again/i);
    await new Promise((r) => setTimeout(r, 50));
    expect(h.modelRequests()).toHaveLength(0);
  });

  test('a transcript that cannot be read fails that turn with a message, and the bot keeps working', async () => {
    h = await harness.start({ yaml: `${DEFAULT_YAML}runner: { maxConcurrentRuns: 1 }\n` });
    const repo = h.store.transcripts;
    const [realRevision, realLoad] = [repo.revision.bind(repo), repo.load.bind(repo)];
    // Fault injection on the store's reads of a transcript (a load reads one or the other).
    repo.revision = () => Promise.reject(new Error('SQLITE_IOERR: disk I/O error'));
    repo.load = () => Promise.reject(new Error('SQLITE_IOERR: disk I/O error'));
    await h.adapter.send('first');
    await waitFor('error shown', () => h.adapter.eventsOf('console:main', 'error')[0]);
    expect(h.adapter.eventsOf('console:main', 'error')[0]).toMatchObject({
      message: expect.stringMatching(/could not read this conversation.*send that again/),
    });
    expect(h.modelRequests()).toHaveLength(0);
    repo.revision = realRevision;
    repo.load = realLoad;
    h.script({ text: 'second answer' });
    await h.adapter.send('second');
    await waitFor('answer', () => h.adapter.answers()[1]); // the one run slot was given back
    expect(h.adapter.answers()[1]).toBe('second answer');
    // The failed turn was dropped (the user was told to resend), so it is not part of the history.
    expect((h.modelRequests()[0]!.body as { messages: unknown[] }).messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'second' }] }]);
    await h.gh.runner.idle();
    expect(await h.store.runs.queuedTurns()).toEqual([]);
  });

  test('/reset starts a new conversation and /help says what the bot can do', async () => {
    h = await harness.start();
    h.script({ text: 'noted' }, { text: 'fresh' });
    await h.adapter.send('remember 42');
    await waitFor('answer', () => h.adapter.answers()[0]);
    const reset = await h.adapter.send('/reset');
    expect(reset.reply).toMatch(/new conversation/);
    await h.adapter.send('what number?');
    await waitFor('answer', () => h.adapter.answers()[1]);
    expect((h.modelRequests().at(-1)!.body as { messages: unknown[] }).messages).toHaveLength(1);
    const help = await h.adapter.send('/help');
    expect(help.reply).toMatch(/\/stop/);
    expect(help.reply).toMatch(/read_file/);
  });

  test('messages accepted before a crash are answered after the restart, in order', async () => {
    h = await harness.start();
    h.script({ hang: true });
    await h.adapter.send('first question');
    await waitFor('model called', () => h.modelRequests().length === 1);
    await h.adapter.send('second question'); // waits behind the first
    // Scripted before the restart: the resumed runs may reach the model before restart() returns.
    h.script({ text: 'first answer' }, { text: 'second answer' });
    await h.restart();
    await waitFor('both answered', () => h.adapter.answers().length === 2);
    expect(h.adapter.answers()).toEqual(['first answer', 'second answer']);
    const last = h.modelRequests().at(-1)!.body as { messages: Array<{ role: string }> };
    expect(JSON.stringify(last.messages)).toContain('first question');
    expect(last.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    // Nothing is run a third time after another restart.
    await h.gh.runner.idle();
    await h.restart();
    await h.gh.runner.idle();
    expect(h.adapter.answers()).toEqual([]);
  });
});
