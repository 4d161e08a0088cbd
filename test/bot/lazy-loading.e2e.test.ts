/**
 * Start-up loads only what it uses (issue 21), on a real process: `gatehouse` (bot/main.ts through
 * test/helpers/register-ts.mjs) run with test/helpers/module-recorder.mjs, which writes every module
 * file the process loads to a file as it loads. `--version` loads the CLI's dispatch alone; a
 * Telegram-only `serve`, once ready, has loaded grammy but none of the other platforms' libraries,
 * the MCP SDK, execa, or the document parsers (no MCP server and no shell tool configured).
 * That these load on first use is what the adapters', MCP and tool e2e tests exercise.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const recorder = join(root, 'test', 'helpers', 'module-recorder.mjs');
const main = join(root, 'bot', 'main.ts');

const NOT_AT_START = ['@slack/bolt', '@slack/socket-mode', 'discord.js', '@modelcontextprotocol/sdk', 'execa', 'unpdf', 'turndown', 'pg', 'pg-boss'];

let dir: string;
let log: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-lazy-'));
  log = join(dir, 'modules.log');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The packages (by name) and our own source files the process loaded so far. */
function loaded(): { packages: Set<string>; own: string[] } {
  const packages = new Set<string>();
  const own: string[] = [];
  for (const line of existsSync(log) ? readFileSync(log, 'utf8').split('\n') : []) {
    const file = line.startsWith('esm file://') ? fileURLToPath(line.slice(4)) : line.slice(4);
    if (!file) continue;
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
    if (m) packages.add(m[1]!);
    else if (file.startsWith(root)) own.push(file.slice(root.length + 1));
  }
  return { packages, own };
}

function gatehouse(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', register, '--import', recorder, main, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: dir, ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', MODULE_RECORDER_LOG: log, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

test('--version and --help load the command table alone: no agent, no adapter, no library', async () => {
  for (const flag of ['--version', '--help']) {
    rmSync(log, { force: true });
    const run = gatehouse([flag], {});
    expect(await run.exited).toBe(0);
    expect(run.output()).toMatch(flag === '--version' ? /^gatehouse \d+\.\d+\.\d+/ : /^Usage:/);
    const { packages, own } = loaded();
    // The recorder saw the process load (so an empty package list means something).
    expect(own).toEqual(['bot/main.ts', 'bot/cli/index.ts', 'bot/cli/io.ts']);
    expect([...packages].filter((p) => p !== '@swc/core')).toEqual([]);
  }
}, 60_000);

describe('a Telegram-only serve', () => {
  let tg: FakeTelegram;
  beforeEach(async () => {
    tg = await startFakeTelegram({ token: '123456:LAZY-test_token_abcdefghijklmnopqr' });
  });
  afterEach(async () => {
    await tg.close();
  });

  test('is ready without loading Slack, Discord, MCP, execa, the document parsers or pg', async () => {
    writeFileSync(
      join(dir, 'gatehouse.yaml'),
      `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [read_file, write_file, web_fetch, read_pdf]\n    workspace: "${join(dir, 'ws')}"\n`,
    );
    const run = gatehouse(['serve'], { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_ROOT: tg.apiRoot, GATEHOUSE_HTTP_PORT: '0' });
    const end = Date.now() + 50_000;
    while (!run.output().includes('Gatehouse started')) {
      if (Date.now() > end || run.child.exitCode !== null) throw new Error(`the bot did not start: ${run.output()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const { packages } = loaded();
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(packages.has('grammy')).toBe(true);
    expect(NOT_AT_START.filter((p) => packages.has(p))).toEqual([]);
  }, 60_000);
});
