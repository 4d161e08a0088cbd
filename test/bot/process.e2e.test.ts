/**
 * The `gatehouse` executable as a real process (bot/main.ts run through test/helpers/register-ts.mjs):
 * what an operator sees when it stops. Exit codes and signals cannot be observed in-process.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const main = join(root, 'bot', 'main.ts');

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function gatehouse(
  cwd: string,
  env: Record<string, string>,
  drive: (child: ReturnType<typeof spawn>, output: () => string) => void | Promise<void>,
): Promise<Run> {
  const child = spawn(process.execPath, ['--import', register, main], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: cwd, ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<Run>((resolve) =>
    child.once('exit', (code, signal) => {
      // Let the pipes drain.
      setTimeout(() => resolve({ code, signal, stdout, stderr }), 50);
    }),
  );
  void Promise.resolve(drive(child, () => stdout + stderr));
  return exited;
}

async function until(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

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
    const run = await gatehouse(dir, {}, (child) => {
      child.stdin!.end('/help\n');
    });
    expect(run.stderr).not.toMatch(/FATAL|napi/);
    expect({ code: run.code, signal: run.signal }).toEqual({ code: 0, signal: null });
    expect(run.stdout).toMatch(/Commands: \/stop cancels the current run/);
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
    const run = await gatehouse(
      dir,
      { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_ROOT: tg.apiRoot, GATEHOUSE_HTTP_PORT: '0' },
      async (child, output) => {
        await until('the bot to connect', () => /connected as @GatehouseBot/.test(output()));
        child.kill('SIGTERM');
      },
    );
    expect(run.stderr).not.toMatch(/FATAL|napi/);
    expect({ code: run.code, signal: run.signal }).toEqual({ code: 0, signal: null });
  }, 30_000);
});
