/**
 * Benchmark (not a test): Discord messages per second and the latency from a MESSAGE_CREATE
 * dispatched by the fake gateway to the bot's answer reaching the fake REST API, with the fake model
 * answering at once.
 *
 * What runs: the real start path (bot/cli/index.ts startBot) with the real discord.js adapter; this
 * process is only the bot. The fake model (bench/fake-model-process.ts) and the fake Discord with its
 * load generator (bench/discord-fake-process.ts) run in child processes; both timestamps are taken
 * in the fake Discord's process. Rows: closed (one message in flight per channel) and open (a fixed
 * rate, default 300/s, round-robin) over 100 DM channels, each row on a fresh bot, store and fakes
 * after a warm-up. "main ms/msg" is CPU of the bot's main thread per message (from /proc); "other
 * CPU" the machine's busy time during the row less the bench's three processes, as a share of one
 * core: load from other jobs (high values make the row's numbers unreliable).
 *
 * Run: npm run build && node dist/bench/discord.js [--messages 2000] [--rate 300] [--rps 10000]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBot } from '../bot/cli/index.js';
import { forkReady, machineBusyMs, mainThreadCpuMs, pct, processCpuMs, runLoad } from './harness.js';
import { BENCH_DISCORD_TOKEN, benchUser } from './discord-fake-process.js';

const CHANNELS = 100;

async function row(label: string, rps: number, total: number, ratePerSec?: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-discord-'));
  const users = Array.from({ length: CHANNELS }, (_, i) => `"${benchUser(i)}"`).join(', ');
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    workspace: "${join(dir, 'ws')}"\naccess:\n  discord: { users: [${users}] }\n  rateLimit: { messages: 10000, perSeconds: 1 }\n`,
  );
  const model = await forkReady('fake-model-process.js');
  const discord = await forkReady('discord-fake-process.js');
  const apiUrl = (discord.ready as { apiUrl: string }).apiUrl;
  const bot = await startBot(
    {
      env: {
        ANTHROPIC_API_KEY: 'bench',
        ANTHROPIC_BASE_URL: String(model.ready),
        GATEHOUSE_CONFIG: join(dir, 'gatehouse.yaml'),
        GATEHOUSE_STORE: `sqlite://${join(dir, 'store.sqlite')}`,
        GATEHOUSE_HTTP_PORT: '0',
        DISCORD_TOKEN: BENCH_DISCORD_TOKEN,
        DISCORD_API_URL: apiUrl,
        // Discord allows 50 REST requests/s per bot unless raised; the fake has no such limit
        DISCORD_REQUESTS_PER_SECOND: String(rps),
      },
      cwd: dir,
      stdout: new PassThrough(),
      stderr: new PassThrough(),
    },
    () => undefined,
  );
  try {
    await runLoad(discord.child, { channels: CHANNELS, total: 600 }); // warm-up, not printed
    const cpu0 = mainThreadCpuMs();
    const ours = () => processCpuMs(process.pid) + processCpuMs(model.child.pid) + processCpuMs(discord.child.pid);
    const ours0 = ours();
    const busy0 = machineBusyMs();
    const r = await runLoad(discord.child, { channels: CHANNELS, total, ...(ratePerSec ? { ratePerSec } : {}) });
    const cpu = mainThreadCpuMs() - cpu0;
    // the machine's busy time less the bench's three processes: other jobs (a share of one core)
    const other = (machineBusyMs() - busy0 - (ours() - ours0)) / r.elapsedMs;
    const sorted = [...r.latenciesMs].sort((a, b) => a - b);
    const perSec = (sorted.length / r.elapsedMs) * 1000;
    return [
      label.padEnd(7),
      String(sorted.length).padStart(6),
      perSec.toFixed(0).padStart(7),
      ...[50, 90, 99].map((p) => pct(sorted, p).toFixed(1).padStart(7)),
      (cpu / sorted.length).toFixed(2).padStart(11),
      `${(other * 100).toFixed(0)}%`.padStart(9),
      String(r.errors).padStart(6),
    ].join(' ');
  } finally {
    await bot.stop();
    model.child.disconnect();
    discord.child.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const arg = (n: string, d: string) => (args.includes(`--${n}`) ? (args[args.indexOf(`--${n}`) + 1] ?? d) : d);
  const total = Number(arg('messages', '2000'));
  const rate = Number(arg('rate', '300'));
  console.log(
    `Discord benchmark: node ${process.version}, ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}; ${CHANNELS} DM channels`,
  );
  console.log(['row    ', '  msgs', '  msg/s', 'p50 ms ', 'p90 ms ', 'p99 ms ', 'main ms/msg', 'other CPU', 'errors'].join(' '));
  const rps = Number(arg('rps', '10000'));
  console.log(`REST cap ${rps} requests/s (DISCORD_REQUESTS_PER_SECOND; Discord's own default is 50)`);
  console.log(await row('closed', rps, total));
  console.log(await row('open', rps, total, rate));
}

await main();
// Like bench/slack.ts: the harness (child IPC, the load generator's sockets) can keep the loop alive
// after the last row; the numbers are printed, so leave.
process.exit(0);
