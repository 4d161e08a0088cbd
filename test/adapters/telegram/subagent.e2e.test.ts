/**
 * spawn_subagent on Telegram through the real start path (startBot, grammy against the fake Bot
 * API, the real Anthropic SDK against the fake model): the sub-agent's above-tier call is a card in
 * the group the parent answers in, saying it comes from a sub-agent with its task; a teammate who
 * is not an approver taps and nothing runs; the approver's tap runs it and the sub-agent's answer
 * reaches the parent.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBot, type RunningBot } from '../../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../../fakes/anthropic.js';
import { startFakeTelegram, type FakeChat, type FakeTelegram, type FakeUser } from '../../fakes/telegram.js';
import { TOKEN } from './helpers.js';

const owner: FakeUser = { id: 501, first_name: 'Ada' };
const teammate: FakeUser = { id: 502, first_name: 'Bob' };
const group: FakeChat = { id: -100200, type: 'supergroup', title: 'Team' };

let tg: FakeTelegram;
let model: FakeAnthropic;
let bot: RunningBot | undefined;
let dir: string;
const queue: FakeReply[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-tg-sub-'));
  mkdirSync(join(dir, 'ws'));
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [ls, mkdir, spawn_subagent]\n    tier: low-risk\n    workspace: "${join(dir, 'ws')}"\n    approvers: { telegram: ["501"] }\naccess:\n  telegram: { users: ["501", "502"], chats: ["-100200"] }\n`,
  );
  tg = await startFakeTelegram({ token: TOKEN });
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  queue.length = 0;
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
  bot = await startBot(
    {
      env: {
        ANTHROPIC_API_KEY: 'test-key',
        ANTHROPIC_BASE_URL: model.url,
        GATEHOUSE_CONFIG: join(dir, 'gatehouse.yaml'),
        GATEHOUSE_STORE: `sqlite://${join(dir, 'store.sqlite')}`,
        GATEHOUSE_HTTP_PORT: '0',
        TELEGRAM_BOT_TOKEN: TOKEN,
        TELEGRAM_API_ROOT: tg.apiRoot,
      },
      cwd: dir,
      stdout: new PassThrough(),
      stderr: new PassThrough(),
    },
    () => undefined,
  );
});

afterEach(async () => {
  await bot?.stop();
  bot = undefined;
  await tg.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

test("a sub-agent's card in the group: a teammate's tap changes nothing, the approver's runs it", async () => {
  queue.push(
    { toolUses: [{ name: 'spawn_subagent', input: { task: 'Create the folder release.', tools: ['mkdir'] } }] },
    { toolUses: [{ name: 'mkdir', input: { path: 'release' } }] },
    { text: 'release created' },
    { text: 'The sub-agent made the release folder.' },
  );
  await tg.sendText({ chat: group, from: teammate, text: `@${tg.bot.username} prepare the release folder` });
  await tg.waitFor(() => tg.visible(-100200).some((m) => m.replyMarkup !== undefined), 20_000, 'approval card');
  const card = tg.visible(-100200).find((m) => m.replyMarkup !== undefined)!;
  expect(card.plain).toContain('Sub-agent: approve mkdir?');
  expect(card.plain).toContain('From a sub-agent. Its task: Create the folder release.');

  await tg.press(-100200, card.messageId, 0, teammate);
  await tg.waitFor(() => tg.callbackAnswers.length === 1, 20_000, 'callback answered');
  expect(tg.callbackAnswers[0]!.text).toMatch(/Only a bound approver/);
  expect(existsSync(join(dir, 'ws', 'release'))).toBe(false);

  await tg.press(-100200, card.messageId, 0, owner);
  await tg.waitFor(() => tg.visible(-100200).some((m) => m.plain === 'The sub-agent made the release folder.'), 20_000, 'answer');
  expect(existsSync(join(dir, 'ws', 'release'))).toBe(true);
  const last = model.requests.at(-1)!.body as { messages: Array<{ content: unknown }> };
  expect(JSON.stringify(last.messages.at(-1))).toContain('release created');
});
