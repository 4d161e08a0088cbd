/**
 * The checks `gatehouse doctor` runs (bot/cli/doctor.ts prints them). Each returns `CheckResult`s and
 * never throws; none changes anything (no folder created, no store opened, no chmod).
 *
 * Contract:
 * - `status`: ok, fail (the operator must act: doctor exits 1), or note (worth knowing, not failing:
 *   something the next start fixes itself, a check that does not apply).
 * - `fix` says what to do for every fail. No message holds a secret: tokens are named, never shown;
 *   store URLs are shown without their password.
 * - Network: only DNS look-ups of the API hosts (a timeout each, `lookupTimeoutMs`), a TCP connect to a
 *   PostgreSQL store's port and a GET of /healthz on a busy HTTP port, each with a short timeout: no
 *   check can hang, and on a machine without internet "does not resolve" is the expected answer.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { accessSync, chmodSync, constants, existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createConnection, createServer, isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { execa } from 'execa';
import { boxCommand, execaOptions, probeSandbox, sandboxLimits, type SandboxLimits, type SandboxPolicy } from '../../agent/tools/sandbox/index.js';
import { ownFiles } from '../service/app.js';
import type { Config } from '../config/index.js';
import type { EnvSettings, StoreSettings } from '../config/env.js';
import { descriptorOf } from '../../adapters/descriptors.js';
import { PLATFORMS, type Platform } from '../../adapters/types.js';
import { PID_FILE } from '../service/reload.js';
import { messageOf } from '../../agent/log.js';
import { readPostgresUrl } from '../../agent/store/postgres/url.js';

type CheckStatus = 'ok' | 'fail' | 'note';

export interface CheckResult {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to do (every fail has one). */
  fix?: string;
}

const ok = (name: string, detail: string): CheckResult => ({ name, status: 'ok', detail });
const fail = (name: string, detail: string, fix: string): CheckResult => ({ name, status: 'fail', detail, fix });
const note = (name: string, detail: string, fix?: string): CheckResult => ({ name, status: 'note', detail, ...(fix ? { fix } : {}) });
const octal = (mode: number): string => (mode & 0o7777).toString(8).padStart(4, '0');
const asUser = (): string =>
  typeof process.getuid === 'function' ? ` (checked as user id ${process.getuid()}; run doctor as the user the service runs as)` : '';

// ---------------------------------------------------------------------------------------------
// Sandbox

