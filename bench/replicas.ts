/**
 * Benchmark (not a test): Telegram through the fake Bot API, 100 chats, on real `gatehouse serve`
 * processes (dist/bot/main.js): one process on SQLite, then one, two and three replicas on one
 * PostgreSQL database. Webhook mode: the fake POSTs each update to a round-robin front in this process,
 * which forwards it to a replica (as a load balancer would). Per configuration, on a fresh store and
 * fresh processes, after a warm-up (not printed):
 *   closed   one message in flight per chat: the most the configuration does (the ceiling)
 *   open     messages at a fixed rate (default 300/s) whatever the bot does: the latency users see
 * Latency = update POSTed by the fake -> the bot's sendMessage answered by the fake (one clock, in
 * the fake's process). Then, long polling on PostgreSQL replicas: the time from SIGKILL of the
 * leader (the replica holding getUpdates) to the first update answered after it (a new message every
 * 100 ms from the kill on), a few times.
 * The fake model (bench/fake-model-process.ts) and the fake Bot API (bench/replicas-fake-process.ts)
 * run in their own processes. On a machine with other work running the numbers are noisy: the
 * load average is printed with them.
 *
 * Run: npm run build && node dist/bench/replicas.js [--messages 2000] [--warmup 1000] [--rate 300] [--takeovers 3]
 *      [--configs sqlite:1,postgres:1,postgres:2,postgres:3] [--postgres ADMIN_URL]
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDatabase } from '../agent/store/postgres/admin.js';
import { startBenchPostgres } from './postgres-server.js';
import type { LoadRequest, LoadResult, TakeoverRequest } from './replicas-fake-process.js';

const here = dirname(fileURLToPath(import.meta.url));
const mainJs = join(here, '..', 'bot', 'main.js');
const SECRET = 'bench-replicas-webhook-secret-0123456789';
const CHATS = Array.from({ length: 100 }, (_, i) => 300_000 + i);
const WARM_CHATS = Array.from({ length: 100 }, (_, i) => 400_000 + i);
const TAKEOVER_CHAT = 500_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

function forkReady<T>(script: string): Promise<{ child: ChildProcess; ready: T }> {
  const child = fork(join(here, script), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({ child, ready: m as T }));
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it was ready`)));
  });
}

let nextId = 1;
function ask<T>(child: ChildProcess, req: Omit<LoadRequest, 'id'> | Omit<TakeoverRequest, 'id'>): Promise<T> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const on = (m: unknown) => {
      const r = m as { type: string; id: number; message?: string };
      if (r.id !== id) return;
      child.off('message', on);
      if (r.type === 'error') reject(new Error(r.message));
      else resolve(m as T);
    };
    child.on('message', on);
    child.send({ ...req, id });
  });
}

interface Replica {
  child: ChildProcess;
  port: number;
  output: () => string;
}

/** A round-robin front: POSTs go to the next replica in `pool()`; a refused connection tries the next. */
async function startFront(pool: () => Replica[]): Promise<{ url: string; close(): Promise<void> }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  let turn = 0;
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      const targets = pool();
      const attempt = (k: number) => {
        const r = targets[(turn + k) % Math.max(1, targets.length)];
        if (!r || k >= targets.length) {
          res.writeHead(503).end();
          return;
        }
        const headers = { ...req.headers } as Record<string, string>;
        delete headers['host'];
        delete headers['connection'];
        const out = request({ host: '127.0.0.1', port: r.port, method: req.method, path: req.url, headers, agent }, (up: IncomingMessage) => {
          res.writeHead(up.statusCode ?? 502, { 'content-type': String(up.headers['content-type'] ?? 'text/plain') });
          up.pipe(res);
        });
        out.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNREFUSED' ? attempt(k + 1) : res.headersSent || res.writeHead(502).end()));
        out.end(body);
      };
      turn++;
      attempt(0);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        agent.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** A `gatehouse serve` on a port chosen here (its log is at warn: info lines would cost the bench). */
