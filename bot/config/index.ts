/**
 * Configuration: the environment (bot/config/env.ts) plus gatehouse.yaml, validated and resolved into one
 * plain `Config` object. The schema (and the types and plain defaults it gives) is
 * bot/config/schema.ts; agent layering bot/config/agents.ts; the path-safety checks
 * bot/config/paths.ts; routes and agentForConversation bot/config/routes.ts. Per-platform names
 * (variables, access lists, approver forms) come from adapters/descriptors.ts only.
 *
 * Contract:
 * - `loadConfig` either returns a fully resolved Config (every default filled, workspaces absolute)
 *   or throws ONE `ConfigError` listing every problem found, each with the key path or variable name
 *   and what to do (`agents.ops.tier: expected one of read-only | low-risk | high-risk, got "admin"`).
 *   Unknown keys are errors (a typo must not silently do nothing), as are unknown tool names,
 *   unknown route agents, `SSH_*` and Gatehouse's own names (policies/env.ts isOwnName) in envAllowlist, a missing ANTHROPIC_API_KEY without a base URL.
 * - `.env` in cwd is loaded first, never overriding variables already in `opts.env` (keys it adds are
 *   written into `opts.env`, as process.loadEnvFile would into process.env).
 * - Config file: GATEHOUSE_CONFIG (must exist when set), else `<cwd>/gatehouse.yaml` when it exists,
 *   else none: one agent `default` (file tools + ask_user_question, tier read-only: write_file and
 *   edit_file ask the terminal user `local`, bound as console approver; workspace = <cwd>/workspace).
 * - Sandbox per agent: `sandbox: bubblewrap` (default) or `none`; `sandboxNetwork` (default false);
 *   `sandboxLimits` (memory, tmpSize, cpuSeconds, processes, openFiles: merged PER KEY, agent over
 *   defaults over built-ins); `sandboxReadPaths` (absolute, or relative to the config file's directory; one
 *   that contains the config file, the .env loaded or the store is an error at that entry).
 * - A workspace that contains (or is) the directory of the config file, the .env loaded or the store is an
 *   error at `agents.<name>.workspace`: the agent's commands and file tools could read or rewrite them.
 *   Compared by real path (symlinks resolved as far as the path exists; bot/config/paths.ts).
 * - Layering per agent: built-in defaults < `defaults:` < the agent's own keys. A key set on the agent
 *   replaces the default's value as a whole (lists and `approvers` are not merged). An empty value
 *   (`system:` with nothing after it) means "use the default". `sandboxLimits`, `retention` and
 *   `memory` merge key by key (bot/config/agents.ts).
 * - The result is a plain, mutable object: the policy is read from it at decision time, so the lead
 *   may append to an agent's allowlists ("Always approve") and every later decision sees it.
 *   `agentForConversation` returns the live AgentConfig, not a copy.
 * - `approvers.console` accepts only `local` (the terminal chat's one user); so does `approvers.cli`
 *   (the host operator, who may decide this agent's requests with `gatehouse approvals decide`). A value still holding a
 *   `<placeholder>` from gatehouse.example.yaml (an id, a route match) is an error saying to replace it.
 * - Per agent, `toolPolicy` and `commandRules` (bot/config/policy.ts: unknown tool names are errors
 *   listing the known ones) and `mcpServers` (agent/mcp/config.ts: `${NAME}` in env and headers is
 *   filled from the environment; a missing variable is an error at that key; a server's `readPaths`
 *   entry, or a boxed server's `cwd`, that contains the config file, the .env or the store is an error
 *   at that key).
 * - Ids (users, chats, channels, guilds, approvers) are strings; numbers in YAML are accepted and
 *   turned into strings exactly (integers are read as BigInt, so 19-digit Discord ids keep every digit).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { buildSchema, type AccessConfig, type FileConfig, type RunnerConfig } from './schema.js';
import { issueProblems } from './problems.js';
import { loadDotEnv, readEnv, type ConfigProblem, type Env, type EnvSettings } from './env.js';
import { resolveAgents, type AgentConfig } from './agents.js';
import { resolveRoutes, type Route } from './routes.js';
import { messageOf } from '../../agent/log.js';

export { DEFAULT_MODEL, type AgentConfig } from './agents.js';
export { agentForConversation } from './routes.js';
export type { ConfigProblem } from './env.js';

/** The resolved configuration: the environment's settings plus the file's, every default filled. */
export interface Config extends Omit<EnvSettings, 'configPath'> {
  /** Absolute path of the YAML file read, or undefined when running on built-in defaults. */
  configFile: string | undefined;
  /** SHA-256 (hex) of the YAML file's bytes as read (`gatehouse run` compares it with the file on disk). */
  configSha256?: string;
  /** Absolute path of the .env file loaded, if any. */
  envFile: string | undefined;
  agents: Record<string, AgentConfig>;
  /** First match wins; no match: `defaultAgent`. */
  routes: Route[];
  defaultAgent: string;
  access: AccessConfig;
  runner: RunnerConfig;
}