/** Reads /proc/self/limits (inside the box) into the limits the box promises. */
function parseProcLimits(text: string): Partial<Record<'processes' | 'openFiles' | 'memoryBytes' | 'cpuSeconds', number>> {
  const soft = (label: string): number | undefined => {
    const m = new RegExp(`^${label}\\s+(\\S+)`, 'm').exec(text);
    return m && m[1] !== 'unlimited' ? Number(m[1]) : undefined;
  };
  const out: Partial<Record<'processes' | 'openFiles' | 'memoryBytes' | 'cpuSeconds', number>> = {};
  const entries = [
    ['processes', 'Max processes'],
    ['openFiles', 'Max open files'],
    ['memoryBytes', 'Max data size'],
    ['cpuSeconds', 'Max cpu time'],
  ] as const;
  for (const [key, label] of entries) {
    const v = soft(label);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/** Starts the box each agent that runs commands would get, and reads its limits from inside. */
export async function sandboxChecks(config: Config): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const botFiles = ownFiles(config);
  const boxed = Object.values(config.agents).filter((a) => a.tools.includes('execute_command'));
  for (const agent of Object.values(config.agents)) {
    if (agent.sandbox === 'none')
      results.push(
        note(
          `sandbox (agent ${agent.name})`,
          "sandbox: none: its commands run on this host with the bot's own rights",
          `agents.${agent.name}.sandbox: bubblewrap confines them`,
        ),
      );
  }
  const wanted = boxed.filter((a) => a.sandbox !== 'none');
  if (wanted.length === 0) {
    // Nobody needs the box; still say whether one could start, for the day an agent gets execute_command.
    const probe = await probeIn(undefined, { mode: 'bubblewrap', network: false, botFiles });
    results.push(
      note('sandbox', `no agent runs shell commands (execute_command); a box ${probe.error ? `could not start here: ${probe.error}` : 'starts here'}`),
    );
    return results;
  }
  for (const agent of wanted) {
    const name = `sandbox (agent ${agent.name})`;
    const policy: SandboxPolicy = {
      mode: 'bubblewrap',
      network: agent.sandboxNetwork,
      botFiles,
      limits: agent.sandboxLimits,
      ...(agent.sandboxReadPaths.length > 0 ? { readPaths: agent.sandboxReadPaths } : {}),
    };
    const workspace = existsSync(agent.workspace) ? agent.workspace : undefined;
    const probe = await probeIn(workspace, policy);
    if (probe.error) {
      results.push(
        fail(name, `bubblewrap cannot start a box: ${probe.error}`, `see the cause above; the start fails the same way (agents.${agent.name}.sandbox)`),
      );
      continue;
    }
    const wrong = limitMismatches(sandboxLimits(policy), probe.limits ?? {}, probe.tmpKiB);
    const where = workspace ? '' : ` (tried in a scratch folder: the workspace ${agent.workspace} is created at the first start)`;
    if (wrong.length > 0) {
      results.push(
        fail(
          name,
          `a box starts, but its limits are not what agents.${agent.name}.sandboxLimits asks: ${wrong.join('; ')}${where}`,
          'check that prlimit (util-linux) works in the box and that no wrapper lowers the hard limits',
        ),
      );
    } else {
      results.push(
        ok(
          name,
          `a box starts, network ${policy.network ? 'on' : agent.sandboxEgress ? `only through the egress proxy to ${agent.sandboxEgress.join(', ')}` : 'off'}; limits in force: ${describeFound(sandboxLimits(policy))}${where}`,
        ),
      );
    }
  }
  return results;
}

function describeFound(l: SandboxLimits): string {
  return `${l.processes} processes, ${l.openFiles} open files, ${Math.round(l.memoryBytes / 1048576)} MiB memory and ${l.cpuSeconds} CPU s per process, /tmp ${Math.round(l.tmpBytes / 1048576)} MiB`;
}

function limitMismatches(want: SandboxLimits, got: ReturnType<typeof parseProcLimits>, tmpKiB: number | undefined): string[] {
  const wrong: string[] = [];
  if (got.processes !== want.processes) wrong.push(`processes ${got.processes ?? 'unlimited'} (want ${want.processes})`);
  if (got.openFiles !== want.openFiles) wrong.push(`open files ${got.openFiles ?? 'unlimited'} (want ${want.openFiles})`);
  if (got.memoryBytes !== want.memoryBytes) wrong.push(`memory ${got.memoryBytes ?? 'unlimited'} bytes (want ${want.memoryBytes})`);
  if (got.cpuSeconds !== want.cpuSeconds) wrong.push(`CPU ${got.cpuSeconds ?? 'unlimited'} s (want ${want.cpuSeconds})`);
  if (tmpKiB !== undefined && Math.abs(tmpKiB * 1024 - want.tmpBytes) > 4096) wrong.push(`/tmp ${tmpKiB} KiB (want ${want.tmpBytes / 1024})`);
  return wrong;
}

/** probeSandbox, then the box's own view of its limits. A scratch workspace when `workspace` is unset. */
async function probeIn(
  workspace: string | undefined,
  policy: SandboxPolicy,
): Promise<{ error?: string; limits?: ReturnType<typeof parseProcLimits>; tmpKiB?: number }> {
  let scratch: string | undefined;
  try {
    if (!workspace) {
      scratch = mkdtempSync(join(tmpdir(), 'gatehouse-doctor-'));
      // A root bot's boxes run as 65534, which must enter it.
      chmodSync(scratch, 0o755);
    }
    const ws = workspace ?? scratch!;
    await probeSandbox(policy, ws);
    const box = boxCommand(policy, {
      workspace: ws,
      cwd: ws,
      env: { PATH: '/usr/bin:/bin' },
      argv: ['/bin/sh', '-c', 'cat /proc/self/limits; df -k /tmp | tail -n 1'],
    });
    const r = await execa(box.file, box.args, execaOptions(box, { stdout: 'pipe' }, { timeout: 15_000 }));
    const out = String(r.stdout);
    const tmp = /^\S+\s+(\d+)\s/m.exec(out.split('\n').slice(-1)[0] ?? '');
    return { limits: parseProcLimits(out), ...(tmp ? { tmpKiB: Number(tmp[1]) } : {}) };
  } catch (err) {
    return { error: messageOf(err) };
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Store

/** What Gatehouse keeps in a SQLite store's folder (bot/service/reload.ts, bot/headless/attach.ts, the engine). */
const DATA_FILES = new Set(['gatehouse.pid', 'gatehouse.reload.json', 'gatehouse.sock', 'gatehouse.token', 'mcp']);

export async function storeCheck(store: StoreSettings, timeoutMs: number): Promise<CheckResult> {
  if (store.kind === 'postgres') return postgresCheck(store, timeoutMs);
  const name = 'store';
  if (store.path === ':memory:')
    return note(
      name,
      'sqlite://:memory: keeps nothing across restarts',
      'set GATEHOUSE_STORE=sqlite://./data/gatehouse.sqlite to keep conversations and approvals',
    );
  const folder = dirname(store.path);
  if (!existsSync(folder)) {
    let parent = dirname(folder);
    while (!existsSync(parent) && dirname(parent) !== parent) parent = dirname(parent);
    try {
      accessSync(parent, constants.W_OK | constants.X_OK);
      return ok(name, `${store.url}: not created yet; the first start creates ${folder} (0700) and the store (0600)`);
    } catch {
      return fail(
        name,
        `${store.url}: the folder ${folder} does not exist and ${parent} is not writable${asUser()}`,
        `create ${folder} owned by the service user (install -d -m 0700 -o <user> ${folder}), or point GATEHOUSE_STORE at a writable folder`,
      );
    }
  }
  const st = statSync(folder);
  if (!st.isDirectory()) return fail(name, `${store.url}: ${folder} is a file, not a folder`, 'point GATEHOUSE_STORE at a file inside a folder');
  try {
    accessSync(folder, constants.W_OK | constants.X_OK);
  } catch {
    return fail(
      name,
      `${store.url}: the folder ${folder} is not writable${asUser()}`,
      `chown the folder to the service user, or point GATEHOUSE_STORE at a writable folder`,
    );
  }
  const problems: string[] = [];
  const later: string[] = [];
  const mine = typeof process.getuid !== 'function' || st.uid === process.getuid();
  if ((st.mode & 0o077) !== 0) {
    let onlyOurs = false;
    try {
      const own = basename(store.path);
      onlyOurs = readdirSync(folder).every((n) => n.startsWith(own) || DATA_FILES.has(n));
    } catch {
      // unreadable: treated as shared
    }
    // The start narrows a folder of its own (agent/store/sqlite/files.ts); a shared one is left open.
    if (mine && (st.mode & 0o1000) === 0 && onlyOurs) later.push(`the folder ${folder} is ${octal(st.mode)} (made 0700 at the next start)`);
    else problems.push(`the folder ${folder} is ${octal(st.mode)} and holds other things, so the start leaves it open to other users`);
  }
  for (const suffix of ['', '-wal', '-shm', '-journal']) {
    const file = store.path + suffix;
    let fst;
    try {
      fst = lstatSync(file);
    } catch {
      continue;
    }
    if (!fst.isFile()) {
      problems.push(`${file} is not a regular file`);
      continue;
    }
    try {
      accessSync(file, constants.R_OK | constants.W_OK);
    } catch {
      problems.push(`${file} is not readable and writable${asUser()}`);
      continue;
    }
    if ((fst.mode & 0o077) !== 0) later.push(`${basename(file)} is ${octal(fst.mode)} (made 0600 at the next start)`);
  }
  if (problems.length > 0) {
    return fail(
      name,
      `${store.url}: ${problems.join('; ')}`,
      `give the store a folder of its own, owned by the service user, 0700 (chmod 700 ${folder}; chmod 600 ${store.path}*)`,
    );
  }
  const exists = existsSync(store.path);
  const base = `${store.url}: ${exists ? 'folder 0700, files 0600' : `not created yet; ${folder} is writable`}`;
  return later.length > 0 ? note(name, `${store.url}: ${later.join('; ')}`) : ok(name, base);
}

async function postgresCheck(store: Extract<StoreSettings, { kind: 'postgres' }>, timeoutMs: number): Promise<CheckResult> {
  const t = readPostgresUrl(store.url);
  if ('problem' in t) return fail('store', `GATEHOUSE_STORE ${t.problem}`, 'fix GATEHOUSE_STORE');
  const at = t.socket ? `socket ${t.socket}` : `${t.host}:${t.port}`;
  const r = await connects(t.socket ? { path: t.socket } : { host: t.host, port: t.port }, timeoutMs);
  return r === 'ok'
    ? ok('store', `${store.description}: ${at} accepts connections (schema and login are checked at start)`)
    : fail(
        'store',
        `${store.description}: ${at} ${r}`,
        t.socket
          ? 'start PostgreSQL or fix host= (the socket folder) and the port in GATEHOUSE_STORE'
          : 'start PostgreSQL or fix the host and port in GATEHOUSE_STORE',
      );
}

/** Opens and closes a TCP or Unix-socket connection: "ok", or why not. */
function connects(to: { host: string; port: number } | { path: string }, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = createConnection(to);
    const done = (what: string) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(what);
    };
    const timer = setTimeout(() => done(`did not answer within ${timeoutMs / 1000} s`), timeoutMs);
    socket.once('connect', () => done('ok'));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      done(
        err.code === 'ENOENT'
          ? 'has no socket file (is the server running, with this folder in unix_socket_directories?)'
          : `refused the connection (${err.code ?? err.message})`,
      ),
    );
  });
}

