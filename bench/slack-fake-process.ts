/**
 * The fake Slack in its own process, plus the load generator, for bench/slack.ts. Both timestamps of
 * a message are taken here (one clock): when the event is sent to the bot (signed POST or Socket Mode
 * envelope) and when the bot's chat.postMessage with the answer arrives.
 *
 * IPC: -> parent { type: 'ready', apiUrl }; <- { type: 'run', id, eventsUrl, channels, total, ratePerSec? }
 *      -> parent { type: 'result', id, latenciesMs, elapsedMs, errors }. argv[2]: 'http' | 'socket'.
 * `errors`: deliveries Slack would count as failed (not acked, HTTP status not 200) plus messages
 * with no answer within 60 s (lost), so an overloaded run still ends and says so.
 */
import { driveLoad } from './harness.js';
import { startFakeSlack } from '../test/fakes/slack.js';

export const BENCH_BOT_TOKEN = 'xoxb-1-2-benchBotToken';
export const BENCH_APP_TOKEN = 'xapp-1-A0APP-3-benchAppToken';
export const BENCH_SECRET = 'bench-signing-secret';

interface RunRequest {
  type: 'run';
  id: number;
  eventsUrl: string;
  channels: number;
  total: number;
  ratePerSec?: number;
}

const mode = process.argv[2] === 'socket' ? 'socket' : 'http';
const fake = await startFakeSlack({ botToken: BENCH_BOT_TOKEN, appToken: BENCH_APP_TOKEN, signingSecret: BENCH_SECRET });
fake.mode = mode;
const waiting = new Map<string, Array<{ at: number; done: (ms: number) => void }>>();
fake.onPost = (m) => {
  const q = waiting.get(m.channel);
  const first = q?.shift();
  if (first) first.done(performance.now() - first.at);
};
process.send?.({ type: 'ready', apiUrl: fake.apiUrl });
process.on('disconnect', () => void fake.close().then(() => process.exit(0)));

process.on('message', (raw) => {
  const req = raw as RunRequest;
  void run(req).then(
    (r) => process.send?.({ type: 'result', id: req.id, ...r }),
    (err: unknown) => process.send?.({ type: 'error', id: req.id, message: String(err) }),
  );
});

/** A message with no answer after this is counted as an error (lost), so a row always ends. */
const ANSWER_TIMEOUT_MS = 60_000;

async function run(req: RunRequest): Promise<{ latenciesMs: number[]; elapsedMs: number; errors: number }> {
  fake.eventsUrl = req.eventsUrl;
  fake.messages.length = 0;
  fake.calls.length = 0;
  const latencies: number[] = [];
  let errors = 0;
  const send = (i: number): Promise<void> => {
    const user = `U${String(i % req.channels).padStart(5, '0')}`;
    const channel = `D${String(i % req.channels).padStart(5, '0')}`;
    return new Promise<void>((resolve) => {
      const q = waiting.get(channel) ?? [];
      waiting.set(channel, q);
      const entry = { at: performance.now(), done: (ms: number) => (clearTimeout(timer), latencies.push(ms), resolve()) };
      const timer = setTimeout(() => {
        q.splice(q.indexOf(entry), 1);
        errors++;
        resolve();
      }, ANSWER_TIMEOUT_MS);
      q.push(entry);
      fake.userMessage({ user, channel, text: `message ${i}`, im: true }).then(
        (r) => {
          if (r.statuses.some((s) => s !== 200)) errors++;
        },
        () => errors++,
      );
    });
  };
  const start = performance.now();
  await driveLoad(req, send);
  return { latenciesMs: latencies, elapsedMs: performance.now() - start, errors };
}
