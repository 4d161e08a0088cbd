/**
 * Environment settings: secrets and endpoints. Each chat platform's variables (names, prefix,
 * secrets, parser) live in its adapter's descriptor (adapters/<platform>/descriptor.ts, listed in
 * adapters/descriptors.ts); nothing here names a platform.
 *
 * Contract:
 * - `loadDotEnv(env, cwd)` reads `<cwd>/.env` when it exists (Node's own parser, `util.parseEnv`) and
 *   adds each key that `env` does not already have; a variable set in the real environment always
 *   wins. Pass `process.env` in production so child processes (through the env sanitizer) see them.
 * - `readEnv(env, cwd)` never throws: it returns the settings plus every problem found, each naming
 *   the variable. Messages never echo a secret (tokens, keys, URL credentials).
 * - An empty value (`KEY=` in a .env file) counts as unset.
 * - A platform credential is never silently ignored: one that is set but incomplete (a Telegram
 *   setting without TELEGRAM_BOT_TOKEN, DISCORD_API_URL without DISCORD_TOKEN), malformed, or an
 *   unknown TELEGRAM_* / SLACK_* / DISCORD_* name is a problem naming the variable.
 * - GATEHOUSE_VARS is THE list of GATEHOUSE_* names Gatehouse reads; any other set GATEHOUSE_* name
 *   is a problem naming it, with the closest known name. A module that reads a new GATEHOUSE_*
 *   variable adds it here (secret: true when its value is a credential). Names only tests and
 *   benches read (GATEHOUSE_TEST_*) are not on it: a production start refuses them.
 * - Every secret variable (SECRET_VARS: the model key, the platform tokens and secrets, the store URL,
 *   GATEHOUSE_VARS marked secret) also accepts NAME_FILE (bot/config/secret-files.ts), read first.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { httpUrl } from '../../adapters/kit/env.js';
import { DESCRIPTORS, descriptorOf, type EnvOf } from '../../adapters/descriptors.js';
import { PLATFORMS, type Platform } from '../../adapters/types.js';
import { LOG_LEVELS, type LogLevelSetting } from '../service/log-levels.js';
import { didYouMean } from './did-you-mean.js';
import { FILE_SUFFIX, readSecretFiles } from './secret-files.js';
import { readMetricsEnv, readTraceEnv, type MetricsSettings, type TraceSettings } from '../telemetry/env.js';

export type { ConfigProblem, Env } from './problems.js';
import type { ConfigProblem, Env } from './problems.js';
import { messageOf } from '../../agent/log.js';
import { describeTarget, readPostgresUrl } from '../../agent/store/postgres/url.js';

/**
 * GATEHOUSE_STORE: SQLite (embedded, the default) or PostgreSQL; any other URL is a config error.
 * A PostgreSQL `url` may hold the password: print `description` (the URL without it).
 */
export type StoreSettings =
  | { kind: 'sqlite' /** `sqlite://<path>`: nothing secret in it. */; url: string /** Absolute path, or ":memory:". */; path: string }
  | { kind: 'postgres'; url: string; description: string };

/** A platform is enabled when its entry is present; a platform without environment has no key. */
type PlatformEnv = { [P in Platform as [EnvOf<P>] extends [never] ? never : P]?: EnvOf<P> };

export interface EnvSettings {
  anthropic: { apiKey: string | undefined; baseURL: string | undefined };
  store: StoreSettings;
  /** GATEHOUSE_CONFIG resolved against cwd, when set. */
  configPath: string | undefined;
  http: { host: string; port: number };
  /** GATEHOUSE_METRICS, GATEHOUSE_METRICS_TOKEN (bot/telemetry/env.ts). */
  metrics: MetricsSettings;
  /** OTEL_EXPORTER_OTLP_* (bot/telemetry/env.ts); absent: no traces. */
  traces?: TraceSettings;
  platforms: PlatformEnv;
  /** GATEHOUSE_LOG_LEVEL (default info). */
  logLevel: LogLevelSetting;
  /**
   * GATEHOUSE_LEADER_RETRY_MS (PostgreSQL replicas; default 2000): how often a standby tries to take
   * the single-holder platform connections and the holder checks its database connection.
   */
  leaderRetryMs?: number;
}

/**
 * Every GATEHOUSE_* variable Gatehouse reads, with where it is documented (.env.example, README).
 * Error codes spelled like variables (GATEHOUSE_LOCKED, GATEHOUSE_PRECONDITION: agent/store/sqlite)
 * are not variables and are not here.
 */
