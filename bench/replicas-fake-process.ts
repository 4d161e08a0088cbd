/**
 * The fake Telegram Bot API in its own process for bench/replicas.ts, with its load generator. Like
 * bench/telegram-fake-process.ts, but webhook deliveries are retried as Telegram retries them (a
 * replica may be gone), and it can time a leader takeover. Both ends of a latency are stamped here,
 * on one clock: an update just before it is POSTed (webhook) or queued (long polling), its answer
 * when the fake has served the bot's sendMessage.
 *
 * IPC (parent <-> this process):
 *   -> { type: 'ready', apiRoot, token }
 *   <- { type: 'run', id, chatIds, total, ratePerSec?, timeoutMs }   -> { type: 'result', id, ... }
 *   <- { type: 'takeover', id, chatId, since, everyMs, timeoutMs }   -> { type: 'takeover', id, ms }
 *      (messages go to `chatId` every `everyMs` from now; `ms` = wall-clock time from `since`, the
 *      parent's Date.now() at the SIGKILL, to the first answer to one of them)
 * Answers are matched first-in first-out per chat; the fake model always answers "ok".
 */
import { startFakeTelegram, type FakeChat, type FakeUser } from '../test/fakes/telegram.js';

export interface LoadRequest {
  type: 'run';
  id: number;
  chatIds: number[];
  total: number;
  ratePerSec?: number;
  timeoutMs: number;
}

export interface LoadResult {
  type: 'result';
  id: number;
  latencies: number[];
  elapsedMs: number;
  unanswered: number;
  unexpected: number;
  /** Webhook deliveries that needed more than one attempt. */
  redelivered: number;
}

export interface TakeoverRequest {
  type: 'takeover';
  id: number;
  chatId: number;
  since: number;
  everyMs: number;
  timeoutMs: number;
}

const token = '123456:BENCH-replicas_abcdefghijklmnopqrs';
const fake = await startFakeTelegram({ token, webhookRetry: { attempts: 100, delayMs: 100 } });
const chat = (id: number): FakeChat => ({ id, type: 'private', first_name: `U${id}` });
const user = (id: number): FakeUser => ({ id, first_name: `U${id}` });

async function run(req: LoadRequest): Promise<LoadResult> {
  const waiting = new Map<number, number[]>(req.chatIds.map((id) => [id, []]));
  const latencies: number[] = [];
  let unexpected = 0;
  let queued = 0;
  let answered = 0;
  let scanned = fake.sent.length;
  const deliveriesBefore = fake.webhookDeliveries.length;
  let tLast = 0;
  const sendOne = (id: number) => {
    queued++;
    waiting.get(id)!.push(performance.now());
    void fake.sendText({ chat: chat(id), from: user(id), text: `message ${queued}` }).catch(() => undefined);
  };
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  let scanning = false;
  void fake
    .waitFor(
      () => {
        if (scanning) return false;
        scanning = true;
        const now = performance.now();
        const next: number[] = [];
        while (scanned < fake.sent.length) {
          const m = fake.sent[scanned++]!;
          const q = waiting.get(m.chatId);
          if (m.plain !== 'ok' || !q || q.length === 0) {
            unexpected++;
            continue;
          }
          latencies.push(now - q.shift()!);
          answered++;
          tLast = now;
          if (req.ratePerSec === undefined) next.push(m.chatId);
        }
        for (const id of next) if (queued < req.total) sendOne(id);
        scanning = false;
        if (answered >= req.total) finish();
        return answered >= req.total;
      },
      req.timeoutMs,
      'answers',
    )
    .catch(() => finish());
  const t0 = performance.now();
  if (req.ratePerSec === undefined) {
    for (const id of req.chatIds) if (queued < req.total) sendOne(id);
  } else {
    const rate = req.ratePerSec;
    await new Promise<void>((resolve) => {
      const tick = () => {
        const due = Math.min(req.total, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
        while (queued < due) sendOne(req.chatIds[queued % req.chatIds.length]!);
        if (queued >= req.total) resolve();
        else setTimeout(tick, 1);
      };
      tick();
    });
  }
  await done;
  const attempts = new Map<number, number>();
  for (const d of fake.webhookDeliveries.slice(deliveriesBefore)) attempts.set(d.updateId, (attempts.get(d.updateId) ?? 0) + 1);
  return {
    type: 'result',
    id: req.id,
    latencies,
    elapsedMs: tLast - t0,
    unanswered: req.total - answered,
    unexpected,
    redelivered: [...attempts.values()].filter((n) => n > 1).length,
  };
}

async function takeover(req: TakeoverRequest): Promise<{ type: 'takeover'; id: number; ms: number }> {
  const from = fake.sent.length;
  const timer = setInterval(
    () => void fake.sendText({ chat: chat(req.chatId), from: user(req.chatId), text: 'are you there?' }).catch(() => undefined),
    req.everyMs,
  );
  try {
    await fake.waitFor(() => fake.sent.slice(from).some((m) => m.chatId === req.chatId && m.plain === 'ok'), req.timeoutMs, 'the first answer after the kill');
    return { type: 'takeover', id: req.id, ms: Date.now() - req.since };
  } catch {
    return { type: 'takeover', id: req.id, ms: NaN };
  } finally {
    clearInterval(timer);
  }
}

process.on('message', (m: LoadRequest | TakeoverRequest) => {
  const reply = (r: unknown) => process.send?.(r);
  const fail = (err: unknown) => process.send?.({ type: 'error', id: m.id, message: String(err) });
  if (m?.type === 'run') run(m).then(reply, fail);
  else if (m?.type === 'takeover') takeover(m).then(reply, fail);
});
process.on('disconnect', () => void fake.close().then(() => process.exit(0)));
process.send?.({ type: 'ready', apiRoot: fake.apiRoot, token });
