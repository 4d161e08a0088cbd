/**
 * The fake Discord (gateway + REST) in its own process, plus the load generator, for
 * bench/discord.ts. Both timestamps of a message are taken here (one clock): when the MESSAGE_CREATE
 * dispatch is sent on the gateway and when the bot's POST /channels/:id/messages with the answer
 * arrives.
 *
 * IPC: -> parent { type: 'ready', apiUrl }; <- { type: 'run', id, channels, total, ratePerSec? }
 *      -> parent { type: 'result', id, latenciesMs, elapsedMs, errors }.
 */
import { driveLoad } from './harness.js';
import { startFakeDiscord } from '../test/fakes/discord.js';

export const BENCH_DISCORD_TOKEN = 'OTAwMDAwMDAwMDAwMDAwMDAx.Gbench.benchDiscordTokenValue0123456789';
/** User i writes from DM channel dmChannel(i); its user id is benchUser(i). */
export const benchUser = (i: number) => String(600000000000000000n + BigInt(i));
const dmChannel = (i: number) => String(800000000000000000n + BigInt(i));

interface RunRequest {
  type: 'run';
  id: number;
  channels: number;
  total: number;
  ratePerSec?: number;
}

const fake = await startFakeDiscord({ token: BENCH_DISCORD_TOKEN });
const waiting = new Map<string, Array<{ at: number; done: (ms: number) => void }>>();
fake.onPost = (m) => {
  const first = waiting.get(m.channelId)?.shift();
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

async function run(req: RunRequest): Promise<{ latenciesMs: number[]; elapsedMs: number; errors: number }> {
  fake.messages.length = 0;
  fake.calls.length = 0;
  const latencies: number[] = [];
  const send = (i: number): Promise<void> => {
    const lane = i % req.channels;
    const channel = dmChannel(lane);
    return new Promise<void>((resolve) => {
      const q = waiting.get(channel) ?? [];
      waiting.set(channel, q);
      q.push({ at: performance.now(), done: (ms) => (latencies.push(ms), resolve()) });
      fake.userMessage({ user: { id: benchUser(lane), name: `u${lane}` }, channel, text: `message ${i}` });
    });
  };
  const start = performance.now();
  await driveLoad(req, send);
  const errors = fake.calls.filter((c) => c.status >= 400).length;
  return { latenciesMs: latencies, elapsedMs: performance.now() - start, errors };
}
