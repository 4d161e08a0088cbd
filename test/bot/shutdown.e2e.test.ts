/**
 * Stopping the real `gatehouse` process (bot/main.ts from source, the terminal chat, the fake model
 * server) with SIGTERM or SIGINT at random moments: during start-up, idle after an answer, while the
 * model is thinking, mid-stream and while an approval waits. 60 stops in all, three children at a
 * time. Each must exit 0 with no fatal error, leave a store that passes `PRAGMA integrity_check`,
 * and keep what was acknowledged: a message the model saw is in the transcript or the queued turns,
 * and an approval card that was shown is still pending in the store.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { openInterimStore } from '../../bot/interim-store.js';

/** Whether a transcript or a queued turn holds `nonce` (what the next start would run or show). */
async function keptInRepositories(path: string, nonce: string): Promise<boolean> {
  let store;
  try {
    store = await openInterimStore({ kind: 'sqlite', path, url: `sqlite://${path}` }, () => undefined, { mustExist: true });
  } catch {
    return false;
  }
  try {
    if ((await store.runs.queuedTurns()).some((q) => JSON.stringify(q.turn).includes(nonce))) return true;
    for (const c of await store.transcripts.listRecent({ limit: 100 })) {
      const t = await store.transcripts.load(c.conversation);
      if (t && JSON.stringify([t.base, t.rows]).includes(nonce)) return true;
    }
    return false;
  } finally {
    await store.close();
  }
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const main = join(root, 'bot', 'main.ts');

const CONFIG = `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [write_file]
    workspace: ./ws
    approvers: { console: [local] }
`;

type Moment = 'start-up' | 'idle' | 'mid-run' | 'mid-stream' | 'approval wait';
const MOMENTS: Moment[] = ['start-up', 'idle', 'mid-run', 'mid-stream', 'approval wait'];
const ROUNDS = 12; // per moment: 60 stops
const PARALLEL = 3;

interface Outcome {
  moment: Moment;
  signal: NodeJS.Signals;
  code: number | null;
  exitSignal: NodeJS.Signals | null;
  output: string;
  integrity: string;
  /** The message was acknowledged (the model saw it) but is in neither transcript nor queue. */
  lost: boolean;
  acknowledged: boolean;
  /** An approval card was shown; is its request still undecided in the store? */
  approvalShown: boolean;
  approvalPending: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const random = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo));

let model: FakeAnthropic;
/** Replies by the nonce in the conversation's first user message. */
const replies = new Map<string, FakeReply[]>();
const seen = new Set<string>();

beforeAll(async () => {
  model = await startFakeAnthropic({ apiKey: 'sk-test' });
  model.setHandler((req) => {
    const text = JSON.stringify(req.body);
    const nonce = /nonce-[a-z0-9]+/.exec(text)?.[0];
    if (!nonce) return { text: 'ok' };
    seen.add(nonce);
    return replies.get(nonce)?.shift() ?? { text: 'done.' };
  });
});
afterAll(async () => {
  await model.close();
});

async function until(check: () => boolean, timeoutMs = 20_000): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) return false;
    await sleep(10);
  }
  return true;
}

/** bot/main.ts sets its title once it handles signals (before that only node itself is booting). */
function titled(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('gatehouse\0');
  } catch {
    return false;
  }
}

