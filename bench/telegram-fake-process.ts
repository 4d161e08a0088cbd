/**
 * The fake Telegram Bot API in its own process, plus the load generator that drives it, for
 * bench/telegram.ts. Both ends of every measurement are taken here (one clock, no cross-process
 * timing): an update is stamped just before it is queued for the bot's long poll, and its reply is
 * stamped when the fake has answered the bot's sendMessage.
 *
 * IPC protocol (parent <-> this process):
 *   -> parent: { type: 'ready', apiRoot, token }
 *   <- parent: RunRequest                 -> parent: RunResult (same id)
 * Exits when the parent disconnects.
 *
 * Replies are matched to messages first-in first-out per chat: the bot handles a chat's messages in
 * order and the fake model answers every turn with the same text ("ok"), so the n-th answer in a
 * chat is the answer to its n-th message. Anything else the bot sends is counted as unexpected.
 */
import { startFakeTelegram, type FakeChat, type FakeUser } from '../test/fakes/telegram.js';

export interface RunRequest {
  type: 'run';
  id: number;
  /** Private chats (chat id = user id); each chat is its own user. */
  chatIds: number[];
  /** Messages in all, spread round-robin over the chats. */
  total: number;
  /**
   * undefined: closed loop, a chat's next message goes out when its previous answer arrived (one in
   * flight per chat). A number: open loop, messages go out at this rate whatever the bot does.
   */
  ratePerSec?: number;
  /** The text of the answer the fake model gives. */
  expect: string;
  timeoutMs: number;
}

export interface RunResult {
  type: 'result';
  id: number;
  /** ms from update queued to answer received, one per answered message. */
  latencies: number[];
  /** First message queued to last answer received. */
  elapsedMs: number;
  /** Messages the bot sent that were not an expected answer (first few texts). */
  unexpected: string[];
  unexpectedCount: number;
  /** Messages with no answer when the run timed out. */
  unanswered: number;
  /** Bot API calls the fake served during the run, by method. */
  calls: Record<string, number>;
  /** CPU time (user + system) this process used during the run. */
  cpuMs: number;
}

const token = '123456:BENCH-token_abcdefghijklmnopqrstuv';
const fake = await startFakeTelegram({ token });

async function run(req: RunRequest): Promise<RunResult> {
  const n = req.chatIds.length;
  const chats: FakeChat[] = req.chatIds.map((id) => ({ id, type: 'private', first_name: `U${id}` }));
  const users: FakeUser[] = req.chatIds.map((id) => ({ id, first_name: `U${id}` }));
  const index = new Map(req.chatIds.map((id, i) => [id, i]));
  /** Per chat: send times of messages still waiting for their answer, oldest first. */
  const waiting: number[][] = chats.map(() => []);
  const latencies: number[] = [];
  const unexpected: string[] = [];
  let unexpectedCount = 0;
  let queued = 0;
  let answered = 0;
  let scanned = fake.sent.length;
  let scanning = false;
  const callsBefore = fake.calls.length;
  let t0 = 0;
  let tLast = 0;
  const cpu0 = process.cpuUsage();

  const sendOne = (chat: number): void => {
    const seq = queued++;
    waiting[chat]!.push(performance.now());
    // Polling mode: sendText queues the update and completes the bot's pending getUpdates synchronously.
    void fake.sendText({ chat: chats[chat]!, from: users[chat]!, text: `message ${seq}` });
  };

  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));

  // The fake calls its waiters after every API call it served: scan what the bot sent since.
  const watcher = fake.waitFor(
    () => {
      if (scanning) return false; // sendOne below notifies the waiters again
      scanning = true;
      const now = performance.now();
      const next: number[] = [];
      while (scanned < fake.sent.length) {
        const m = fake.sent[scanned++]!;
        const chat = index.get(m.chatId);
        const q = chat === undefined ? undefined : waiting[chat];
        if (m.plain !== req.expect || !q || q.length === 0) {
          if (unexpected.length < 5) unexpected.push(`chat ${m.chatId}: ${m.plain.slice(0, 200)}`);
          unexpectedCount++;
          continue;
        }
        latencies.push(now - q.shift()!);
        answered++;
        tLast = now;
        if (req.ratePerSec === undefined) next.push(chat!);
      }
      for (const c of next) if (queued < req.total) sendOne(c);
      scanning = false;
      if (answered >= req.total) finish();
      return answered >= req.total;
    },
    req.timeoutMs,
    'answers',
  );
  watcher.catch(() => finish());

  t0 = performance.now();
  if (req.ratePerSec === undefined) {
    for (let c = 0; c < n && queued < req.total; c++) sendOne(c);
  } else {
    // Open loop: on each tick, send what the schedule says is due by now.
    const rate = req.ratePerSec;
    await new Promise<void>((resolve) => {
      const tick = () => {
        const due = Math.min(req.total, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
        while (queued < due) sendOne(queued % n);
        if (queued >= req.total) resolve();
        else setTimeout(tick, 1);
      };
      tick();
    });
  }
  await done;

  const calls: Record<string, number> = {};
  for (const c of fake.calls.slice(callsBefore)) calls[c.method] = (calls[c.method] ?? 0) + 1;
  return {
    type: 'result',
    id: req.id,
    latencies,
    elapsedMs: tLast - t0,
    unexpected,
    unexpectedCount,
    unanswered: req.total - answered,
    calls,
    cpuMs: cpuMs(process.cpuUsage(cpu0)),
  };
}

const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;

process.on('message', (m: RunRequest) => {
  if (m?.type !== 'run') return;
  run(m).then(
    (r) => process.send?.(r),
    (err: unknown) => process.send?.({ type: 'error', id: m.id, message: String(err) }),
  );
});
process.on('disconnect', () => void fake.close().then(() => process.exit(0)));
process.send?.({ type: 'ready', apiRoot: fake.apiRoot, token });
