/**
 * Contract: the shutdown stops shared by test/bot/shutdown-*.e2e.test.ts (split in two files so
 * jest runs them on two workers; each file's moments are bounded on their own).
 *
 * Stopping the real `gatehouse` process (bot/main.ts from source, the terminal chat, the fake model
 * server) with SIGTERM or SIGINT at random moments: during start-up, idle after an answer, while the
 * model is thinking, mid-stream and while an approval waits. TEST_SHUTDOWN_ROUNDS stops per moment
 * (default 6: 30 stops; the race this guards against showed within a few), three children at a
 * time, one test per moment so each is bounded on its own. Each must exit 0 with no fatal error,
 * leave a store that passes `PRAGMA integrity_check`, and keep what was acknowledged: a message the
 * model saw is in the transcript or the queued turns, and an approval card that was shown is still
 * pending in the store. The moments are drawn from a seeded PRNG (TEST_SEED replays a failure).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backupSqliteStore } from '../../../agent/store/sqlite/backup.js';
import { openStore } from '../../../bot/service/storage.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../../fakes/anthropic.js';
import { startGatehouse } from '../../helpers/process.js';
import { seededRandom, withSeed } from '../../helpers/random.js';
import { sleep, waitFor, within } from '../../helpers/wait.js';

const CONFIG = `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [write_file]
    workspace: ./ws
    approvers: { console: [local] }
`;

export type Moment = 'start-up' | 'idle' | 'mid-run' | 'mid-stream' | 'approval wait';
const ROUNDS = Number(process.env.TEST_SHUTDOWN_ROUNDS ?? 6);
const PARALLEL = 3;
const rng = seededRandom();

interface Outcome {
  moment: Moment;
  signal: NodeJS.Signals;
  code: number | null;
  exitSignal: NodeJS.Signals | null;
  output: string;
  /** A wait before the stop that did not end (the process never got to the moment). */
  failed?: string;
  integrity: string;
  /** The message was acknowledged (the model saw it) but is in neither transcript nor queue. */
  lost: boolean;
  acknowledged: boolean;
  /** An approval card was shown; is its request still undecided in the store? */
  approvalShown: boolean;
  approvalPending: boolean;
}

const random = (lo: number, hi: number) => rng.int(lo, hi);

let model: FakeAnthropic;
/** Replies by the nonce in the conversation's first user message. */
const replies = new Map<string, FakeReply[]>();
const seen = new Set<string>();
/** Resolvers for "the model saw this nonce" (event-driven, no polling). */
const onSeen = new Map<string, () => void>();
const modelSaw = (nonce: string) => (seen.has(nonce) ? Promise.resolve() : new Promise<void>((r) => onSeen.set(nonce, r)));

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
  const nonce = `nonce-${rng.word(8)}`;
  const script: Record<Moment, FakeReply[]> = {
    'start-up': [],
    idle: [{ text: `answer for ${nonce}` }],
    'mid-run': [{ text: 'thought about it', delayMs: random(300, 1200) }],
    'mid-stream': [{ text: 'word '.repeat(40), chunkDelayMs: 15 }],
    'approval wait': [{ toolUses: [{ name: 'write_file', input: { path: 'f.txt', content: nonce } }] }, { text: 'saved.' }],
  };
  replies.set(nonce, script[moment]);
  const p = startGatehouse([], { cwd: dir, env: { ANTHROPIC_BASE_URL: model.url } });
  const child = p.child;
  let approvalShown = false;
  let failed: string | undefined;
  // The bounds are generous (a busy machine starts slowly); the random pause after each is the moment.
  try {
    if (moment === 'start-up') {
      // From the process's first line of JavaScript (before that only node itself is booting, and no
      // program can catch a signal) to past the banner.
      await waitFor('the process title (signal handlers installed)', () => titled(child.pid!), { timeoutMs: 60_000, intervalMs: 2, detail: p.output });
      await sleep(random(0, 1500));
    } else {
      await p.waitForOutput('Gatehouse terminal chat', 'the banner', 60_000);
      p.write(`please handle ${nonce}\n`);
      if (moment === 'idle') {
        await p.waitForOutput(`agent> answer for ${nonce}`, 'the answer', 60_000);
        await sleep(random(0, 300));
      } else if (moment === 'mid-run') {
        await within(modelSaw(nonce), 'the model to see the message', 60_000, p.output);
        await sleep(random(0, 300));
      } else if (moment === 'mid-stream') {
        await p.waitForOutput('agent> word', 'the stream to start', 60_000);
        await sleep(random(0, 400));
      } else {
        await p.waitForOutput('[1] Approve once', 'the approval card', 60_000);
        approvalShown = true;
        await sleep(random(0, 300));
      }
    }
  } catch (err) {
    failed = (err as Error).message;
  }
  const acknowledged = seen.has(nonce);
  // A hang is a failure (killed after 30 s, so its exit is SIGKILL); `stop` returns after the last output.
  const { code, signal: exitSignal } = await p.stop(signal, 30_000);
  const output = p.output();

  // What the next start would read: the store file itself.
  let integrity = 'no store';
  let lost = false;
  let approvalPending = false;
  const path = join(dir, 'data', 'gatehouse.sqlite');
  try {
    // Through the engine: a copy of the store must pass SQLite's integrity check, then the
    // repositories are read (never the tables).
    await backupSqliteStore(path, join(dir, 'integrity-copy.sqlite'));
    integrity = 'ok';
    const store = await openStore({ kind: 'sqlite', path, url: `sqlite://${path}` }, { mustExist: true });
    try {
      let kept = (await store.runs.queuedTurns()).filter((q) => JSON.stringify(q.turn).includes(nonce)).length;
      for (const c of await store.transcripts.listRecent({ limit: 100 })) {
        if (JSON.stringify(await store.transcripts.load(c.conversation)).includes(nonce)) kept++;
      }
      lost = acknowledged && kept === 0;
      const now = Date.now();
      const pending = await store.approvals.allPending(now);
      const mine: unknown[] = [];
      for (const p of pending) {
        const a = await store.approvals.get(p.id, now);
        if (a && a.decision === undefined && (a.request as { kind?: unknown }).kind === 'approval' && JSON.stringify(a.request).includes(nonce)) mine.push(a);
      }
      approvalPending = mine.length === 1 && pending.length === 1;
    } finally {
      await store.close();
    }
  } catch (err) {
    // Stopped before the store was created: nothing was acknowledged, nothing to check.
    if (acknowledged || moment !== 'start-up') integrity = `cannot open: ${(err as Error).message}`;
  }
  rmSync(dir, { recursive: true, force: true });
  return { moment, signal, code, exitSignal, output, failed, integrity, lost, acknowledged, approvalShown, approvalPending };
}

