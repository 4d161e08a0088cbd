/**
 * The `gatehouse` executable as a real process (bot/main.ts run through test/helpers/register-ts.mjs):
 * what an operator sees when it stops. Exit codes and signals cannot be observed in-process.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { startGatehouse } from '../helpers/process.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-process-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

test('the terminal chat exits 0 at the end of its input, with the store closed cleanly', async () => {
  // Three times: the shutdown race this guards against (a store call finishing while the store
  // closes) did not show on every run.
  for (let i = 0; i < 3; i++) {
    const p = startGatehouse([], { cwd: dir });
    p.child.stdin.end('/help\n');
    const exit = await p.exited;
    expect(p.stderr()).not.toMatch(/FATAL|napi/);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(p.stdout()).toMatch(/Commands: \/stop cancels the current run/);
    // Everything is in the database file: no WAL left with content.
    const wal = join(dir, 'data', 'gatehouse.sqlite-wal');
    expect(existsSync(wal) ? statSync(wal).size : 0).toBe(0);
  }
}, 60_000);

describe('with Telegram', () => {
  let tg: FakeTelegram;
  beforeEach(async () => {
    tg = await startFakeTelegram({ token: '123456:PROCESS-test_token_abcdefghijklmnop' });
  });
  afterEach(async () => {
    await tg.close();
  });

  test('SIGTERM stops the bot with exit code 0', async () => {
    const p = startGatehouse([], { cwd: dir, env: { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_ROOT: tg.apiRoot, GATEHOUSE_HTTP_PORT: '0' } });
    await p.waitForOutput(/connected as @GatehouseBot/, 'the bot to connect', 20_000);
    const exit = await p.stop('SIGTERM');
    expect(p.stderr()).not.toMatch(/FATAL|napi/);
    expect(exit).toEqual({ code: 0, signal: null });
  }, 30_000);
});
