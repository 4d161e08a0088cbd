/**
 * Draining one `gatehouse serve` process (SQLite, the fake Telegram in long polling, the fake model):
 * /readyz is 200 with role "sole" while it serves; SIGTERM in the middle of a slow turn: /readyz
 * answers 503 "draining", polling stops at once (no poll open at the fake), the running turn still
 * posts its answer, exit 0. A second SIGTERM while draining exits at once (143), before the turn
 * could answer.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const main = join(root, 'bot', 'main.ts');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const user = { id: 4242, first_name: 'Ada' };
const chat = { id: 4242, type: 'private' as const, first_name: 'Ada' };

let model: FakeAnthropic;
let telegram: FakeTelegram;
let dir: string;


const lastUser = (req: RecordedRequest): string => JSON.stringify((req.body as { messages?: unknown[] }).messages?.at(-1) ?? '');

beforeAll(async () => {
  model = await startFakeAnthropic({ apiKey: 'sk-test' });
});
afterAll(async () => {
  await model.close();
});
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-drain-'));
  writeFileSync(join(dir, 'gatehouse.yaml'), `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [read_file]\n    workspace: ./ws\naccess:\n  telegram: { users: ["${user.id}"] }\n`);
  telegram = await startFakeTelegram({ token: '123456:ABC-drain-test' });
  telegram.addChat(chat);
  model.setHandler((req): FakeReply => {
    const nonce = /msg-[a-z0-9]+/.exec(lastUser(req))?.[0] ?? 'none';
    return { text: `echo ${nonce}`, delayMs: 6_000 };
  });
});
afterEach(async () => {

  await telegram.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Proc {
  child: ChildProcessWithoutNullStreams;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function serve(): Proc {
  const child = spawn(process.execPath, ['--import', register, main, 'serve'], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      ANTHROPIC_API_KEY: 'sk-test',
      ANTHROPIC_BASE_URL: model.url,
      GATEHOUSE_HTTP_PORT: '0',
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.apiRoot,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => out, exited };
}

async function until(what: string, check: () => boolean, p: Proc, timeoutMs = 90_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${p.output()}`);
    await sleep(20);
  }
}

async function readyz(port: number): Promise<{ status: number; body: { role: string; notReady: string[]; draining: boolean } }> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: res.status, body: (await res.json()) as never };
}

async function startedWithSlowTurn(nonce: string): Promise<{ p: Proc; port: number }> {
  const p = serve();
  await until('the start', () => p.output().includes('Gatehouse started'), p);
  const port = Number(/HTTP server on http:\/\/127\.0\.0\.1:(\d+)/.exec(p.output())![1]);
  const ready = await readyz(port);
  expect([ready.status, ready.body.role, ready.body.notReady]).toEqual([200, 'sole', []]);
  await telegram.sendText({ chat, from: user, text: `hello ${nonce}` });
  await until('the turn to reach the model', () => model.requests.some((r) => lastUser(r).includes(nonce)), p);
  return { p, port };
}

const answered = (nonce: string) => telegram.sent.filter((m) => m.plain.includes(`echo ${nonce}`)).length;

test('SIGTERM drains: /readyz 503 draining, polling stops, the running turn answers, exit 0', async () => {
  const nonce = `msg-${Math.random().toString(36).slice(2, 8)}`;
  const { p, port } = await startedWithSlowTurn(nonce);
  p.child.kill('SIGTERM');
  let draining = await readyz(port);
  while (!draining.body.draining) draining = await readyz(port);
  expect(draining.status).toBe(503);
  expect(draining.body.notReady).toContain('draining: this replica is shutting down');
  await until('polling to stop', () => telegram.pollsOpen() === 0, p, 10_000);
  expect(answered(nonce)).toBe(0);
  expect(await p.exited).toEqual({ code: 0, signal: null });
  expect(answered(nonce)).toBe(1);
}, 180_000);

test('a second SIGTERM while draining exits at once, without waiting for the turn', async () => {
  const nonce = `msg-${Math.random().toString(36).slice(2, 8)}`;
  const { p, port } = await startedWithSlowTurn(nonce);
  p.child.kill('SIGTERM');
  let draining = await readyz(port);
  while (!draining.body.draining) draining = await readyz(port);
  p.child.kill('SIGTERM');
  expect(await p.exited).toEqual({ code: 143, signal: null });
  expect(p.output()).toContain('SIGTERM again: exiting at once');
  expect(answered(nonce)).toBe(0);
}, 180_000);
