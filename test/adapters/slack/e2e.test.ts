/**
 * Slack end to end through the real start path (bot/cli/index.ts startBot), in HTTP mode and in Socket
 * Mode: env and YAML config, the store (SQLite and PostgreSQL: the whole file runs on each), the router, the runner, the real Anthropic SDK against
 * the fake model, and real Bolt + @slack/web-api + socket-mode against the fake Slack (events signed
 * and posted to /slack/events on the bot's own HTTP server, or envelopes over the fake's WebSocket).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBot } from '../../../bot/cli/index.js';
import type { FakeAnthropic, FakeReply } from '../../fakes/anthropic.js';
import { startFakeSlack, type FakeSlack } from '../../fakes/slack.js';
import { BotE2e } from '../../helpers/bot-e2e.js';
import { environmentThenBranch } from '../../helpers/questions.js';
import { ENGINES, waitFor } from '../../helpers/harness.js';

const BOT_TOKEN = 'xoxb-1111-2222-fakeBotTokenValue';
const SECRET = 'fake-signing-secret-0123456789';
const APP_TOKEN = 'xapp-1-A0APP-3333-fakeAppTokenValue';

const YAML = (workspace: string) => `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file, write_file, ask_user_question]
    tier: read-only
    workspace: "${workspace}"
    approvers: { slack: ["U0ADA", "group:S0OPS"] }
    # These tests are about tokens and retries (Ada approves what she asked for); the requester rule: test/agent/requester-approval.e2e.test.ts.
    requesterMayApprove: true
access:
  slack: { users: ["U0ADA", "U0BOB", "U0CAROL"], channels: ["C0TEAM"] }
`;

describe.each(ENGINES)('on %s', (engine) => {
  let h: BotE2e;
  let slack: FakeSlack;
  let model: FakeAnthropic;
  let queue: FakeReply[];
  let dir: string;

  const slackEnv = (mode: 'http' | 'socket'): Record<string, string> => ({
    SLACK_BOT_TOKEN: BOT_TOKEN,
    ...(mode === 'socket' ? { SLACK_APP_TOKEN: APP_TOKEN } : { SLACK_SIGNING_SECRET: SECRET }),
    SLACK_API_URL: slack.apiUrl,
  });

  async function boot(mode: 'http' | 'socket' = 'http'): Promise<void> {
    slack.mode = mode;
    const bot = await h.boot(slackEnv(mode), { log: false });
    slack.eventsUrl = `http://127.0.0.1:${bot.http!.port}/slack/events`;
  }

  beforeEach(async () => {
    h = await BotE2e.start({ engine, prefix: 'gatehouse-slack-', yaml: (d) => YAML(join(d, 'ws')) });
    ({ model, queue, dir } = h);
    slack = await startFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN, signingSecret: SECRET });
    slack.setGroup('S0OPS', ['U0CAROL']);
  });

  afterEach(async () => {
    await h.stopBot();
    await waitFor('the socket close handshake', () => slack.sockets.open === 0, { timeoutMs: 5000, intervalMs: 10 }).catch(() => undefined);
    await slack.close();
    await h.close();
    expect(h.logged).not.toContain(BOT_TOKEN);
    expect(h.logged).not.toContain(SECRET);
    expect(h.logged).not.toContain(APP_TOKEN);
  });

  const texts = (channel: string, thread?: string) => slack.visible(channel, thread).map((m) => m.text);

  for (const mode of ['http', 'socket'] as const)
    describe(mode === 'http' ? 'HTTP mode' : 'Socket Mode', () => {
      test('a DM conversation over several turns keeps its context', async () => {
        await boot(mode);
        queue.push({ text: 'Hi **Ada**!' }, { text: 'You said hello.' });
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'hello', im: true });
        await waitFor('first answer', () => texts('D0ADA').includes('Hi *Ada*!'));
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'what did I say?', im: true });
        await waitFor('second answer', () => texts('D0ADA').includes('You said hello.'));
        const body = model.requests.at(-1)!.body as { messages: Array<{ role: string }> };
        expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
      });

      test('a channel mention is answered in its thread; a follow-up there needs no mention', async () => {
        await boot(mode);
        queue.push({ text: 'First answer.' }, { text: 'Second answer.' });
        await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: 'just chatting' });
        const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> help me` });
        await waitFor('answer in thread', () => texts('C0TEAM', ts).includes('First answer.'));
        await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: 'and more', threadTs: ts });
        await waitFor('follow-up answer', () => texts('C0TEAM', ts).includes('Second answer.'));
        expect(slack.visible('C0TEAM').every((m) => m.threadTs === ts)).toBe(true);
        expect(model.requests).toHaveLength(2);
        expect(JSON.stringify(model.requests.map((r) => r.body))).not.toContain('just chatting');
      });

      test('an approval: a non-approver is told privately, a user group member approves, a replay changes nothing', async () => {
        await boot(mode);
        queue.push({ toolUses: [{ name: 'write_file', input: { path: 'hello.txt', content: 'hi\n' } }] }, { text: 'Written.' });
        const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> write hello.txt` });
        await waitFor('the card', () => slack.visible('C0TEAM', ts).find((m) => (m.blocks ?? []).some((b) => b['type'] === 'actions')));
        const card = slack.visible('C0TEAM', ts).find((m) => (m.blocks ?? []).some((b) => b['type'] === 'actions'))!;
        const actions = card.blocks!.find((b) => b['type'] === 'actions') as { elements: Array<{ value: string; text: { text: string } }> };
        const approve = actions.elements.find((e) => e.text.text.startsWith('Approve'))!.value;

        await slack.click({ user: 'U0BOB', message: card, value: approve });
        await waitFor('notice to Bob', () => slack.ephemerals.find((e) => e.user === 'U0BOB'));
        expect(existsSync(join(dir, 'ws', 'hello.txt'))).toBe(false);

        await slack.click({ user: 'U0CAROL', message: card, value: approve });
        await waitFor('answer', () => texts('C0TEAM', ts).includes('Written.'));
        expect(readFileSync(join(dir, 'ws', 'hello.txt'), 'utf8')).toBe('hi\n');
        expect((card.blocks ?? []).some((b) => b['type'] === 'actions')).toBe(false); // decided in place
        expect(JSON.stringify(card.blocks)).toMatch(/U0CAROL|carol/i);
        expect(JSON.stringify(card.blocks)).toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/); // and when

        const before = slack.ephemerals.length;
        await slack.click({ user: 'U0CAROL', message: { ...card, blocks: card.edits[0]?.blocks }, value: approve });
        await waitFor('notice on replay', () => slack.ephemerals.length > before);
        expect(model.requests.filter((r) => !JSON.stringify(r.body).includes('classif'))).toHaveLength(2);
      });

      test('a forged token and a card\u2019s token clicked from another conversation change nothing', async () => {
        await boot(mode);
        queue.push({ toolUses: [{ name: 'write_file', input: { path: 'x.txt', content: 'x\n' } }] }, { text: 'Written.' });
        const { ts } = await slack.userMessage({ user: 'U0ADA', channel: 'C0TEAM', text: `<@${slack.botUserId}> write x.txt` });
        await waitFor('the card', () => slack.visible('C0TEAM', ts).find((m) => (m.blocks ?? []).some((b) => b['type'] === 'actions')));
        const card = slack.visible('C0TEAM', ts).find((m) => (m.blocks ?? []).some((b) => b['type'] === 'actions'))!;
        const actions = card.blocks!.find((b) => b['type'] === 'actions') as { elements: Array<{ value: string; text: { text: string } }> };
        const approve = actions.elements.find((e) => e.text.text.startsWith('Approve'))!.value;
        const withValue = (value: string) =>
          card.blocks!.map((b) => (b['type'] === 'actions' ? { ...b, elements: actions.elements.map((e) => ({ ...e, value })) } : b));

        // an approver presses a button whose value was tampered with
        await slack.click({ user: 'U0ADA', message: { ...card, blocks: withValue(approve.slice(0, -2) + 'zz') }, value: approve.slice(0, -2) + 'zz' });
        await waitFor('notice on the forged token', () => slack.ephemerals.find((e) => e.user === 'U0ADA'));
        // the real token, but sent from a message in another channel (a copied payload)
        await slack.click({ user: 'U0ADA', message: { ...card, channel: 'C0OTHER', threadTs: undefined }, value: approve });
        await waitFor('notice on the foreign click', () => slack.ephemerals.filter((e) => e.user === 'U0ADA').length === 2);
        await new Promise((r) => setTimeout(r, 100));
        expect(existsSync(join(dir, 'ws', 'x.txt'))).toBe(false);
        expect((card.blocks ?? []).some((b) => b['type'] === 'actions')).toBe(true); // still undecided
        // the card itself still works
        await slack.click({ user: 'U0ADA', message: card, value: approve });
        await waitFor('answer', () => texts('C0TEAM', ts).includes('Written.'));
        expect(readFileSync(join(dir, 'ws', 'x.txt'), 'utf8')).toBe('x\n');
      });

      test('a question: a suggestion button, then a typed reply in the thread', async () => {
        await boot(mode);
        queue.push(...environmentThenBranch());
        const { ts } = await slack.userMessage({ user: 'U0ADA', channel: 'C0TEAM', text: `<@${slack.botUserId}> deploy something` });
        const questionCard = (q: string) =>
          slack.visible('C0TEAM', ts).find((m) => JSON.stringify(m.blocks ?? []).includes(q) && (m.blocks ?? []).some((b) => b['type'] === 'actions'));
        await waitFor('question', () => questionCard('Which environment?'));
        const q = questionCard('Which environment?')!;
        const staging = (q.blocks!.find((b) => b['type'] === 'actions') as { elements: Array<{ value: string; text: { text: string } }> }).elements.find(
          (e) => e.text.text === 'Staging',
        )!;
        await slack.click({ user: 'U0ADA', message: q, value: staging.value });
        await waitFor('answer by button', () => texts('C0TEAM', ts).includes('Going with staging.'));
        await slack.userMessage({ user: 'U0ADA', channel: 'C0TEAM', text: 'and the branch?', threadTs: ts });
        await waitFor('second question', () => questionCard('Which branch?'));
        await slack.userMessage({ user: 'U0ADA', channel: 'C0TEAM', text: 'release-2026', threadTs: ts });
        await waitFor('answer by text', () => texts('C0TEAM', ts).includes('Branch noted.'));
        expect(JSON.stringify(model.requests.at(-1)!.body)).toContain('release-2026');
      });

      test('/stop as message text cancels a running turn', async () => {
        await boot(mode);
        queue.push({ hang: true } as FakeReply);
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'think hard', im: true });
        await waitFor('model called', () => model.requests.length === 1);
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: '/stop', im: true });
        await waitFor('stopped', () => texts('D0ADA').some((t) => /Stopped\./.test(t)));
      });

      test('a text file is read via url_private with the bot token', async () => {
        await boot(mode);
        queue.push({ text: 'Read it.' });
        const file = slack.addFile('notes.md', 'text/markdown', '# Notes\nthe word is pineapple\n');
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'summarize', im: true, files: [file] });
        await waitFor('answer', () => texts('D0ADA').includes('Read it.'));
        expect(JSON.stringify(model.requests[0]!.body)).toContain('the word is pineapple');
      });

      test('/gatehouse help|reset|stop: acked at once, answered privately, acting on the user\u2019s conversation', async () => {
        await boot(mode);
        // help (and an unknown word) in a DM
        expect((await slack.slashCommand({ user: 'U0ADA', channel: 'D0ADA', text: 'help' })).status).toBe(200);
        await waitFor('help', () => slack.responses.length === 1);
        expect(slack.responses[0]).toMatchObject({ responseType: 'ephemeral', user: 'U0ADA', channel: 'D0ADA' });
        expect(slack.responses[0]!.text).toContain('/reset starts a new conversation');
        expect((await slack.slashCommand({ user: 'U0ADA', channel: 'D0ADA', text: 'dance' })).status).toBe(200);
        await waitFor('help for an unknown word', () => slack.responses.length === 2);
        expect(slack.responses[1]!.text).toContain('/stop cancels the current run');

        // reset: the next turn starts without the earlier one
        queue.push({ text: 'Noted: blue.' }, { text: 'Fresh start.' });
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'my colour is blue', im: true });
        await waitFor('first answer', () => texts('D0ADA').includes('Noted: blue.'));
        expect((await slack.slashCommand({ user: 'U0ADA', channel: 'D0ADA', text: 'reset' })).status).toBe(200);
        // The reset's own reply (the help above also says "new conversation"): the reset is done before the next message.
        await waitFor('reset reply', () => slack.responses.some((r) => /Started a new conversation/.test(r.text)));
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'what is my colour?', im: true });
        await waitFor('answer after reset', () => texts('D0ADA').includes('Fresh start.'));
        expect((model.requests.at(-1)!.body as { messages: unknown[] }).messages).toHaveLength(1);

        // stop, typed in the channel (slash commands cannot be typed in threads): stops the run in the thread
        queue.push({ hang: true } as FakeReply);
        const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> think hard` });
        await waitFor('model called', () => model.requests.length === 3);
        expect((await slack.slashCommand({ user: 'U0BOB', channel: 'C0TEAM', text: 'stop' })).status).toBe(200);
        await waitFor('stop reply', () => slack.responses.some((r) => r.user === 'U0BOB' && /Stopping the current run/.test(r.text)));
        await waitFor('stopped in the thread', () => texts('C0TEAM', ts).some((t) => /Stopped\./.test(t)));
        // private: nothing of it was posted to the channel or the DM
        expect([...texts('C0TEAM'), ...texts('D0ADA')].join('\n')).not.toMatch(/Stopping the current run|\/reset starts/);
      });

      test('an unlisted user\u2019s slash command is refused privately and runs nothing', async () => {
        await boot(mode);
        expect((await slack.slashCommand({ user: 'U0EVE', channel: 'D0EVE', text: 'reset' })).status).toBe(200);
        await waitFor('refusal', () => slack.responses.length === 1);
        expect(slack.responses[0]!.text).toContain('access.slack.users');
        expect(slack.responses[0]!.text).not.toMatch(/new conversation/);
        expect(texts('D0EVE')).toEqual([]);
      });

      test('a retried event, the same event again and a click delivered twice are each handled once', async () => {
        await boot(mode);
        queue.push({ text: 'Only once.' }, { toolUses: [{ name: 'write_file', input: { path: 'a.txt', content: 'a\n' } }] }, { text: 'Written once.' });
        const first = await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'hi', im: true, eventId: 'EvR' });
        expect(first.statuses).toEqual([200]);
        await waitFor('answer', () => texts('D0ADA').includes('Only once.'));
        // Slack redelivers the same event (same event_id; X-Slack-Retry-Num over HTTP, retry_attempt over the socket)
        expect((await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'hi', im: true, eventId: 'EvR', retry: 1 })).statuses).toEqual([200]);
        expect((await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'hi', im: true, eventId: 'EvR', retry: 2 })).statuses).toEqual([200]);
        if (mode === 'socket') expect(await slack.resendLastEnvelope()).toBe(200); // the very same envelope_id
        await new Promise((r) => setTimeout(r, 150));
        expect(model.requests).toHaveLength(1);

        const { ts } = await slack.userMessage({ user: 'U0ADA', channel: 'C0TEAM', text: `<@${slack.botUserId}> write a.txt` });
        await waitFor('the card', () => slack.visible('C0TEAM', ts).find((m) => (m.blocks ?? []).some((b) => b['type'] === 'actions')));
        const card = slack.visible('C0TEAM', ts).find((m) => (m.blocks ?? []).some((b) => b['type'] === 'actions'))!;
        const deny = (card.blocks!.find((b) => b['type'] === 'actions') as { elements: Array<{ value: string; text: { text: string } }> }).elements.find((e) =>
          e.text.text.startsWith('Approve'),
        )!.value;
        await slack.click({ user: 'U0ADA', message: card, value: deny });
        if (mode === 'socket') expect(await slack.resendLastEnvelope()).toBe(200);
        await waitFor('answer', () => texts('C0TEAM', ts).includes('Written once.'));
        await new Promise((r) => setTimeout(r, 150));
        expect(texts('C0TEAM', ts).filter((t) => t === 'Written once.')).toHaveLength(1);
        expect(readFileSync(join(dir, 'ws', 'a.txt'), 'utf8')).toBe('a\n');
        // the repeated click found the card decided: at most a private notice, never a second run
        expect(model.requests.filter((r) => !JSON.stringify(r.body).includes('classif'))).toHaveLength(3);
      });

      test('an AI assistant thread: the answer goes in the thread, with the native thread status while working', async () => {
        slack.assistantApp = true;
        await boot(mode);
        const { threadTs, status } = await slack.assistantThreadStarted({ user: 'U0ADA', channel: 'D0ADA' });
        expect(status).toBe(200);
        queue.push({ text: 'Thought about it.', delayMs: 700 });
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'think a little', im: true, threadTs });
        await waitFor('answer in the thread', () => texts('D0ADA', threadTs).includes('Thought about it.'));
        expect(slack.assistantStatuses.filter((s) => s.threadTs === threadTs).map((s) => s.status)[0]).toBe('is working…');
        await waitFor('status cleared', () => slack.assistantStatuses.at(-1)?.status === '');
        expect(slack.visible('D0ADA').filter((m) => m.threadTs === undefined)).toEqual([]); // nothing outside the thread
        // streamed with chat.startStream/appendStream/stopStream: one message, complete, stopped
        const answers = slack.visible('D0ADA', threadTs).filter((m) => m.text.includes('Thought'));
        expect(answers.map((m) => [m.text, m.stream?.state])).toEqual([['Thought about it.', 'stopped']]);
      });

      test('an AI assistant thread streams each text segment as its own message; a failing stream falls back to whole answers', async () => {
        slack.assistantApp = true;
        await boot(mode);
        writeFileSync(join(dir, 'ws', 'notes.txt'), 'the answer is 42\n');
        const { threadTs } = await slack.assistantThreadStarted({ user: 'U0ADA', channel: 'D0ADA' });
        const long = 'Found it: **42**. ' + 'More detail follows here. '.repeat(40);
        queue.push({ text: 'Let me look at the notes.', toolUses: [{ name: 'read_file', input: { path: 'notes.txt' } }] }, { text: long, chunkDelayMs: 1 });
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'what is in notes?', im: true, threadTs });
        await waitFor('the streamed answer', () => slack.visible('D0ADA', threadTs).some((m) => m.text === long && m.stream?.state === 'stopped'));
        const streamed = slack.visible('D0ADA', threadTs).filter((m) => m.stream);
        expect(streamed.map((m) => m.text)).toEqual(['Let me look at the notes.', long]);
        expect(streamed.every((m) => m.stream!.state === 'stopped')).toBe(true);
        // ~250 deltas of 4 characters, appended in a few coalesced calls, not one call each
        expect(streamed[1]!.stream!.appends).toBeGreaterThanOrEqual(1);
        expect(slack.calls.filter((c) => c.method === 'chat.appendStream').length).toBeLessThan(20);
        expect(texts('D0ADA', threadTs).filter((t) => t.includes('Found it'))).toHaveLength(1); // not posted twice

        // Slack refuses streaming (say, for this app): the answer arrives whole all the same
        slack.failNext('chat.startStream', { error: 'not_allowed' });
        queue.push({ text: 'Whole **answer**.' }, { text: 'Second whole answer.' });
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'again', im: true, threadTs });
        await waitFor('whole answer', () => texts('D0ADA', threadTs).includes('Whole *answer*.'));
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'and again', im: true, threadTs });
        await waitFor('second whole answer', () => texts('D0ADA', threadTs).includes('Second whole answer.'));
        expect(slack.calls.filter((c) => c.method === 'chat.startStream')).toHaveLength(3); // two streams, then the refused one only
      });

      test('an unlisted user\u2019s DM gets one reply with their id and the config key, and no run', async () => {
        await boot(mode);
        await slack.userMessage({ user: 'U0EVE', channel: 'D0EVE', text: 'let me in', im: true });
        await waitFor('refusal', () => texts('D0EVE').length === 1);
        expect(texts('D0EVE')[0]).toContain('U0EVE');
        expect(texts('D0EVE')[0]).toContain('access.slack.users');
        await slack.userMessage({ user: 'U0EVE', channel: 'D0EVE', text: 'please?', im: true });
        queue.push({ text: 'pong' });
        await slack.userMessage({ user: 'U0ADA', channel: 'D0ADA', text: 'ping', im: true });
        await waitFor('owner answered', () => texts('D0ADA').includes('pong'));
        expect(texts('D0EVE')).toHaveLength(1);
        expect(model.requests).toHaveLength(1);
      });
    });

  test('threadFollowUps: false on a route: a follow-up there needs a new mention; elsewhere it does not', async () => {
    writeFileSync(
      join(dir, 'gatehouse.yaml'),
      YAML(join(dir, 'ws')).replace('channels: ["C0TEAM"]', 'channels: ["C0TEAM", "C0QUIET"]') +
        `routes:\n  - { match: "slack:${slack.teamId}:C0QUIET", agent: default, threadFollowUps: false }\n`,
    );
    await boot();
    queue.push({ text: 'Quiet first.' }, { text: 'Quiet mentioned again.' }, { text: 'Team first.' }, { text: 'Team follow-up.' });
    const quiet = await slack.userMessage({ user: 'U0BOB', channel: 'C0QUIET', text: `<@${slack.botUserId}> hello` });
    await waitFor('quiet answer', () => texts('C0QUIET', quiet.ts).includes('Quiet first.'));
    await slack.userMessage({ user: 'U0BOB', channel: 'C0QUIET', text: 'talking among ourselves', threadTs: quiet.ts });
    await slack.userMessage({ user: 'U0BOB', channel: 'C0QUIET', text: `<@${slack.botUserId}> now you`, threadTs: quiet.ts });
    await waitFor('quiet answer to the new mention', () => texts('C0QUIET', quiet.ts).includes('Quiet mentioned again.'));
    const team = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> hello` });
    await waitFor('team answer', () => texts('C0TEAM', team.ts).includes('Team first.'));
    await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: 'and a follow-up', threadTs: team.ts });
    await waitFor('team follow-up', () => texts('C0TEAM', team.ts).includes('Team follow-up.'));
    expect(model.requests).toHaveLength(4);
    expect(JSON.stringify(model.requests.map((r) => r.body))).not.toContain('talking among ourselves');
  });

  test('a forged or stale request to /slack/events gets 401 through the real server', async () => {
    await boot();
    const body = JSON.stringify({
      type: 'event_callback',
      team_id: slack.teamId,
      event_id: 'EvF',
      event: { type: 'message', channel_type: 'im', user: 'U0ADA', text: 'forged', ts: '1.1', channel: 'D0ADA' },
    });
    expect((await slack.post(body, { signature: 'v0=' + 'f'.repeat(64) })).status).toBe(401);
    expect((await slack.post(body, { timestamp: Math.floor(Date.now() / 1000) - 600 })).status).toBe(401);
    expect(model.requests).toHaveLength(0);
  });

  const startEnv = (mode: 'http' | 'socket') => h.env(slackEnv(mode));

  const START_ERRORS: Array<[string, 'http' | 'socket', string, { error: string; needed?: string }, RegExp]> = [
    ['a rejected bot token', 'http', 'auth.test', { error: 'invalid_auth' }, /SLACK_BOT_TOKEN was rejected by Slack \(invalid_auth\)/],
    ['a missing scope', 'socket', 'auth.test', { error: 'missing_scope', needed: 'chat:write' }, /lacks the scope chat:write.*slack-manifest\.yaml/],
    [
      'an app token without connections:write',
      'socket',
      'apps.connections.open',
      { error: 'missing_scope', needed: 'connections:write' },
      /SLACK_APP_TOKEN lacks the scope connections:write/,
    ],
    ['Socket Mode switched off', 'socket', 'apps.connections.open', { error: 'socket_mode_not_enabled' }, /Socket Mode is off/],
  ];

  for (const [what, mode, method, err, re] of START_ERRORS) {
    test(`the real start path stops on ${what}, saying what to do, printing no token`, async () => {
      slack.mode = mode;
      slack.failNext(method, err);
      const out = new PassThrough();
      let printed = '';
      out.on('data', (c: Buffer) => (printed += c.toString()));
      const failure = await startBot({ env: startEnv(mode), cwd: dir, stdout: out, stderr: out }, () => undefined).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(failure?.message).toMatch(re);
      for (const secret of [BOT_TOKEN, APP_TOKEN, SECRET]) expect(`${failure?.message}\n${printed}`).not.toContain(secret);
      expect(slack.sockets.open).toBe(0);
    });
  }

  test('Socket Mode: an xoxb token given as the app token stops the start with what to do', async () => {
    slack.mode = 'socket';
    await expect(
      startBot(
        {
          env: h.env({ SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_APP_TOKEN: BOT_TOKEN, SLACK_API_URL: slack.apiUrl }),
          cwd: dir,
          stdout: new PassThrough(),
          stderr: new PassThrough(),
        },
        () => undefined,
      ),
    ).rejects.toThrow(/SLACK_APP_TOKEN/);
  });
});