export interface LoadConfigOptions {
  env: Env;
  cwd: string;
  /** Names of the tools that exist (the registry's); anything else in a toolset is an error. */
  knownTools: readonly string[];
}

/** Thrown by loadConfig with every problem found; `formatConfigError` renders it for the CLI. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(
    readonly problems: ConfigProblem[],
    /** Where the YAML came from, for the closing hint. */
    readonly configFile?: string,
  ) {
    super(
      `Gatehouse configuration has ${problems.length} problem${problems.length === 1 ? '' : 's'}:\n` +
        problems.map((p) => `  ${p.path}: ${p.message}`).join('\n'),
    );
  }
}

/** A CLI-ready text for any error thrown by loadConfig (ConfigError or an unexpected one). */
export function formatConfigError(err: unknown): string {
  if (err instanceof ConfigError) {
    const where = err.configFile ? `${err.configFile} or the environment (.env)` : 'the environment (.env) or gatehouse.yaml';
    return `${err.message}\n\nFix ${where}, then start again. gatehouse.example.yaml documents every key.`;
  }
  return `Could not load the configuration: ${messageOf(err)}`;
}
// ---------------------------------------------------------------------------------------------
// Loading

/**
 * Empty YAML values mean "use the default": null map values are dropped, except an agent written with
 * no keys (`agents: { ops: }`), which stays as an agent with every default.
 */
function dropNulls(v: unknown, path: readonly string[] = []): unknown {
  if (Array.isArray(v)) return v.map((x) => dropNulls(x, path));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (x === null) {
        if (path.length === 1 && path[0] === 'agents') out[k] = {};
        continue;
      }
      out[k] = dropNulls(x, [...path, k]);
    }
    return out;
  }
  return v;
}

function readYaml(file: string, problems: ConfigProblem[], read: { sha256?: string }): unknown {
  let source: string;
  try {
    const bytes = readFileSync(file);
    read.sha256 = createHash('sha256').update(bytes).digest('hex');
    source = bytes.toString('utf8');
  } catch (err) {
    problems.push({ path: file, message: `cannot read it (${messageOf(err)})` });
    return undefined;
  }
  const doc = parseDocument(source, { intAsBigInt: true });
  if (doc.errors.length > 0) {
    for (const e of doc.errors) {
      const pos = e.linePos?.[0];
      problems.push({
        path: pos ? `${file}:${pos.line}:${pos.col}` : file,
        message: `YAML syntax: ${(e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')}`,
      });
    }
    return undefined;
  }
  const data = doc.toJS({ maxAliasCount: 100 }) as unknown;
  return data === null || data === undefined ? {} : data;
}

