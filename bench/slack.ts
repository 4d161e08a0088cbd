/**
 * Benchmark (not a test): Slack messages per second and the latency from an event sent by the fake
 * Slack to the bot's answer reaching it, with the fake model answering at once, in HTTP mode
 * (signed POSTs to /slack/events) and Socket Mode (envelopes over WebSocket).
 *
 * What runs: the real start path (bot/cli/index.ts startBot) with the real Bolt adapter; this process is
 * only the bot. The fake model (bench/fake-model-process.ts) and the fake Slack with its load
 * generator (bench/slack-fake-process.ts) run in child processes; both timestamps are taken in the
 * fake Slack's process. Rows: closed (one message in flight per channel) and open (a fixed rate,
 * default 300/s, round-robin) over 100 DM channels, each row on a fresh bot, store and fakes after a
 * warm-up. "main ms/msg" is CPU of the bot's main thread per message (from /proc).
 *
 * Run: npm run build && node dist/bench/slack.js [--messages 2000] [--rate 300] [--modes http,socket]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBot } from '../bot/cli/index.js';
import { forkReady, mainThreadCpuMs, pct, runLoad } from './harness.js';
import { BENCH_APP_TOKEN, BENCH_BOT_TOKEN, BENCH_SECRET } from './slack-fake-process.js';

const CHANNELS = 100;

async function row(mode: 'http' | 'socket', label: string, total: number, ratePerSec?: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-slack-'));
  const users = Array.from({ length: CHANNELS }, (_, i) => `"U${String(i).padStart(5, '0')}"`).join(', ');
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    workspace: "${join(dir, 'ws')}"\naccess:\n  slack: { users: [${users}] }\n  rateLimit: { messages: 10000, perSeconds: 1 }\n`,
  );
  const model = await forkReady('fake-model-process.js');
  const slack = await forkReady('slack-fake-process.js', [mode]);
  const apiUrl = (slack.ready as { apiUrl: string }).apiUrl;
  const bot = await startBot(
    {
      env: {
        ANTHROPIC_API_KEY: 'bench',
        ANTHROPIC_BASE_URL: String(model.ready),
        GATEHOUSE_CONFIG: join(dir, 'gatehouse.yaml'),
        GATEHOUSE_STORE: `sqlite://${join(dir, 'store.sqlite')}`,
        GATEHOUSE_HTTP_PORT: '0',
        SLACK_BOT_TOKEN: BENCH_BOT_TOKEN,
        SLACK_API_URL: apiUrl,
        ...(mode === 'socket' ? { SLACK_APP_TOKEN: BENCH_APP_TOKEN } : { SLACK_SIGNING_SECRET: BENCH_SECRET }),
      },
      cwd: dir,
      stdout: new PassThrough(),
      stderr: new PassThrough(),
    },
    () => undefined,
  );
  const eventsUrl = `http://127.0.0.1:${bot.http!.port}/slack/events`;
  try {
    await runLoad(slack.child, { eventsUrl, channels: CHANNELS, total: 600 }); // warm-up, not printed
    const cpu0 = mainThreadCpuMs();
    const r = await runLoad(slack.child, { eventsUrl, channels: CHANNELS, total, ...(ratePerSec ? { ratePerSec } : {}) });
    const cpu = mainThreadCpuMs() - cpu0;
    const sorted = [...r.latenciesMs].sort((a, b) => a - b);
    const perSec = (sorted.length / r.elapsedMs) * 1000;
    return [
      mode.padEnd(7),
      label.padEnd(7),
      String(sorted.length).padStart(6),
      perSec.toFixed(0).padStart(7),
      ...[50, 90, 99].map((p) => pct(sorted, p).toFixed(1).padStart(7)),
      (cpu / sorted.length).toFixed(2).padStart(11),
      String(r.errors).padStart(6),
    ].join(' ');
  } finally {
    await bot.stop();
    model.child.disconnect();
    slack.child.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const arg = (n: string, d: string) => (args.includes(`--${n}`) ? (args[args.indexOf(`--${n}`) + 1] ?? d) : d);
  const total = Number(arg('messages', '2000'));
  const rate = Number(arg('rate', '300'));
  const modes = arg('modes', 'http,socket').split(',') as Array<'http' | 'socket'>;
  console.log(
    `Slack benchmark: node ${process.version}, ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}; ${CHANNELS} DM channels`,
  );
  console.log(['mode   ', 'row    ', '  msgs', '  msg/s', 'p50 ms ', 'p90 ms ', 'p99 ms ', 'main ms/msg', 'errors'].join(' '));
  for (const mode of modes) {
    console.log(await row(mode, 'closed', total));
    console.log(await row(mode, `open`, total, rate));
  }
}

await main();
// Something (not tracked down; the pre-split adapter does it too) holds the event loop after every
// bot stopped and the children were released: a bench that finished must not linger.
process.exit(0);