// ---------------------------------------------------------------------------------------------
// Platform tokens and their API hosts

export type Lookup = (host: string) => Promise<unknown>;

const DNS_ERRORS: Record<string, string> = {
  ENOTFOUND: 'ENOTFOUND: no address for this name; without internet or DNS access this is expected',
  EAI_AGAIN: 'EAI_AGAIN: the DNS server did not answer; without internet or DNS access this is expected',
  ENODATA: 'ENODATA: the name has no address records',
};

/** Resolves `host` or says why not, within `timeoutMs` (getaddrinfo itself has no timeout). */
export async function resolves(host: string, timeoutMs: number, lookup: Lookup = (h) => dnsLookup(h)): Promise<string | undefined> {
  if (isIP(host.replace(/^\[|\]$/g, '')) !== 0) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((r) => {
    timer = setTimeout(() => r(`did not resolve within ${timeoutMs / 1000} s (DNS timed out)`), timeoutMs);
  });
  try {
    return await Promise.race([
      lookup(host).then(
        () => undefined,
        (err: NodeJS.ErrnoException) => `does not resolve (${DNS_ERRORS[err.code ?? ''] ?? err.code ?? err.message})`,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const hostOf = (url: string): string => new URL(url).hostname;

/** Which platforms have tokens set, and whether each one's API host resolves. */
export async function platformChecks(env: EnvSettings, timeoutMs: number, lookup?: Lookup): Promise<CheckResult[]> {
  const targets: Array<{ name: string; vars: string; host: string }> = [];
  const anthropicHost = env.anthropic.baseURL ? hostOf(env.anthropic.baseURL) : 'api.anthropic.com';
  targets.push({
    name: 'model API',
    vars: env.anthropic.apiKey ? 'ANTHROPIC_API_KEY set' : env.anthropic.baseURL ? 'ANTHROPIC_BASE_URL set' : 'ANTHROPIC_API_KEY not set',
    host: anthropicHost,
  });
  // Every enabled platform whose descriptor says how to reach it, in the descriptors' order.
  const chat = PLATFORMS.filter((p) => descriptorOf(p).reachability !== undefined);
  let enabled = 0;
  for (const p of chat) {
    const settings = (env.platforms as Partial<Record<Platform, unknown>>)[p];
    if (settings !== undefined) enabled++;
    const reach = settings === undefined ? undefined : descriptorOf(p).reachability?.(settings);
    if (reach) targets.push({ name: p, vars: reach.vars, host: hostOf(reach.apiUrl) });
  }
  const results = await Promise.all(
    targets.map(async (x): Promise<CheckResult> => {
      const why = await resolves(x.host, timeoutMs, lookup);
      if (why === undefined) return ok(x.name, `${x.vars}; ${x.host} resolves`);
      return fail(
        x.name,
        `${x.vars}; ${x.host} ${why}`,
        `this machine cannot reach ${x.host}: check its DNS (/etc/resolv.conf) and outbound network, or a proxy URL (the *_API_* / *_BASE_URL variables)`,
      );
    }),
  );
  if (enabled === 0) {
    // Each platform's first variable is its token (TELEGRAM_BOT_TOKEN, SLACK_BOT_TOKEN, DISCORD_TOKEN).
    const tokens = chat.map((p) => descriptorOf(p).env[0]).join(', ');
    results.push(note('platforms', `no platform token set (${tokens}): \`gatehouse start\` opens the terminal chat, \`serve\` answers /healthz only`));
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// HTTP port

/** Free, held by a running Gatehouse (its /healthz answers), or held by something else. */
export async function httpCheck(http: { host: string; port: number }, dataDir: string | undefined, timeoutMs: number): Promise<CheckResult> {
  const name = 'http';
  const where = `${http.host}:${http.port}`;
  if (http.port === 0) return ok(name, `GATEHOUSE_HTTP_PORT=0: a free port is chosen at each start`);
  const bind = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err));
    server.listen(http.port, http.host, () => server.close(() => resolve(undefined)));
  });
  if (!bind) return ok(name, `${where} is free`);
  if (bind.code !== 'EADDRINUSE') {
    const fix =
      bind.code === 'EACCES'
        ? 'ports below 1024 need root: use 8080 behind a proxy'
        : bind.code === 'EADDRNOTAVAIL'
          ? 'GATEHOUSE_HTTP_HOST is not an address of this machine: use 127.0.0.1 or 0.0.0.0'
          : 'set GATEHOUSE_HTTP_HOST / GATEHOUSE_HTTP_PORT';
    return fail(name, `cannot listen on ${where} (${bind.code ?? bind.message})`, fix);
  }
  const target = http.host === '0.0.0.0' || http.host === '::' ? '127.0.0.1' : http.host;
  const health = await fetchHealth(`http://${target.includes(':') ? `[${target}]` : target}:${http.port}/healthz`, timeoutMs);
  if (health && typeof health.configLoadedAt === 'string' && Array.isArray(health.platforms)) {
    let pid = '';
    try {
      if (dataDir) pid = ` (pid ${readFileSync(join(dataDir, PID_FILE), 'utf8').trim()})`;
    } catch {
      // no pid file: another folder's Gatehouse
    }
    return ok(
      name,
      `${where} is in use by a running Gatehouse${pid}: ${String(health.mode)} mode, ${(health.platforms as unknown[]).join(', ') || 'no platform'}`,
    );
  }
  return fail(
    name,
    `${where} is in use by another program (not Gatehouse: its /healthz did not answer like one)`,
    `stop that program or set GATEHOUSE_HTTP_PORT to a free port`,
  );
}

async function fetchHealth(url: string, timeoutMs: number): Promise<Record<string, unknown> | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return undefined;
    const body = (await res.json()) as unknown;
    return body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