export const GATEHOUSE_VARS: ReadonlyArray<{ name: string; secret?: boolean }> = [
  // A postgres:// URL carries the password.
  { name: 'GATEHOUSE_STORE', secret: true },
  { name: 'GATEHOUSE_CONFIG' },
  { name: 'GATEHOUSE_HTTP_HOST' },
  { name: 'GATEHOUSE_HTTP_PORT' },
  { name: 'GATEHOUSE_LOG_LEVEL' },
  { name: 'GATEHOUSE_LEADER_RETRY_MS' },
  // bot/service/replica-id.ts: names a replica in logs and claims (README "Several replicas").
  { name: 'GATEHOUSE_REPLICA_ID' },
  // bot/telemetry/env.ts: /metrics on or off, and its bearer token (required when not on loopback).
  { name: 'GATEHOUSE_METRICS' },
  { name: 'GATEHOUSE_METRICS_TOKEN', secret: true },
  // bot/audit/trail.ts: the hash-chained audit file (folder or "off", rotation size, MAC key).
  { name: 'GATEHOUSE_AUDIT_DIR' },
  { name: 'GATEHOUSE_AUDIT_MAX_BYTES' },
  { name: 'GATEHOUSE_AUDIT_KEY', secret: true },
];

/** The variables whose value is a credential; each also accepts NAME_FILE. */
export const SECRET_VARS: readonly string[] = [
  'ANTHROPIC_API_KEY',
  ...PLATFORMS.flatMap((p) => DESCRIPTORS[p].secrets),
  ...GATEHOUSE_VARS.filter((v) => v.secret).map((v) => v.name),
];

/** A known name, plus NAME_FILE for the secret ones. */
const withFiles = (names: readonly string[]): string[] => names.flatMap((n) => (SECRET_VARS.includes(n) ? [n, n + FILE_SUFFIX] : [n]));

const DEFAULT_HTTP_PORT = 8080;
const DEFAULT_HTTP_HOST = '127.0.0.1';

/** Reads `<cwd>/.env` into `env` without overriding what is set. Returns the file's path when loaded. */
export function loadDotEnv(env: Env, cwd: string): { file: string | undefined; problems: ConfigProblem[] } {
  const file = join(cwd, '.env');
  if (!existsSync(file)) return { file: undefined, problems: [] };
  let text: string;
  try {
    if (!statSync(file).isFile()) return { file: undefined, problems: [] };
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return { file, problems: [{ path: file, message: `cannot read it (${messageOf(err)}); fix its permissions or remove it` }] };
  }
  const parsed = parseEnv(text);
  for (const [name, value] of Object.entries(parsed)) {
    if (value !== undefined && env[name] === undefined) env[name] = value;
  }
  return { file, problems: [] };
}

function get(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v;
}

function scheme(value: string): string {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(value);
  return m ? `${m[1]}:` : '(none)';
}

/** GATEHOUSE_STORE alone (commands that need only the store, e.g. `gatehouse backup`). */
export function storeFromEnv(env: Env, cwd: string): { store: StoreSettings; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  readSecretFiles(env, ['GATEHOUSE_STORE'], problems);
  const store = parseStore(get(env, 'GATEHOUSE_STORE'), cwd, problems);
  return { store, problems };
}

function parseStore(value: string | undefined, cwd: string, problems: ConfigProblem[]): StoreSettings {
  const sqlite = (path: string): StoreSettings => ({ kind: 'sqlite', url: `sqlite://${path}`, path });
  if (value === undefined) return sqlite(join(cwd, 'data', 'gatehouse.sqlite'));
  const s = scheme(value).toLowerCase();
  const fallback = sqlite(':memory:');
  if (s === 'sqlite:') {
    const rest = value.slice('sqlite://'.length);
    if (!value.toLowerCase().startsWith('sqlite://') || rest === '') {
      problems.push({ path: 'GATEHOUSE_STORE', message: 'expected sqlite://<path to a file>, e.g. sqlite://./data/gatehouse.sqlite' });
      return fallback;
    }
    return sqlite(rest === ':memory:' ? rest : isAbsolute(rest) ? rest : resolve(cwd, rest));
  }
  if (s === 'postgres:' || s === 'postgresql:') {
    // Read as pg reads it (a host name, or a Unix socket's folder); the value is never echoed.
    const t = readPostgresUrl(value);
    if ('problem' in t) {
      problems.push({ path: 'GATEHOUSE_STORE', message: t.problem });
      return fallback;
    }
    return { kind: 'postgres', url: value, description: withoutPassword(value) ?? describeTarget(t) };
  }
  // Redis was never shipped or tested: a clear error now, not "not installed" later.
  problems.push({
    path: 'GATEHOUSE_STORE',
    message:
      (s === 'redis:' || s === 'rediss:' ? `${s}// stores are not supported; ` : `unsupported scheme "${s}"; `) +
      'use sqlite://<path to a file> (or unset it for the default SQLite file under ./data), or postgres://user:password@host:5432/database',
  });
  return fallback;
}

/** The URL as given, its password taken out (URL or query), or undefined when WHATWG URL cannot read it. */
function withoutPassword(value: string): string | undefined {
  try {
    const shown = new URL(value);
    shown.password = '';
    shown.searchParams.delete('password');
    return shown.href;
  } catch {
    return undefined; // e.g. postgres://user:pw@/db?host=/run/postgresql, which pg reads
  }
}

/**
 * Every variable Gatehouse reads under a prefix it owns (a platform descriptor's, GATEHOUSE_VARS); any
 * other with that prefix is a typo or a leftover.
 */
