/**
 * Config changes without a restart, and the files through which `gatehouse reload` finds and asks the
 * running service.
 *
 * Contract:
 * - `reloadConfig(live, read)` reads the configuration again (gatehouse.yaml; the environment is as it
 *   was at start). A bad file changes nothing: the old config stays in force and the result carries
 *   the same problems `gatehouse start` would print. A good one is applied IN PLACE to the live Config
 *   object (agents, routes, defaultAgent, access lists), which everything reads at decision time, so
 *   the next message and the next gate decision see it. Settings the running objects captured at start
 *   (platform tokens and other environment, rateLimit, refusals, every runner.* key) are not applied; the
 *   result names them so the log can say "restart to apply".
 * - The service writes `gatehouse.pid` in its data folder (the SQLite store's folder) at start and
 *   removes it at stop; after each reload it writes `gatehouse.reload.json`
 *   ({ pid, at, ok, message }). Both are created owner-only (0600).
 * - Workspaces: `checkWorkspaces` creates nothing and fails with a ConfigError naming
 *   agents.<name>.workspace when one could not be made; `prepareWorkspaces` makes them and resolves
 *   their real paths. Start-up checks before it opens the store and makes them after.
 */
import { accessSync, constants, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { ConfigChanges } from '../../agent/audit.js';
import { configChanges } from '../audit/config-diff.js';
import { ConfigError, formatConfigError, type Config, type ConfigProblem } from '../config/index.js';
import { messageOf } from '../../agent/log.js';

export interface ReloadResult {
  ok: boolean;
  /** One line (ok) or the full problem list (rejected). */
  message: string;
  /** Changed settings that only a restart applies. */
  needsRestart: string[];
  /** What the reload changed (applied ones only), for the audit trail. */
  changes?: ConfigChanges;
}

/** What an operator reads when an agent's workspace cannot be made or used. */
function workspaceProblem(agent: Config['agents'][string], err: unknown): ConfigProblem {
  const code = (err as NodeJS.ErrnoException).code;
  const why =
    code === 'EROFS'
      ? 'it is on a read-only file system'
      : code === 'EACCES' || code === 'EPERM'
        ? 'permission denied'
        : code === 'ENOTDIR'
          ? 'a file is in the way'
          : messageOf(err);
  return {
    path: `agents.${agent.name}.workspace`,
    message: `cannot create or open ${agent.workspace} (${why}); point it at a folder the service's user can write, e.g. /app/workspace in Docker or /var/lib/gatehouse/workspace with systemd`,
  };
}

/**
 * Checks, creating nothing, that each agent's workspace exists as a folder the service can write or
 * could be created (its nearest existing parent is such a folder). Start-up checks this before it
 * opens the store, and creates the folders after: a start that fails on its store leaves no folder.
 * Throws a ConfigError naming agents.<name>.workspace.
 */
export function checkWorkspaces(config: Config): void {
  const problems: ConfigProblem[] = [];
  for (const agent of Object.values(config.agents)) {
    let at = resolve(agent.workspace);
    try {
      // The nearest part of the path that exists must be a folder we may write into.
      while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
      if (!statSync(at).isDirectory()) throw Object.assign(new Error(`${at} is not a folder`), { code: 'ENOTDIR' });
      accessSync(at, constants.W_OK | constants.X_OK);
    } catch (err) {
      problems.push(workspaceProblem(agent, err));
    }
  }
  if (problems.length > 0) throw new ConfigError(problems, config.configFile);
}

/**
 * Creates each agent's workspace and resolves it to its real path (confinement compares real paths).
 * Throws a ConfigError naming agents.<name>.workspace when one cannot be created (a read-only mount,
 * a folder the service user cannot write).
 */
export function prepareWorkspaces(config: Config): void {
  const problems: ConfigProblem[] = [];
  for (const agent of Object.values(config.agents)) {
    try {
      mkdirSync(agent.workspace, { recursive: true });
      agent.workspace = realpathSync(agent.workspace);
    } catch (err) {
      problems.push(workspaceProblem(agent, err));
    }
  }
  if (problems.length > 0) throw new ConfigError(problems, config.configFile);
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

export function reloadConfig(live: Config, read: () => Config): ReloadResult {
  let next: Config;
  try {
    next = read();
    prepareWorkspaces(next);
  } catch (err) {
    const text = err instanceof ConfigError ? formatConfigError(err) : `Could not load the configuration: ${messageOf(err)}`;
    return { ok: false, message: `config reload rejected; the previous configuration stays in force.\n${text}`, needsRestart: [] };
  }
  const needsRestart: string[] = [];
  if (!same(live.platforms, next.platforms)) needsRestart.push('platform variables');
  if (!same(live.store, next.store)) needsRestart.push('GATEHOUSE_STORE');
  if (!same(live.http, next.http)) needsRestart.push('GATEHOUSE_HTTP_HOST/PORT');
  if (!same(live.metrics, next.metrics)) needsRestart.push('GATEHOUSE_METRICS/GATEHOUSE_METRICS_TOKEN');
  if (!same(live.traces, next.traces)) needsRestart.push('OTEL_*');
  if (!same(live.anthropic, next.anthropic)) needsRestart.push('ANTHROPIC_*');
  if (!same(live.access.rateLimit, next.access.rateLimit)) needsRestart.push('access.rateLimit');
  if (!same(live.access.refusals, next.access.refusals)) needsRestart.push('access.refusals');
  // The runner's slots are built once at start (agent/run/limits.ts).
  for (const k of ['maxConcurrentRuns', 'maxRunsPerUser', 'maxRunsPerPlace', 'reservedRuns'] as const) {
    if (live.runner[k] !== next.runner[k]) needsRestart.push(`runner.${k}`);
  }

  const changes = configChanges(live, next);
  for (const name of Object.keys(live.agents)) if (!Object.hasOwn(next.agents, name)) delete live.agents[name];
  Object.assign(live.agents, next.agents);
  live.routes.splice(0, live.routes.length, ...next.routes);
  live.defaultAgent = next.defaultAgent;
  live.access.telegram = next.access.telegram;
  live.access.slack = next.access.slack;
  live.access.discord = next.access.discord;
  live.configFile = next.configFile;
  if (next.configSha256 !== undefined) live.configSha256 = next.configSha256;
  else delete live.configSha256;

  const agents = Object.keys(live.agents).join(', ');
  const restart = needsRestart.length > 0 ? `; changed but applied only by a restart: ${needsRestart.join(', ')}` : '';
  return { ok: true, message: `configuration reloaded from ${live.configFile ?? 'built-in defaults'}; agents: ${agents}${restart}`, needsRestart, changes };
}

/** The folder for the pid and reload-status files: the SQLite store's folder, else ./data. */
export function dataDirOf(config: Pick<Config, 'store'>, cwd: string): string | undefined {
  if (config.store.kind === 'sqlite') return config.store.path === ':memory:' ? undefined : dirname(config.store.path);
  return resolve(cwd, 'data');
}

export const PID_FILE = 'gatehouse.pid';
export const RELOAD_STATUS_FILE = 'gatehouse.reload.json';

export interface ReloadStatus {
  pid: number;
  at: number;
  ok: boolean;
  message: string;
}

export function writePidFile(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, PID_FILE);
  writeFileSync(file, `${process.pid}\n`, { mode: 0o600 });
  return file;
}

/** Removes the pid file only if it is still ours (a second instance may have written its own). */
export function removePidFile(file: string): void {
  try {
    if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file);
  } catch {
    // Already gone.
  }
}

export function writeReloadStatus(dir: string, status: ReloadStatus): void {
  try {
    writeFileSync(join(dir, RELOAD_STATUS_FILE), JSON.stringify(status) + '\n', { mode: 0o600 });
  } catch {
    // The log line is the record; this file only lets `gatehouse reload` print the outcome.
  }
}
