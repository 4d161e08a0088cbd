/**
 * Several real `gatehouse serve` processes (bot/main.ts from source, through register-ts.mjs) on one
 * store, behind a round-robin HTTP front on 127.0.0.1: the shape of a deployment with replicas behind
 * a load balancer, for the replica end-to-end tests.
 *
 * Contract:
 * - `startReplicas(opts)` starts `opts.count` replicas at once, each in its own folder (its pid file,
 *   attach socket and log) under `opts.dir`, sharing the config file, the workspace it names and the
 *   store URL; it resolves when every one is ready (its "Gatehouse started" line, then /readyz 200
 *   where the build has it; 404 there counts as ready, for builds before it).
 * - The front (`front.url`) is what the fake Telegram's webhook points at: every replica is started
 *   with TELEGRAM_WEBHOOK_URL = `${front.url}/telegram` and one shared secret. It spreads requests
 *   round-robin over the replicas in its pool (ready and not exited), as a load balancer does:
 *   a refused connection goes to the next replica (nginx's proxy_next_upstream "error"); a replica
 *   that dies with the request in flight gives 502 and Telegram (the fake, with webhookRetry)
 *   delivers it again. No replica in the pool: 503.
 * - `front.steer(fn)` lets a test pick or avoid replicas for one update (a click routed away from the
 *   replica running the turn); `front.deliveries` records which replica got each update.
 * - `kill(i, signal)` signals the replica in slot i and resolves when it has exited (it leaves the
 *   pool when it exits); `restart(i)` starts a new process in that slot. `stop()` sends SIGTERM to
 *   every live replica, SIGKILL after `stopGraceMs`, and closes the front.
 * - Each replica's output is kept (`output()`), and written to `<its folder>/output.log`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const main = join(root, 'bot', 'main.ts');

export const WEBHOOK_SECRET = 'replicas-webhook-secret-0123456789';

export interface ReplicaProcess {
  slot: number;
  /** Counts starts of this slot (1 = the first process). */
  generation: number;
  child: ChildProcess;
  pid: number;
  /** The replica's own HTTP port (the front forwards to it). */
  port: number | undefined;
  ready: boolean;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exitedYet: boolean;
  output(): string;
}

export interface Delivery {
  updateId: number | undefined;
  slot: number | undefined;
  status: number;
}

export type Steer = (update: Record<string, unknown>) => { to?: number; avoid?: number[] } | undefined;

export interface Front {
  url: string;
  deliveries: Delivery[];
  steer(fn: Steer | undefined): void;
}

export interface ReplicaOptions {
  dir: string;
  count: number;
  storeUrl: string;
  configFile: string;
  telegram: { token: string; apiRoot: string };
  /** The model's base URL for the replica in `slot` (a fake per replica tells who called). */
  modelUrl(slot: number): string;
  env?: Record<string, string>;
  stopGraceMs?: number;
  readyTimeoutMs?: number;
}

export interface Replicas {
  front: Front;
  slots: ReplicaProcess[];
  /** Slots whose process is ready and has not exited. */
  live(): number[];
  kill(slot: number, signal?: NodeJS.Signals): Promise<void>;
  restart(slot: number): Promise<ReplicaProcess>;
  stop(): Promise<void>;
  /** Every replica's output so far (for a failure message). */
  outputs(): string;
  /** Lines of every process's output (every slot, every generation) that contain `needle`. */
  linesWith(needle: string): string[];
  /** `gatehouse <args>` from a replica's folder with its environment (`run` attaches to that replica). */
  cli(slot: number, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

export async function startReplicas(opts: ReplicaOptions): Promise<Replicas> {
  const slots: ReplicaProcess[] = [];
  const allProcesses: ReplicaProcess[] = [];
  const generations = new Map<number, number>();
  let steer: Steer | undefined;
  let turn = 0;
  const deliveries: Delivery[] = [];
  const inPool = (p: ReplicaProcess | undefined): p is ReplicaProcess => p !== undefined && p.ready && !p.exitedYet && p.port !== undefined;

  /** One attempt at one replica: its status, or 'refused' (nothing reached it: try the next). */
  const forward = (
    p: ReplicaProcess,
    req: IncomingMessage,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string>; body: Buffer } | 'refused'> =>
    new Promise((resolve) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'connection') headers[k] = v;
      const r = request({ host: '127.0.0.1', port: p.port, method: req.method, path: req.url, headers, agent: false }, (res) => {
        readBody(res).then(
          (b) => resolve({ status: res.statusCode ?? 502, headers: { 'content-type': String(res.headers['content-type'] ?? 'text/plain') }, body: b }),
          () => resolve({ status: 502, headers: {}, body: Buffer.from('bad gateway') }),
        );
      });
      let connected = false;
      r.on('socket', (s) => s.once('connect', () => (connected = true)));
      r.on('error', () => resolve(connected ? { status: 502, headers: {}, body: Buffer.from('bad gateway') } : 'refused'));
      r.end(body);
    });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    let update: Record<string, unknown> = {};
    try {
      update = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    } catch {
      // forwarded as it is; the replica answers it
    }
    const updateId = typeof update['update_id'] === 'number' ? update['update_id'] : undefined;
    const rule = steer?.(update);
    const tried = new Set<number>();
    for (;;) {
      const pool = slots
        .filter(inPool)
        .map((p) => p.slot)
        .filter((s) => !tried.has(s) && !(rule?.avoid ?? []).includes(s));
      if (pool.length === 0) {
        deliveries.push({ updateId, slot: undefined, status: 503 });
        res.writeHead(503).end('no replica available');
        return;
      }
      const slot = rule?.to !== undefined && pool.includes(rule.to) ? rule.to : pool[turn++ % pool.length]!;
      tried.add(slot);
      const r = await forward(slots[slot]!, req, body);
      if (r === 'refused') continue;
      deliveries.push({ updateId, slot, status: r.status });
      res.writeHead(r.status, r.headers).end(r.body);
      return;
    }
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(502).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const frontUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const envFor = (slot: number, cwd: string): Record<string, string> => ({
    PATH: process.env.PATH ?? '',
    HOME: cwd,
    ANTHROPIC_API_KEY: 'sk-test',
    ANTHROPIC_BASE_URL: opts.modelUrl(slot),
    GATEHOUSE_STORE: opts.storeUrl,
    GATEHOUSE_CONFIG: opts.configFile,
    GATEHOUSE_HTTP_PORT: '0',
    TELEGRAM_BOT_TOKEN: opts.telegram.token,
    TELEGRAM_API_ROOT: opts.telegram.apiRoot,
    TELEGRAM_WEBHOOK_URL: `${frontUrl}/telegram`,
    TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
    ...opts.env,
  });

