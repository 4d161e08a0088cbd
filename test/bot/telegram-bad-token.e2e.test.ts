/**
 * `gatehouse serve` (bot/main.ts from source, the real grammy client) with a TELEGRAM_BOT_TOKEN the
 * fake Bot API does not know: getMe gets 401. The process fails its start with what to do, and
 * nothing it prints (the error, its cause, any log line) holds the token: it is in every Bot API URL.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { startGatehouse } from '../helpers/process.js';

const BAD_TOKEN = '424242:WRONG-token_abcdefghijklmnopqrstuv';

let dir: string;
let tg: FakeTelegram;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-tg-bad-token-'));
  tg = await startFakeTelegram({ token: '123456:RIGHT-token_abcdefghijklmnopqrs' });
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    ['agents:', '  ops:', '    model: claude-sonnet-5-5', '    workspace: ./ws', 'access:', '  telegram: { users: ["501"] }', ''].join('\n'),
  );
});

afterEach(async () => {
  await tg.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a token Telegram rejects: serve exits non-zero saying what to do, and no output holds the token', async () => {
  const p = startGatehouse(['serve'], {
    cwd: dir,
    env: { TELEGRAM_BOT_TOKEN: BAD_TOKEN, TELEGRAM_API_ROOT: tg.apiRoot, GATEHOUSE_HTTP_PORT: '0' },
  });
  const exit = await p.exited;
  expect(exit.code).not.toBe(0);
  expect(p.output()).toContain('TELEGRAM_BOT_TOKEN was rejected by Telegram (401 Unauthorized): check the token from @BotFather');
  // The token, and its secret half on its own (a log line could cut it at the colon).
  expect(p.output()).not.toContain(BAD_TOKEN);
  expect(p.output()).not.toContain(BAD_TOKEN.split(':')[1]);
}, 60_000);