const KNOWN_PREFIXED_VARS: ReadonlyArray<{ prefix: string; names: readonly string[] }> = [
  { prefix: 'GATEHOUSE_', names: withFiles(GATEHOUSE_VARS.map((v) => v.name)) },
  ...PLATFORMS.flatMap((p) => {
    const d = descriptorOf(p);
    return d.envPrefix === undefined ? [] : [{ prefix: d.envPrefix, names: withFiles(d.env) }];
  }),
];

/** Unknown names under Gatehouse's prefixes, each a problem naming it and the closest known name. */
function unknownVars(env: Env, problems: ConfigProblem[]): void {
  for (const known of KNOWN_PREFIXED_VARS) {
    for (const name of Object.keys(env)
      .filter((n) => n.startsWith(known.prefix) && get(env, n) !== undefined)
      .sort()) {
      if (!known.names.includes(name)) {
        const guess = didYouMean(name, known.names);
        problems.push({
          path: name,
          message: `is not a variable Gatehouse reads (a typo?)${guess}; the ${known.prefix.slice(0, -1)} variables are ${known.names.join(', ')}`,
        });
      }
    }
  }
}

/** Parses the environment (after loadDotEnv). Never throws; problems are returned, one per variable. */
export function readEnv(env: Env, cwd: string): { settings: EnvSettings; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  // First: NAME_FILE fills NAME for everything below (and for the secret registries reading env).
  readSecretFiles(env, SECRET_VARS, problems);

  const apiKey = get(env, 'ANTHROPIC_API_KEY');
  const baseRaw = get(env, 'ANTHROPIC_BASE_URL');
  let baseURL: string | undefined;
  if (baseRaw !== undefined && httpUrl('ANTHROPIC_BASE_URL', baseRaw, problems)) baseURL = baseRaw;
  if (apiKey === undefined && baseRaw === undefined) {
    problems.push({
      path: 'ANTHROPIC_API_KEY',
      message: 'is not set; put your key in .env or the environment (or set ANTHROPIC_BASE_URL to a compatible server that needs none)',
    });
  }

  const store = parseStore(get(env, 'GATEHOUSE_STORE'), cwd, problems);
  const cfg = get(env, 'GATEHOUSE_CONFIG');
  const configPath = cfg === undefined ? undefined : resolve(cwd, cfg);

  const host = get(env, 'GATEHOUSE_HTTP_HOST') ?? DEFAULT_HTTP_HOST;
  const portRaw = get(env, 'GATEHOUSE_HTTP_PORT');
  let port = DEFAULT_HTTP_PORT;
  if (portRaw !== undefined) {
    const n = /^\d+$/.test(portRaw.trim()) ? Number(portRaw.trim()) : NaN;
    if (!Number.isInteger(n) || n < 0 || n > 65535) {
      problems.push({ path: 'GATEHOUSE_HTTP_PORT', message: `expected a port number from 0 to 65535, got ${JSON.stringify(portRaw)}` });
    } else port = n;
  }

  const metrics = readMetricsEnv(env, host, problems);
  const traces = readTraceEnv(env, problems);
  unknownVars(env, problems);
  const levelRaw = get(env, 'GATEHOUSE_LOG_LEVEL')?.trim().toLowerCase();
  let logLevel: LogLevelSetting = 'info';
  if (levelRaw !== undefined) {
    if ((LOG_LEVELS as readonly string[]).includes(levelRaw)) logLevel = levelRaw as LogLevelSetting;
    else
      problems.push({
        path: 'GATEHOUSE_LOG_LEVEL',
        message: `expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(get(env, 'GATEHOUSE_LOG_LEVEL'))}`,
      });
  }

  const retryRaw = get(env, 'GATEHOUSE_LEADER_RETRY_MS');
  let leaderRetryMs: number | undefined;
  if (retryRaw !== undefined) {
    const n = /^\d+$/.test(retryRaw.trim()) ? Number(retryRaw.trim()) : NaN;
    if (!Number.isInteger(n) || n < 100 || n > 20_000) {
      problems.push({
        path: 'GATEHOUSE_LEADER_RETRY_MS',
        message: `expected milliseconds from 100 to 20000 (a standby must take over well within 30 s), got ${JSON.stringify(retryRaw)}`,
      });
    } else leaderRetryMs = n;
  }

  const platforms: PlatformEnv = {};
  for (const p of PLATFORMS) {
    const parsed = descriptorOf(p).parseEnv?.(env, problems);
    // Typed by the descriptor's own parseEnv (PlatformEnv is built from the same table).
    if (parsed !== undefined) (platforms as Record<string, unknown>)[p] = parsed;
  }

  return {
    settings: {
      anthropic: { apiKey, baseURL },
      store,
      configPath,
      http: { host, port },
      metrics,
      ...(traces ? { traces } : {}),
      platforms,
      logLevel,
      ...(leaderRetryMs !== undefined ? { leaderRetryMs } : {}),
    },
    problems,
  };
}
