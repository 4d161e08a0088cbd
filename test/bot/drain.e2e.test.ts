/**
 * Draining one `gatehouse serve` process (SQLite, the fake Telegram in long polling, the fake model):
 * /readyz is 200 with role "sole" while it serves; SIGTERM in the middle of a slow turn (the model
 * holds its reply until the test releases it, so no delay has to outlast a busy machine): /readyz
 * answers 503 "draining", polling stops at once (no poll open at the fake), the running turn still
 * posts its answer, exit 0. A second SIGTERM while draining exits at once (143), before the turn
 * could answer.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { startGatehouse, waitForProcess, type TestProcess } from '../helpers/process.js';
import { seededRandom } from '../helpers/random.js';
import { waitFor } from '../helpers/wait.js';

const rng = seededRandom();
const user = { id: 4242, first_name: 'Ada' };
const chat = { id: 4242, type: 'private' as const, first_name: 'Ada' };

let model: FakeAnthropic;
let telegram: FakeTelegram;
let dir: string;
/** Releases the slow turn's model reply. */
let release: () => void = () => undefined;

const lastUser = (req: RecordedRequest): string => JSON.stringify((req.body as { messages?: unknown[] }).messages?.at(-1) ?? '');

beforeAll(async () => {
  model = await startFakeAnthropic({ apiKey: 'sk-test' });
});
afterAll(async () => {
  await model.close();
});
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-drain-'));
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [read_file]\n    workspace: ./ws\naccess:\n  telegram: { users: ["${user.id}"] }\n`,
  );
  telegram = await startFakeTelegram({ token: '123456:ABC-drain-test' });
  telegram.addChat(chat);
  const gate = new Promise<void>((r) => (release = r));
  model.setHandler((req): FakeReply => {
    const nonce = /msg-[a-z0-9]+/.exec(lastUser(req))?.[0] ?? 'none';
    return { text: `echo ${nonce}`, gate };
  });
});
afterEach(async () => {
  release();
  await telegram.close();
  rmSync(dir, { recursive: true, force: true });
});

type Proc = TestProcess;

function serve(): Proc {
  return startGatehouse(['serve'], {
    cwd: dir,
    env: { ANTHROPIC_BASE_URL: model.url, GATEHOUSE_HTTP_PORT: '0', TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_API_ROOT: telegram.apiRoot },
  });
}

const until = (what: string, check: () => boolean, p: Proc, timeoutMs = 90_000) => waitForProcess(p, what, check, timeoutMs);

/** Until /readyz says draining (it answers 200 until the SIGTERM is handled). */
async function drainingReadyz(port: number, p: Proc): Promise<Awaited<ReturnType<typeof readyz>>> {
  return waitFor(
    '/readyz to say draining',
    async () => {
      const r = await readyz(port);
      return r.body.draining ? r : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 10, detail: p.output },
  );
}

async function readyz(port: number): Promise<{ status: number; body: { role: string; notReady: string[]; draining: boolean } }> {
  // One retry when the pooled keep-alive socket was closed by the server just as it was reused
  // (undici: "other side closed"), a race of the idle timeouts on a busy machine, not an answer.
  const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => fetch(`http://127.0.0.1:${port}/readyz`));
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
  const nonce = `msg-${rng.word(6)}`;
  const { p, port } = await startedWithSlowTurn(nonce);
  p.child.kill('SIGTERM');
  const draining = await drainingReadyz(port, p);
  expect(draining.status).toBe(503);
  expect(draining.body.notReady).toContain('draining: this replica is shutting down');
  await until('polling to stop', () => telegram.pollsOpen() === 0, p, 10_000);
  expect(answered(nonce)).toBe(0);
  release();
  expect(await p.exited).toEqual({ code: 0, signal: null });
  expect(answered(nonce)).toBe(1);
}, 180_000);

test('a second SIGTERM while draining exits at once, without waiting for the turn', async () => {
  const nonce = `msg-${rng.word(6)}`;
  const { p, port } = await startedWithSlowTurn(nonce);
  p.child.kill('SIGTERM');
  await drainingReadyz(port, p);
  p.child.kill('SIGTERM');
  expect(await p.exited).toEqual({ code: 143, signal: null });
  expect(p.output()).toContain('SIGTERM again: exiting at once');
  expect(answered(nonce)).toBe(0);
}, 180_000);