/** One test per moment: ROUNDS stops each, PARALLEL children at a time. */
export function describeStops(moments: readonly Moment[]): void {
  beforeAll(async () => {
    model = await startFakeAnthropic({ apiKey: 'sk-test' });
    model.setHandler((req) => {
      const text = JSON.stringify(req.body);
      const nonce = /nonce-[a-z0-9]+/.exec(text)?.[0];
      if (!nonce) return { text: 'ok' };
      seen.add(nonce);
      onSeen.get(nonce)?.();
      return replies.get(nonce)?.shift() ?? { text: 'done.' };
    });
  });
  afterAll(async () => {
    await model.close();
  });

  describe.each(moments)('stopped by SIGTERM / SIGINT at a random moment: %s', (moment) => {
    test(
      `${ROUNDS} stops: every exit 0, the store intact, nothing acknowledged lost`,
      () =>
        withSeed(rng, async () => {
          const plan = Array.from({ length: ROUNDS }, (): NodeJS.Signals => (rng.next() < 0.5 ? 'SIGTERM' : 'SIGINT'));
          const outcomes: Outcome[] = [];
          let next = 0;
          await Promise.all(
            Array.from({ length: PARALLEL }, async () => {
              while (next < plan.length) outcomes.push(await stopOnce(moment, plan[next++]!));
            }),
          );

          expect(outcomes).toHaveLength(ROUNDS);
          expect(outcomes.filter((o) => o.failed).map((o) => `${o.signal}: ${o.failed}`)).toEqual([]);
          const bad = outcomes.filter((o) => o.code !== 0 || o.exitSignal !== null || /FATAL|napi|Error:/.test(o.output));
          expect(bad.map((o) => `${o.signal}: exit ${o.code ?? o.exitSignal}\n${o.output.slice(-800)}`)).toEqual([]);
          expect(outcomes.filter((o) => o.integrity !== 'ok' && o.integrity !== 'no store').map((o) => o.integrity)).toEqual([]);
          if (moment === 'start-up') return; // only some start-up stops came before the store or the message
          // Every run after start-up opened the store, and its message was acknowledged (the model saw
          // it) and so was kept.
          expect(outcomes.filter((o) => o.integrity !== 'ok').map((o) => o.integrity)).toEqual([]);
          expect(outcomes.filter((o) => !o.acknowledged || o.lost).map((o) => `acknowledged ${o.acknowledged}, lost ${o.lost}`)).toEqual([]);
          if (moment === 'approval wait')
            expect(outcomes.filter((o) => !o.approvalShown || !o.approvalPending).map((o) => `shown ${o.approvalShown}, pending ${o.approvalPending}`)).toEqual(
              [],
            );
        }),
      // Bounded by the work: each stop waits at most 60 s for its moment and 30 s for the exit.
      Math.ceil(ROUNDS / PARALLEL) * 100_000,
    );
  });
}