/** Loads, validates and resolves the configuration. Throws ConfigError listing every problem. */
export function loadConfig(opts: LoadConfigOptions): Config {
  const cwd = resolve(opts.cwd);
  const problems: ConfigProblem[] = [];

  const dot = loadDotEnv(opts.env, cwd);
  problems.push(...dot.problems);
  const { settings, problems: envProblems } = readEnv(opts.env, cwd);
  problems.push(...envProblems);

  // Which file, if any.
  let configFile: string | undefined;
  if (settings.configPath !== undefined) {
    if (!existsSync(settings.configPath) || !statSync(settings.configPath).isFile()) {
      problems.push({
        path: 'GATEHOUSE_CONFIG',
        message: `file not found: ${settings.configPath}; point it at your gatehouse.yaml or unset it to use ./gatehouse.yaml`,
      });
    } else configFile = settings.configPath;
  } else {
    const def = resolve(cwd, 'gatehouse.yaml');
    if (existsSync(def) && statSync(def).isFile()) configFile = def;
  }
  const baseDir = configFile ? dirname(configFile) : cwd;

  const schema = buildSchema(opts.knownTools);
  // No file (or one that does not parse): what an empty file resolves to, every default filled.
  let file: FileConfig = schema.parse({});
  const read: { sha256?: string } = {};
  if (configFile !== undefined) {
    const raw = readYaml(configFile, problems, read);
    if (raw !== undefined) {
      const data = dropNulls(raw);
      const parsed = schema.safeParse(data, { reportInput: true });
      if (parsed.success) file = parsed.data;
      else {
        for (const issue of parsed.error.issues) problems.push(...issueProblems(issue, schema));
        // Cross-references can still be checked on what parsed (names of agents are plain keys).
        file = { ...file, ...lenientCrossRefView(data) };
      }
    }
  }

  const botFiles = { configFile, envFile: dot.file, store: settings.store };
  const agents = resolveAgents(file, { env: opts.env, baseDir, knownTools: opts.knownTools, botFiles }, problems);

  const { routes, defaultAgent } = resolveRoutes(file, agents, problems);

  if (problems.length > 0) throw new ConfigError(problems, configFile);

  return {
    configFile,
    ...(read.sha256 !== undefined ? { configSha256: read.sha256 } : {}),
    envFile: dot.file,
    anthropic: settings.anthropic,
    store: settings.store,
    http: settings.http,
    metrics: settings.metrics,
    ...(settings.traces ? { traces: settings.traces } : {}),
    platforms: settings.platforms,
    agents,
    routes,
    defaultAgent,
    access: file.access,
    runner: file.runner,
    logLevel: settings.logLevel,
    ...(settings.leaderRetryMs !== undefined ? { leaderRetryMs: settings.leaderRetryMs } : {}),
  };
}

/**
 * After a schema failure, a best-effort view with just what cross-reference checks need (agent names,
 * route agents, defaultAgent), so those problems are reported in the same run. Values it cannot
 * trust are left out; nothing here is used for a Config (loadConfig throws anyway).
 */
function lenientCrossRefView(data: unknown): Pick<FileConfig, 'agents' | 'routes' | 'defaultAgent'> {
  const out: Pick<FileConfig, 'agents' | 'routes' | 'defaultAgent'> = {};
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return out;
  const d = data as Record<string, unknown>;
  const agents = d['agents'];
  if (agents !== null && typeof agents === 'object' && !Array.isArray(agents)) {
    // model: a placeholder, so a schema error elsewhere is not doubled by "model: required".
    out.agents = Object.fromEntries(Object.keys(agents).map((k) => [k, { model: '?' }]));
  }
  if (Array.isArray(d['routes'])) {
    // Same indices as the file; '' marks an entry the schema already reported.
    out.routes = d['routes'].map((r: unknown) => {
      const agent = r !== null && typeof r === 'object' ? (r as Record<string, unknown>)['agent'] : undefined;
      return { match: '', agent: typeof agent === 'string' ? agent : '' };
    });
  }
  if (typeof d['defaultAgent'] === 'string') out.defaultAgent = d['defaultAgent'];
  return out;
}