  const start = async (slot: number): Promise<ReplicaProcess> => {
    const generation = (generations.get(slot) ?? 0) + 1;
    generations.set(slot, generation);
    const cwd = join(opts.dir, `replica-${slot}`);
    mkdirSync(cwd, { recursive: true });
    chmodSync(cwd, 0o755);
    const child = spawn(process.execPath, ['--import', register, main, 'serve'], {
      cwd,
      env: envFor(slot, cwd),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const logFile = join(cwd, `output-${generation}.log`);
    const onData = (d: Buffer) => {
      out += d.toString();
      writeFileSync(logFile, d, { flag: 'a' });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    const p: ReplicaProcess = {
      slot,
      generation,
      child,
      pid: child.pid ?? -1,
      port: undefined,
      ready: false,
      exitedYet: false,
      exited: new Promise((resolve) =>
        child.once('exit', (code, signal) => {
          p.exitedYet = true;
          // Let the pipes drain.
          setTimeout(() => resolve({ code, signal }), 50);
        }),
      ),
      output: () => out,
    };
    slots[slot] = p;
    allProcesses.push(p);
    const readyMs = opts.readyTimeoutMs ?? 120_000;
    const deadline = Date.now() + readyMs;
    const fail = (why: string) => new Error(`replica ${slot} (pid ${p.pid}) ${why}:\n${out.slice(-3000)}`);
    await waitFor(
      'the replica to start',
      () => {
        if (p.exitedYet) throw fail('exited before it was ready');
        return /Gatehouse started/.test(out);
      },
      { timeoutMs: readyMs, intervalMs: 25, detail: () => `replica ${slot} (pid ${p.pid}):\n${out.slice(-3000)}` },
    );
    const port = /HTTP server on http:\/\/[^:\s]+:(\d+)/.exec(out)?.[1];
    if (!port) throw fail('did not log its HTTP port');
    p.port = Number(port);
    // /readyz where the build has it (store reachable, role known, not draining).
    let status = 0;
    await waitFor(
      '/readyz to say ready',
      async () => {
        status = await fetch(`http://127.0.0.1:${p.port}/readyz`).then(
          (r) => r.status,
          () => 0,
        );
        if (status !== 200 && status !== 404 && p.exitedYet) throw fail('exited before /readyz said ready');
        return status === 200 || status === 404;
      },
      {
        timeoutMs: Math.max(1, deadline - Date.now()),
        intervalMs: 100,
        detail: () => `last status ${status}; replica ${slot} (pid ${p.pid}):\n${out.slice(-3000)}`,
      },
    );
    p.ready = true;
    return p;
  };

  const replicas: Replicas = {
    front: {
      url: frontUrl,
      deliveries,
      steer: (fn) => void (steer = fn),
    },
    slots,
    live: () => slots.filter(inPool).map((p) => p.slot),
    async kill(slot, signal = 'SIGKILL') {
      const p = slots[slot];
      if (!p || p.exitedYet) return;
      p.child.kill(signal);
      await p.exited;
    },
    restart: (slot) => start(slot),
    cli: (slot, args) =>
      new Promise((resolve) => {
        const cwd = join(opts.dir, `replica-${slot}`);
        const child = spawn(process.execPath, ['--import', register, main, ...args], { cwd, env: envFor(slot, cwd), stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
        child.once('close', (code) => resolve({ code, stdout, stderr }));
      }),
    async stop() {
      await Promise.all(
        slots.map(async (p) => {
          if (!p || p.exitedYet) return;
          p.child.kill('SIGTERM');
          const t = setTimeout(() => p.child.kill('SIGKILL'), opts.stopGraceMs ?? 30_000);
          await p.exited;
          clearTimeout(t);
        }),
      );
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    linesWith: (needle) =>
      allProcesses.flatMap((p) =>
        p
          .output()
          .split('\n')
          .filter((l) => l.includes(needle))
          .map((l) => `[replica ${p.slot}.${p.generation}] ${l.slice(0, 600)}`),
      ),
    outputs: () => slots.map((p) => `--- replica ${p.slot} (generation ${p.generation}, pid ${p.pid}):\n${p.output().slice(-4000)}`).join('\n'),
  };
  try {
    await Promise.all(Array.from({ length: opts.count }, (_, i) => start(i)));
  } catch (err) {
    await replicas.stop();
    throw err;
  }
  return replicas;
}