async function startReplica(dir: string, slot: number, env: Record<string, string>): Promise<Replica> {
  const cwd = join(dir, `replica-${slot}`);
  mkdirSync(cwd, { recursive: true });
  const port = await freePort();
  const child = spawn(process.execPath, [mainJs, 'serve'], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: cwd, ...env, GATEHOUSE_HTTP_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  const end = Date.now() + 120_000;
  // Ready: /readyz 200 (the store answers, the platform connection or standby role is known).
  while (
    (await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status,
      () => 0,
    )) !== 200
  ) {
    if (child.exitCode !== null || Date.now() > end) throw new Error(`replica ${slot} did not get ready:\n${out.slice(-3000)}`);
    await sleep(50);
  }
  return { child, port, output: () => out };
}

function stopAll(replicas: Replica[]): Promise<unknown> {
  return Promise.all(
    replicas.map(
      (r) =>
        new Promise<void>((resolve) => {
          if (r.child.exitCode !== null || r.child.signalCode !== null) return resolve();
          const t = setTimeout(() => r.child.kill('SIGKILL'), 30_000);
          r.child.once('exit', () => (clearTimeout(t), resolve()));
          r.child.kill('SIGTERM');
        }),
    ),
  );
}

interface Rig {
  dir: string;
  replicas: Replica[];
  tg: ChildProcess;
  env: (slot: number) => Record<string, string>;
  close(): Promise<void>;
}

/** Fresh fakes, store and `count` replicas (webhook mode through the front, or long polling). */
async function startRig(opts: { storeUrl: string | undefined; count: number; webhook: boolean; modelUrl: string }): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), 'gh-bench-replicas-'));
  chmodSync(dir, 0o755);
  const ids = [...CHATS, ...WARM_CHATS, TAKEOVER_CHAT].map((id) => `"${id}"`).join(', ');
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    [
      'agents:',
      '  default:',
      '    model: claude-sonnet-5-5',
      `    workspace: "${join(dir, 'ws')}"`,
      '    maxConversations: 100000',
      'access:',
      `  telegram: { users: [${ids}] }`,
      '  rateLimit: { messages: 10000, perSeconds: 1 }',
      '',
    ].join('\n'),
  );
  const tg = await forkReady<{ apiRoot: string; token: string }>('replicas-fake-process.js');
  const replicas: Replica[] = [];
  const front = await startFront(() => replicas.filter((r) => r.child.exitCode === null && r.child.signalCode === null));
  const env = (slot: number): Record<string, string> => ({
    ANTHROPIC_API_KEY: 'bench',
    ANTHROPIC_BASE_URL: opts.modelUrl,
    GATEHOUSE_CONFIG: join(dir, 'gatehouse.yaml'),
    GATEHOUSE_STORE: opts.storeUrl ?? `sqlite://${join(dir, 'store.sqlite')}`,
    GATEHOUSE_LOG_LEVEL: 'warn',
    GATEHOUSE_REPLICA_ID: `bench-${slot}`,
    TELEGRAM_BOT_TOKEN: tg.ready.token,
    TELEGRAM_API_ROOT: tg.ready.apiRoot,
    ...(opts.webhook ? { TELEGRAM_WEBHOOK_URL: `${front.url}/telegram`, TELEGRAM_WEBHOOK_SECRET: SECRET } : {}),
  });
  const close = async () => {
    await stopAll(replicas);
    await front.close();
    tg.child.disconnect();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let slot = 0; slot < opts.count; slot++) replicas.push(await startReplica(dir, slot, env(slot)));
  } catch (err) {
    await close();
    throw err;
  }
  return { dir, replicas, tg: tg.child, env, close };
}

