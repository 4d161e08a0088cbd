/**
 * Telegram end to end through the real start path (bot/cli/index.ts startBot): env and YAML config, the
 * store (SQLite and PostgreSQL: the whole file runs on each), the router, the runner, the real Anthropic SDK against the fake model, and the real
 * grammy against the fake Bot API (long polling, and webhook mode through the bot's HTTP server).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBot, type RunningBot } from '../../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../../fakes/anthropic.js';
import { startFakeTelegram, type FakeChat, type FakeTelegram, type FakeUser } from '../../fakes/telegram.js';
import { ENGINES, testStoreUrl, waitFor } from '../../helpers/harness.js';
import { environmentThenBranch } from '../../helpers/questions.js';
import { TOKEN } from './helpers.js';

const owner: FakeUser = { id: 501, first_name: 'Ada' };
const teammate: FakeUser = { id: 502, first_name: 'Bob' };
const stranger: FakeUser = { id: 666, first_name: 'Mallory' };
const ownerDm: FakeChat = { id: 501, type: 'private', first_name: 'Ada' };
const teammateDm: FakeChat = { id: 502, type: 'private', first_name: 'Bob' };
const strangerDm: FakeChat = { id: 666, type: 'private', first_name: 'Mallory' };
const group: FakeChat = { id: -100200, type: 'supergroup', title: 'Team' };

const YAML = (workspace: string) => `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file, write_file, ask_user_question]
    tier: read-only
    workspace: "${workspace}"
    approvers: { telegram: ["501"] }
access:
  telegram: { users: ["501", "502"], chats: ["-100200"] }
`;

describe.each(ENGINES)('on %s', (engine) => {
  /** This test's store, chosen in beforeEach: every boot of the test (a restart too) opens the same one. */
  let storeUrl: string;

  let tg: FakeTelegram;
  let model: FakeAnthropic;
  let bot: RunningBot | undefined;
  let dir: string;
  const queue: FakeReply[] = [];

  async function freePort(): Promise<number> {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const port = (s.address() as { port: number }).port;
    await new Promise<void>((r) => s.close(() => r()));
    return port;
  }

  async function boot(extraEnv: Record<string, string> = {}): Promise<void> {
    bot = await startBot(
      {
        env: {
          ANTHROPIC_API_KEY: 'test-key',
          ANTHROPIC_BASE_URL: model.url,
          GATEHOUSE_CONFIG: join(dir, 'gatehouse.yaml'),
          GATEHOUSE_STORE: storeUrl,
          GATEHOUSE_HTTP_PORT: '0',
          TELEGRAM_BOT_TOKEN: TOKEN,
          TELEGRAM_API_ROOT: tg.apiRoot,
          ...extraEnv,
        },
        cwd: dir,
        stdout: new PassThrough(),
        stderr: new PassThrough(),
      },
      () => undefined,
    );
  }

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-tg-'));
    storeUrl = await testStoreUrl(engine, dir);
    writeFileSync(join(dir, 'gatehouse.yaml'), YAML(join(dir, 'ws')));
    tg = await startFakeTelegram({ token: TOKEN });
    model = await startFakeAnthropic({ apiKey: 'test-key' });
    queue.length = 0;
    model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
  });

  afterEach(async () => {
    await bot?.stop();
    bot = undefined;
    await tg.close();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const texts = (chatId: number) => tg.visible(chatId).map((m) => m.plain);

  test('a DM conversation over several turns keeps its context', async () => {
    await boot();
    queue.push({ text: 'Hi **Ada**!' }, { text: 'You said hello.' });
    await tg.sendText({ chat: ownerDm, from: owner, text: 'hello' });
    await tg.waitFor(() => texts(501).includes('Hi Ada!'), 5000, 'first answer');
    const first = tg.visible(501).find((m) => m.plain === 'Hi Ada!')!;
    expect(first.parseMode).toBe('HTML');
    expect(first.text).toContain('<b>Ada</b>');
    await tg.sendText({ chat: ownerDm, from: owner, text: 'what did I say?' });
    await tg.waitFor(() => texts(501).includes('You said hello.'), 5000, 'second answer');
    const body = model.requests.at(-1)!.body as { messages: Array<{ role: string }>; stream?: boolean };
    expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    // Telegram shows whole answers, so the model is asked for whole replies.
    expect(model.requests.map((r) => (r.body as { stream?: boolean }).stream)).toEqual([false, false]);
  });

  test('an unauthorized DM gets one reply with the user id and the config key, and no run', async () => {
    await boot();
    await tg.sendText({ chat: strangerDm, from: stranger, text: 'let me in' });
    await tg.waitFor(() => texts(666).length === 1, 5000, 'refusal');
    expect(texts(666)[0]).toContain('666');
    expect(texts(666)[0]).toContain('access.telegram.users');
    await tg.sendText({ chat: strangerDm, from: stranger, text: 'please?' });
    await tg.sendText({ chat: ownerDm, from: owner, text: 'ping' });
    queue.push({ text: 'pong' });
    await tg.waitFor(() => texts(501).includes('pong'), 5000, 'owner answered');
    expect(texts(666)).toHaveLength(1); // told once
    expect(model.requests).toHaveLength(1); // only the owner's message reached the model
  });

  test('in a group the bot answers when mentioned or replied to, and ignores other messages', async () => {
    await boot();
    queue.push({ text: 'At your service.' });
    await tg.sendText({ chat: group, from: teammate, text: 'just chatting among ourselves' });
    await tg.sendText({ chat: group, from: teammate, text: `@${tg.bot.username} what time is it?` });
    await tg.waitFor(() => texts(-100200).includes('At your service.'), 5000, 'group answer');
    expect(model.requests).toHaveLength(1);
    expect(JSON.stringify(model.requests[0]!.body)).not.toContain('just chatting');
  });

  test('approval in Telegram: a non-approver tap changes nothing, the approver tap runs it', async () => {
    await boot();
    queue.push({ toolUses: [{ name: 'write_file', input: { path: 'plan.md', content: '# plan\n' } }] }, { text: 'Wrote plan.md.' });
    await tg.sendText({ chat: group, from: teammate, text: `@${tg.bot.username} write the plan` });
    await tg.waitFor(() => tg.visible(-100200).some((m) => m.replyMarkup !== undefined), 5000, 'approval card');
    const card = tg.visible(-100200).find((m) => m.replyMarkup !== undefined)!;
    expect(card.plain).toContain('write_file');
    for (const b of card.replyMarkup!.inline_keyboard.flat()) expect(Buffer.byteLength(b.callback_data ?? '')).toBeLessThanOrEqual(64);

    // Bob asked, but Bob is not an approver: private notice, nothing runs, the card stays.
    await tg.press(-100200, card.messageId, 0, teammate);
    await tg.waitFor(() => tg.callbackAnswers.length === 1, 5000, 'callback answered');
    expect(tg.callbackAnswers[0]!.text).toMatch(/Only a bound approver/);
    expect(card.edits).toHaveLength(0);

    // A forged button on the same message: answered, ignored.
    await tg.pressData(-100200, card.messageId, 'g:AAAAAAAAAAAAAAAAAAAAAAAA', owner);
    await tg.waitFor(() => tg.callbackAnswers.length === 2, 5000, 'forged answered');
    expect(tg.callbackAnswers[1]!.text).toMatch(/no longer valid|not valid/);

    // Ada is the approver.
    await tg.press(-100200, card.messageId, 0, owner);
    await tg.waitFor(() => texts(-100200).includes('Wrote plan.md.'), 5000, 'answer after approval');
    // The card was edited in place (the fake keeps earlier versions in `edits`).
    await tg.waitFor(() => /Approved once by Ada/.test(card.plain), 5000, 'decided card');
    expect(card.edits.length).toBeGreaterThanOrEqual(1);
    expect(card.replyMarkup?.inline_keyboard.flat() ?? []).toHaveLength(0);
  });

  test('a question: buttons, and a typed answer from the asker', async () => {
    await boot();
    queue.push(...environmentThenBranch());
    await tg.sendText({ chat: ownerDm, from: owner, text: 'deploy something' });
    await tg.waitFor(() => tg.visible(501).some((m) => m.plain.includes('Which environment?') && m.replyMarkup), 5000, 'question');
    const q = tg.visible(501).find((m) => m.plain.includes('Which environment?') && m.replyMarkup)!;
    await tg.press(501, q.messageId, 0, owner);
    await tg.waitFor(() => texts(501).includes('Going with staging.'), 5000, 'answer by button');

    await tg.sendText({ chat: ownerDm, from: owner, text: 'and the branch?' });
    // The card itself (the status line also quotes the question, before the card exists).
    await tg.waitFor(() => tg.visible(501).some((m) => m.plain.includes('Which branch?') && m.replyMarkup), 5000, 'second question');
    await tg.sendText({ chat: ownerDm, from: owner, text: 'release-2026' });
    await tg.waitFor(() => texts(501).includes('Branch noted.'), 5000, 'answer by text');
    expect(JSON.stringify(model.requests.at(-1)!.body)).toContain('release-2026');
  });

  test('/stop cancels a running turn', async () => {
    await boot();
    queue.push({ hang: true } as FakeReply);
    await tg.sendText({ chat: ownerDm, from: owner, text: 'think hard' });
    // Polled: the Telegram fake's waitFor only re-checks on Telegram traffic.
    await waitFor('model called', () => model.requests.length === 1);
    await tg.sendText({ chat: ownerDm, from: owner, text: '/stop' });
    await tg.waitFor(() => texts(501).some((t) => /Stopped\./.test(t)), 5000, 'stopped');
    expect(texts(501)).toContain('Stopping the current run.');
  });

  test('webhook mode: the right secret is served, a wrong secret gets 401 and changes nothing', async () => {
    const port = await freePort();
    await boot({
      GATEHOUSE_HTTP_PORT: String(port),
      TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram`,
      TELEGRAM_WEBHOOK_SECRET: 'right-secret-0123456789',
    });
    expect(tg.webhook?.url).toBe(`http://127.0.0.1:${port}/telegram`);
    queue.push({ text: 'via webhook' });
    const bad = await tg.sendText({ chat: ownerDm, from: owner, text: 'forged', secret: 'wrong-secret' });
    expect(bad.status).toBe(401);
    const good = await tg.sendText({ chat: ownerDm, from: owner, text: 'hello' });
    expect(good.status).toBe(200);
    await tg.waitFor(() => texts(501).includes('via webhook'), 5000, 'answer');
    expect(model.requests).toHaveLength(1);
    expect(JSON.stringify(model.requests[0]!.body)).not.toContain('forged');
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(await health.json()).toMatchObject({ ok: true, platforms: ['telegram'] });
  });
});