async function stopOnce(moment: Moment, signal: NodeJS.Signals): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'gh-shutdown-'));
  writeFileSync(join(dir, 'gatehouse.yaml'), CONFIG);
  const nonce = `nonce-${Math.random().toString(36).slice(2, 10)}`;
  const script: Record<Moment, FakeReply[]> = {
    'start-up': [],
    idle: [{ text: `answer for ${nonce}` }],
    'mid-run': [{ text: 'thought about it', delayMs: random(300, 1200) }],
    'mid-stream': [{ text: 'word '.repeat(40), chunkDelayMs: 15 }],
    'approval wait': [{ toolUses: [{ name: 'write_file', input: { path: 'f.txt', content: nonce } }] }, { text: 'saved.' }],
  };
  replies.set(nonce, script[moment]);
  const child = spawn(process.execPath, ['--import', register, main], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: dir, ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: model.url },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, exitSignal) => resolve({ code, signal: exitSignal })),
  );
  let approvalShown = false;
  if (moment === 'start-up') {
    // From the process's first line of JavaScript (before that only node itself is booting, and no
    // program can catch a signal) to past the banner.
    await until(() => titled(child.pid!), 20_000);
    await sleep(random(0, 1500));
  } else {
    await until(() => output.includes('Gatehouse terminal chat'));
    child.stdin.write(`please handle ${nonce}\n`);
    if (moment === 'idle') {
      await until(() => output.includes(`agent> answer for ${nonce}`));
      await sleep(random(0, 1500));
    } else if (moment === 'mid-run') {
      await until(() => seen.has(nonce));
      await sleep(random(0, 300));
    } else if (moment === 'mid-stream') {
      await until(() => output.includes('agent> word'));
      await sleep(random(0, 400));
    } else {
      approvalShown = await until(() => output.includes('[1] Approve once'));
      await sleep(random(0, 1500));
    }
  }
  const acknowledged = seen.has(nonce);
  child.kill(signal);
  let hung: NodeJS.Timeout | undefined;
  const { code, signal: exitSignal } = await Promise.race([
    exited,
    new Promise<{ code: number; signal: null }>((resolve) => {
      hung = setTimeout(() => {
        child.kill('SIGKILL');
        resolve({ code: -1, signal: null });
      }, 30_000);
    }),
  ]);
  clearTimeout(hung);
  await sleep(20); // let the pipes drain

  // What the next start would read: the store file itself.
  let integrity = 'no store';
  let lost = false;
  let approvalPending = false;
  const path = join(dir, 'data', 'gatehouse.sqlite');
  try {
    const db = new Database(path, { fileMustExist: true });
    try {
      integrity = String(db.pragma('integrity_check', { simple: true }));
      // The message is in a transcript or still queued: read through the repositories.
      lost = acknowledged && !(await keptInRepositories(path, nonce));
      approvalPending =
        (db
          .prepare(
            "SELECT count(*) FROM keyv WHERE key LIKE 'approvals:r:%' AND json_extract(value, '$.value.kind') = 'approval' " +
              "AND json_extract(value, '$.value.decision') IS NULL AND instr(value, ?) > 0",
          )
          .pluck()
          .get(nonce) as number) === 1 &&
        (db.prepare("SELECT count(*) FROM keyv WHERE key LIKE 'approvals:p:%'").pluck().get() as number) === 1;
    } finally {
      db.close();
    }
  } catch (err) {
    // Stopped before the store was created: nothing was acknowledged, nothing to check.
    if (acknowledged || moment !== 'start-up') integrity = `cannot open: ${(err as Error).message}`;
  }
  rmSync(dir, { recursive: true, force: true });
  return { moment, signal, code, exitSignal, output, integrity, lost, acknowledged, approvalShown, approvalPending };
}

test('60 stops by SIGTERM / SIGINT at random moments: every exit 0, the store intact, nothing acknowledged lost', async () => {
  const plan: Array<{ moment: Moment; signal: NodeJS.Signals }> = [];
  for (let i = 0; i < ROUNDS; i++) for (const moment of MOMENTS) plan.push({ moment, signal: Math.random() < 0.5 ? 'SIGTERM' : 'SIGINT' });
  plan.sort(() => Math.random() - 0.5);
  const outcomes: Outcome[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < plan.length) {
        const { moment, signal } = plan[next++]!;
        outcomes.push(await stopOnce(moment, signal));
      }
    }),
  );

  const exits = new Map<string, number>();
  for (const o of outcomes) exits.set(String(o.exitSignal ?? o.code), (exits.get(String(o.exitSignal ?? o.code)) ?? 0) + 1);
  console.log(`exits by code: ${JSON.stringify(Object.fromEntries(exits))}; by moment: ${MOMENTS.map((m) => `${m} ${outcomes.filter((o) => o.moment === m).length}`).join(', ')}`);

  expect(outcomes).toHaveLength(60);
  const bad = outcomes.filter((o) => o.code !== 0 || o.exitSignal !== null || /FATAL|napi|Error:/.test(o.output));
  expect(bad.map((o) => `${o.moment} ${o.signal}: exit ${o.code ?? o.exitSignal}\n${o.output.slice(-800)}`)).toEqual([]);
  expect(outcomes.filter((o) => o.integrity !== 'ok' && o.integrity !== 'no store').map((o) => `${o.moment}: ${o.integrity}`)).toEqual([]);
  // Every run after start-up opened the store; only some start-up stops came before it.
  expect(outcomes.filter((o) => o.moment !== 'start-up' && o.integrity !== 'ok')).toEqual([]);
  expect(outcomes.filter((o) => o.lost).map((o) => o.moment)).toEqual([]);
  // Every message after start-up was acknowledged (the model saw it) and so was kept.
  expect(outcomes.filter((o) => o.moment !== 'start-up' && !o.acknowledged).map((o) => o.moment)).toEqual([]);
  const approvals = outcomes.filter((o) => o.moment === 'approval wait');
  expect(approvals.every((o) => o.approvalShown && o.approvalPending)).toBe(true);
}, 300_000);