async function role(r: Replica): Promise<string | undefined> {
  try {
    const body = (await (await fetch(`http://127.0.0.1:${r.port}/readyz`)).json()) as { role?: string };
    return body.role;
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const arg = (name: string, dflt: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : dflt;
  };
  const messages = Number(arg('messages', '2000'));
  const rate = Number(arg('rate', '300'));
  const takeovers = Number(arg('takeovers', '3'));
  const warmup = Number(arg('warmup', '1000'));
  const configs = arg('configs', 'sqlite:1,postgres:1,postgres:2,postgres:3')
    .split(',')
    .map((c) => ({ engine: c.split(':')[0]!, count: Number(c.split(':')[1] ?? 1) }));
  let adminUrl: string | undefined = args.includes('--postgres') ? arg('postgres', '') : undefined;
  let stopServer = async (): Promise<void> => undefined;
  if (!adminUrl && configs.some((c) => c.engine === 'postgres')) {
    const server = await startBenchPostgres();
    adminUrl = server.url;
    stopServer = () => server.stop();
  }
  let databases = 0;
  const storeUrl = async (engine: string) => (engine === 'postgres' ? createDatabase(adminUrl!, `bench_replicas_${process.pid}_${databases++}`) : undefined);
  const model = await forkReady<string>('fake-model-process.js');

  console.log(
    `Replica benchmark: node ${process.version}, ${cpus().length} cores, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log(
    `Telegram webhook through a round-robin front, ${CHATS.length} chats, ${messages} messages per row after ${warmup} to warm up, open loop at ${rate}/s; latency = update POSTed -> answer received (ms)`,
  );
  const widths = [18, 10, 8, 8, 8, 8, 10, 8];
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' ');
  console.log(line(['configuration', 'row', 'msg/s', 'p50', 'p99', 'max', 'unanswered', 'redeliv']));
  for (const c of configs) {
    const rig = await startRig({ storeUrl: await storeUrl(c.engine), count: c.count, webhook: true, modelUrl: model.ready });
    const label = c.engine === 'sqlite' ? 'SQLite, 1 process' : `PostgreSQL, ${c.count} repl.`;
    try {
      if (warmup > 0) await ask<LoadResult>(rig.tg, { type: 'run', chatIds: WARM_CHATS, total: warmup, timeoutMs: 180_000 });
      for (const row of [
        { name: 'closed', ratePerSec: undefined },
        { name: `open @${rate}/s`, ratePerSec: rate },
      ]) {
        const r = await ask<LoadResult>(rig.tg, {
          type: 'run',
          chatIds: CHATS,
          total: messages,
          ...(row.ratePerSec !== undefined ? { ratePerSec: row.ratePerSec } : {}),
          timeoutMs: 180_000,
        });
        const lat = [...r.latencies].sort((a, b) => a - b);
        console.log(
          line([
            label,
            row.name,
            (r.latencies.length / (r.elapsedMs / 1000)).toFixed(0),
            pct(lat, 50).toFixed(1),
            pct(lat, 99).toFixed(1),
            (lat.at(-1) ?? NaN).toFixed(1),
            String(r.unanswered),
            String(r.redelivered),
          ]),
        );
      }
    } finally {
      await rig.close();
    }
  }

  if (takeovers > 0 && adminUrl) {
    // Long polling: one replica (the elected leader) holds getUpdates; SIGKILL it.
    const rig = await startRig({ storeUrl: await storeUrl('postgres'), count: 3, webhook: false, modelUrl: model.ready });
    const times: number[] = [];
    try {
      for (let k = 0; k < takeovers; k++) {
        let leader: number | undefined;
        for (let i = 0; i < 300 && leader === undefined; i++) {
          const roles = await Promise.all(rig.replicas.map(role));
          const at = roles.indexOf('leader');
          if (at >= 0) leader = at;
          else await sleep(100);
        }
        if (leader === undefined) throw new Error('no replica reports role "leader" on /readyz');
        const since = Date.now();
        rig.replicas[leader]!.child.kill('SIGKILL');
        const r = await ask<{ ms: number }>(rig.tg, { type: 'takeover', chatId: TAKEOVER_CHAT, since, everyMs: 100, timeoutMs: 60_000 });
        times.push(r.ms);
        console.log(
          `takeover ${k + 1}: SIGKILL of the leader (replica ${leader}) -> first update answered: ${Number.isNaN(r.ms) ? 'none within 60 s' : `${r.ms} ms`}`,
        );
        // Back to three: the killed slot starts again (as a standby).
        rig.replicas[leader] = await startReplica(rig.dir, leader, rig.env(leader));
      }
      const sorted = times.filter((t) => !Number.isNaN(t)).sort((a, b) => a - b);
      console.log(`leader takeover (long polling, 3 replicas): median ${pct(sorted, 50)} ms, max ${sorted.at(-1)} ms of ${times.length}`);
    } finally {
      await rig.close();
    }
  }
  model.child.disconnect();
  await stopServer();
  console.log(
    `load average at the end ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} (other jobs on the machine make these numbers noisy)`,
  );
}

await main();
