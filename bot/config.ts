/**
 * Configuration: the environment (bot/env.ts) plus gatehouse.yaml, validated and resolved into one
 * plain `Config` object.
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
 *   Compared by real path (symlinks resolved as far as the path exists).
 * - Layering per agent: built-in defaults < `defaults:` < the agent's own keys. A key set on the agent
 *   replaces the default's value as a whole (lists and `approvers` are not merged). An empty value
 *   (`system:` with nothing after it) means "use the default".
 * - The result is a plain, mutable object: the policy is read from it at decision time, so the lead
 *   may append to an agent's allowlists ("Always approve") and every later decision sees it.
 *   `agentForConversation` returns the live AgentConfig, not a copy.
 * - `approvers.console` accepts only `local` (the terminal chat's one user); so does `approvers.cli`
 *   (the host operator, who may decide this agent's requests with `gatehouse approvals decide`). A value still holding a
 *   `<placeholder>` from gatehouse.example.yaml (an id, a route match) is an error saying to replace it.
 * - Per agent, `toolPolicy` and `commandRules` (bot/policy-config.ts: unknown tool names are errors
 *   listing the known ones) and `mcpServers` (agent/mcp/config.ts: `${NAME}` in env and headers is
 *   filled from the environment; a missing variable is an error at that key; a server's `readPaths`
 *   entry, or a boxed server's `cwd`, that contains the config file, the .env or the store is an error
 *   at that key).
 * - Ids (users, chats, channels, guilds, approvers) are strings; numbers in YAML are accepted and
 *   turned into strings exactly (integers are read as BigInt, so 19-digit Discord ids keep every digit).
 */
import { budgetLimitsOf } from './budget-config.js';
import { resolveWebSearch, type CommandToolsConfig } from './tools-config.js';
import type { WebSearchConfig } from '../agent/tools/builtin/web/search.js';
import { SKILL_TOOL_NAMES } from '../agent/tools/builtin/skills/tools.js';
import { subagentToolProblems } from '../agent/tools/builtin/subagent/config.js';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, isAbsolute } from 'node:path';
import { parseDocument } from 'yaml';
import { PLATFORMS, type Platform } from '../adapters/types.js';
import type { AgentSettings } from '../agent/settings.js';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits, type SandboxMode } from '../agent/tools/sandbox/index.js';
import type { NetworkConfig } from '../agent/tools/builtin/web/config.js';
import type { Tier } from '../policies/tiers.js';
import { DEFAULT_REFUSAL_LIMITS, type RateLimit, type RefusalLimits } from '../policies/access.js';
import { isOwnName } from '../policies/env.js';
import type { CommandRule, ToolPolicy } from '../policies/tool-policy.js';
import { resolveMcpServers, type McpServerConfig } from '../agent/mcp/config.js';
import { toolPolicyProblems } from './policy-config.js';
import type { LogLevelSetting } from './log.js';
import { resolveMemoryConfig, resolveRemindersConfig } from './memory-reminders-config.js';
import { buildSchema, resolveRunnerConfig, type FileConfig, type RawAgent, type RunnerConfig } from './config-schema.js';
import { DEFAULT_WORKSPACE_MAX_BYTES } from '../agent/tools/workspace-quota.js';
import { didYouMean, issueProblems } from './config-problems.js';
import type { MetricsSettings, TraceSettings } from './telemetry/env.js';
import { loadDotEnv, readEnv, type ConfigProblem, type Env, type PlatformEnv, type StoreSettings } from './env.js';
import { sandboxNetworkFields } from '../agent/egress/config.js';
import type { ApprovalDelivery } from '../agent/approvals/delivery.js';
import { approvalDeliveryProblems } from './approval-delivery-config.js';

export type { ConfigProblem } from './env.js';
export { formatPath } from './config-problems.js';

/**
 * A resolved agent: every default filled in. The runner reads it live as agent/settings.ts's
 * AgentSettings (documented there); here the lists are mutable so the operator's config object can
 * be changed in place, and every platform has an approver list (maybe empty).
 */
export interface AgentConfig extends AgentSettings {
  tools: string[];
  /** Per platform, plus `cli`: the host operator (`local`) at `gatehouse approvals decide`. */
  approvers: Record<Platform, string[]> & { cli?: string[] };
  /** Unset: the default rule (agent/approvals/requester.ts). */
  requesterMayApprove?: boolean;
  /** Unset: `here` (bot/approval-delivery-config.ts). */
  approvalDelivery?: ApprovalDelivery;
  autoApprovedTools: string[];
  autoApprovedCommands: string[];
  envAllowlist: string[];
  /** execute_command's default and longest timeout for this agent. */
  commandTimeoutMs: number;
  /** The workspace size limit in bytes; 0: none. */
  workspaceMaxBytes: number;
  sandbox: SandboxMode;
  /** Discord: answer a channel mention in a new thread from that message (default) or in place. */
  discordReplyInThread: boolean;
  sandboxNetwork: boolean;
  /** `sandboxNetwork: { allow }`: the egress proxy's allowlist (agent/egress/); unset: no proxy. */
  sandboxEgress?: string[];
  /** The box's limits, every one filled (sandboxLimits: per key, the agent's < defaults' < built-in). */
  sandboxLimits: SandboxLimits;
  /** Host paths the box may read (absolute; relative ones resolved against the config file's directory). */
  sandboxReadPaths: string[];
  /** web_fetch / http_request exceptions (`network.allow`); agent/tools/builtin/web/config.ts. */
  network: NetworkConfig;
  /** bot/thread-follow-ups.ts; unset: true. */
  threadFollowUps?: boolean;
  toolPolicy: ToolPolicy;
  commandRules: CommandRule[];
  /** MCP servers by name (agent/mcp/config.ts), references to environment variables filled in. */
  mcpServers: Record<string, McpServerConfig>;
  /** Custom command tools (bot/tools-config.ts), by tool name. */
  commandTools?: CommandToolsConfig;
  /** Skill folders (absolute); set: find_skills, load_skill, load_skill_section are offered. */
  skills?: string[];
  /** The web_search provider (bot/tools-config.ts); unset: web_search is not offered. */
  webSearch?: WebSearchConfig;
}

export interface Route {
  /** A platform name, or a conversation-key prefix that matches at a ':' boundary. */
  match: string;
  agent: string;
  /** bot/thread-follow-ups.ts; unset: the agent's. */
  threadFollowUps?: boolean;
}

export interface AccessConfig {
  telegram: { users: string[]; chats: string[] };
  slack: { users: string[]; channels: string[] };
  discord: { users: string[]; channels: string[]; guilds: string[] };
  rateLimit: RateLimit;
  /** How refusals to strangers are throttled (policies/access.ts createRefusalThrottle). */
  refusals: RefusalLimits;
}

export interface Config {
  /** Absolute path of the YAML file read, or undefined when running on built-in defaults. */
  configFile: string | undefined;
  /** SHA-256 (hex) of the YAML file's bytes as read (`gatehouse run` compares it with the file on disk). */
  configSha256?: string;
  /** Absolute path of the .env file loaded, if any. */
  envFile: string | undefined;
  anthropic: { apiKey: string | undefined; baseURL: string | undefined };
  store: StoreSettings;
  http: { host: string; port: number };
  /** /metrics on the HTTP server: on or off, and its bearer token (bot/telemetry/env.ts). */
  metrics: MetricsSettings;
  /** OpenTelemetry traces (OTEL_EXPORTER_OTLP_*); absent: off. */
  traces?: TraceSettings;
  /** Chat platforms enabled by their environment (a token present). */
  platforms: PlatformEnv;
  agents: Record<string, AgentConfig>;
  /** First match wins; no match: `defaultAgent`. */
  routes: Route[];
  defaultAgent: string;
  access: AccessConfig;
  runner: RunnerConfig;
  /** GATEHOUSE_LOG_LEVEL. */
  logLevel: LogLevelSetting;
  /** GATEHOUSE_LEADER_RETRY_MS (bot/env.ts); unset: the store's default. */
  leaderRetryMs?: number;
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
  return `Could not load the configuration: ${err instanceof Error ? err.message : String(err)}`;
}

export { PLATFORMS };
export const DEFAULT_MODEL = 'claude-sonnet-5-5';
export const DEFAULT_CLASSIFIER_MODEL = 'claude-haiku-5-5';
export const DEFAULT_SYSTEM_PROMPT =
  'You are Gatehouse, an assistant with tools, talking with people in a chat. ' +
  'Be concise. Use your tools to check facts before answering; if a tool call is declined, ' +
  'explain what you could not do instead of retrying it.';
/**
 * The no-config agent's toolset (filtered by the tools that exist). Its tier stays read-only, so the
 * two writing tools (low-risk, confined to the workspace by the file tools' own path checks) each ask
 * the terminal user with a card: a first run reaches an approval. No execute_command (a shell reaches
 * more than the workspace's files and needs bubblewrap installed), no delete/move (high-risk).
 */
export const DEFAULT_TOOLS = ['read_file', 'ls', 'find', 'grep', 'write_file', 'edit_file', 'get_time', 'list_todos', 'ask_user_question'] as const;

const HARD_DEFAULTS = {
  classifierModel: DEFAULT_CLASSIFIER_MODEL,
  system: DEFAULT_SYSTEM_PROMPT,
  tools: [] as string[],
  tier: 'read-only' as Tier,
  autoApprovedTools: [] as string[],
  autoApprovedCommands: [] as string[],
  envAllowlist: [] as string[],
  maxIterations: 100,
  runTimeoutMs: 600_000,
  retention: { maxConversations: 10_000, maxIdleDays: 365 },
  approvalTimeoutMs: 1_800_000,
  questionTimeoutMs: 900_000,
  commandTimeoutMs: 300_000,
  workspaceMaxBytes: DEFAULT_WORKSPACE_MAX_BYTES,
  maxTokens: 8192,
  sandbox: 'bubblewrap' as const,
  sandboxNetwork: false,
};

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
    problems.push({ path: file, message: `cannot read it (${(err as Error).message})` });
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

function uniq(list: readonly string[]): string[] {
  return [...new Set(list)];
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

  let file: FileConfig = {};
  const read: { sha256?: string } = {};
  if (configFile !== undefined) {
    const raw = readYaml(configFile, problems, read);
    if (raw !== undefined) {
      const schema = buildSchema(opts.knownTools);
      const data = dropNulls(raw);
      const parsed = schema.safeParse(data, { reportInput: true });
      if (parsed.success) file = parsed.data;
      else {
        for (const issue of parsed.error.issues) problems.push(...issueProblems(issue, schema));
        // Cross-references can still be checked on what parsed (names of agents are plain keys).
        file = lenientCrossRefView(data);
      }
    }
  }

  // Agents: built-in defaults < (the built-in `default` agent when none is defined) < defaults < agent.
  const agents: Record<string, AgentConfig> = {};
  const defaults: RawAgent = file.defaults ?? {};
  const defined: Record<string, RawAgent> = file.agents ?? {};
  const base: Record<string, RawAgent> =
    Object.keys(defined).length > 0
      ? defined
      : {
          default: {},
        };
  const builtinDefault: RawAgent = {
    model: DEFAULT_MODEL,
    tools: DEFAULT_TOOLS.filter((t) => opts.knownTools.includes(t)),
    approvers: { console: ['local'] },
  };
  const usingBuiltin = Object.keys(defined).length === 0;

  for (const [name, own] of Object.entries(base)) {
    const layer: RawAgent = usingBuiltin ? { ...builtinDefault, ...defaults, ...own } : { ...defaults, ...own };
    const where = (key: keyof RawAgent): string => (own[key] !== undefined ? `agents.${name}` : 'defaults');
    if (layer.model === undefined) {
      problems.push({ path: `agents.${name}.model`, message: 'required (set it here or in defaults.model), e.g. claude-sonnet-5-5' });
    }
    // The API counts thinking inside max_tokens and refuses a budget that is not below it.
    const maxTokens = layer.maxTokens ?? HARD_DEFAULTS.maxTokens;
    if (layer.thinking && layer.thinking.budgetTokens >= maxTokens) {
      problems.push({
        path: `${where('thinking')}.thinking.budgetTokens`,
        message: `must be below maxTokens (${maxTokens}): thinking is counted inside the reply's max_tokens; raise maxTokens or lower the budget`,
      });
    }
    // Declaring a command tool offers it: its name is not a built-in one `tools` could list.
    const tools = uniq([
      ...(layer.tools ?? HARD_DEFAULTS.tools),
      ...Object.keys(layer.commandTools ?? {}),
      ...(layer.skills?.length ? SKILL_TOOL_NAMES : []),
      ...(layer.webSearch ? ['web_search'] : []),
      ...(layer.subagents ? ['spawn_subagent'] : []),
    ]);
    const autoTools = uniq(layer.autoApprovedTools ?? HARD_DEFAULTS.autoApprovedTools);
    autoTools.forEach((t, i) => {
      if (!tools.includes(t)) {
        problems.push({
          path: `${where('autoApprovedTools')}.autoApprovedTools[${i}]`,
          message: `${JSON.stringify(t)} is not in ${where('tools')}.tools; add it to the toolset first (an auto-approved tool the agent lacks does nothing)`,
        });
      }
    });
    const approvers = {} as AgentConfig['approvers'];
    for (const p of PLATFORMS) approvers[p] = uniq(layer.approvers?.[p] ?? []);
    if (layer.approvers?.cli) approvers.cli = uniq(layer.approvers.cli);
    const workspace = resolve(baseDir, layer.workspace ?? 'workspace');
    const exposed = botFilesInside(workspace, { configFile, envFile: dot.file, store: settings.store });
    if (exposed !== undefined) {
      problems.push({
        path: `agents.${name}.workspace`,
        message:
          `${workspace} contains ${exposed}; the agent's commands and file tools could read or change it. ` +
          'Use a directory of its own, e.g. ./workspace next to the config file',
      });
    }
    const sandboxReadPaths = uniq((layer.sandboxReadPaths ?? []).map((p) => resolve(baseDir, p)));
    sandboxReadPaths.forEach((p, i) => {
      const inside = botFilesInside(p, { configFile, envFile: dot.file, store: settings.store });
      const at = `${where('sandboxReadPaths')}.sandboxReadPaths[${i}]`;
      if (inside !== undefined && !problems.some((q) => q.path === at)) {
        problems.push({
          path: at,
          message: `${p} contains ${inside}; the agent's commands could read the bot's files next to it (backups, logs). Name a directory that holds none of them`,
        });
      }
    });
    for (const [at, l] of [
      [`agents.${name}`, own],
      ['defaults', defaults],
    ] as const) {
      const count = l.retention?.maxConversations;
      if (l.maxConversations !== undefined && count !== undefined && count !== l.maxConversations) {
        problems.push({
          path: `${at}.maxConversations`,
          message: `${l.maxConversations} disagrees with ${at}.retention.maxConversations (${count}); maxConversations is the old name of that key: keep only retention.maxConversations`,
        });
      }
    }
    const sandboxLimits: SandboxLimits = {
      processes: own.sandboxLimits?.processes ?? defaults.sandboxLimits?.processes ?? DEFAULT_SANDBOX_LIMITS.processes,
      openFiles: own.sandboxLimits?.openFiles ?? defaults.sandboxLimits?.openFiles ?? DEFAULT_SANDBOX_LIMITS.openFiles,
      memoryBytes: own.sandboxLimits?.memory ?? defaults.sandboxLimits?.memory ?? DEFAULT_SANDBOX_LIMITS.memoryBytes,
      cpuSeconds: own.sandboxLimits?.cpuSeconds ?? defaults.sandboxLimits?.cpuSeconds ?? DEFAULT_SANDBOX_LIMITS.cpuSeconds,
      tmpBytes: own.sandboxLimits?.tmpSize ?? defaults.sandboxLimits?.tmpSize ?? DEFAULT_SANDBOX_LIMITS.tmpBytes,
    };
    const policyProblems: ConfigProblem[] = [];
    const mcpServers = resolveMcpServers(layer.mcpServers, {
      env: opts.env,
      baseDir,
      path: `${where('mcpServers')}.mcpServers`,
      problems: policyProblems,
      botFileIn: (p) => botFilesInside(p, { configFile, envFile: dot.file, store: settings.store }),
    });
    policyProblems.push(
      ...toolPolicyProblems(layer.toolPolicy, {
        path: `${where('toolPolicy')}.toolPolicy`,
        knownTools: [...opts.knownTools, ...Object.keys(layer.commandTools ?? {}), ...(layer.webSearch ? ['web_search'] : [])],
        mcpServers: Object.keys(mcpServers),
      }),
    );
    policyProblems.push(...subagentToolProblems(layer.subagents, { path: `${where('subagents')}.subagents`, tools, mcpServers: Object.keys(mcpServers) }));
    // Set in defaults, the same problem would otherwise be listed once per agent.
    for (const p of policyProblems) if (!problems.some((q) => q.path === p.path && q.message === p.message)) problems.push(p);
    agents[name] = {
      name,
      model: layer.model ?? DEFAULT_MODEL,
      classifierModel: layer.classifierModel ?? HARD_DEFAULTS.classifierModel,
      system: layer.system !== undefined && layer.system.trim() !== '' ? layer.system : HARD_DEFAULTS.system,
      tools,
      tier: layer.tier ?? HARD_DEFAULTS.tier,
      approvers,
      autoApprovedTools: autoTools,
      autoApprovedCommands: uniq(layer.autoApprovedCommands ?? []),
      envAllowlist: uniq(layer.envAllowlist ?? []),
      workspace,
      workspaceMaxBytes: layer.workspaceMaxBytes ?? HARD_DEFAULTS.workspaceMaxBytes,
      maxIterations: layer.maxIterations ?? HARD_DEFAULTS.maxIterations,
      runTimeoutMs: layer.runTimeoutMs ?? HARD_DEFAULTS.runTimeoutMs,
      // Key by key, the agent's over the defaults'; the old top-level maxConversations is the count.
      retention: {
        maxConversations:
          own.retention?.maxConversations ??
          own.maxConversations ??
          defaults.retention?.maxConversations ??
          defaults.maxConversations ??
          HARD_DEFAULTS.retention.maxConversations,
        maxIdleDays: own.retention?.maxIdleDays ?? defaults.retention?.maxIdleDays ?? HARD_DEFAULTS.retention.maxIdleDays,
      },
      approvalTimeoutMs: layer.approvalTimeoutMs ?? HARD_DEFAULTS.approvalTimeoutMs,
      questionTimeoutMs: layer.questionTimeoutMs ?? HARD_DEFAULTS.questionTimeoutMs,
      commandTimeoutMs: layer.commandTimeoutMs ?? HARD_DEFAULTS.commandTimeoutMs,
      maxTokens,
      ...(layer.thinking ? { thinking: { budgetTokens: layer.thinking.budgetTokens } } : {}),
      sandbox: layer.sandbox ?? HARD_DEFAULTS.sandbox,
      ...sandboxNetworkFields(layer.sandboxNetwork ?? HARD_DEFAULTS.sandboxNetwork),
      sandboxLimits,
      sandboxReadPaths,
      ...(layer.companions ? { companions: layer.companions } : {}),
      ...(layer.budget ? { budget: budgetLimitsOf(layer.budget) } : {}),
      ...(layer.requesterMayApprove !== undefined ? { requesterMayApprove: layer.requesterMayApprove } : {}),
      ...(layer.approvalDelivery !== undefined ? { approvalDelivery: layer.approvalDelivery } : {}),
      ...(layer.contextWindowTokens !== undefined ? { contextWindowTokens: layer.contextWindowTokens } : {}),
      network: { allow: [...(layer.network?.allow ?? [])] },
      ...(layer.threadFollowUps !== undefined ? { threadFollowUps: layer.threadFollowUps } : {}),
      toolPolicy: { ...(layer.toolPolicy ?? {}) },
      commandRules: (layer.commandRules ?? []).map((r) => ({ match: r.match, policy: r.policy, ...(r.reason !== undefined ? { reason: r.reason } : {}) })),
      mcpServers,
      // Merged key by key: an agent that sets only maxEntries keeps defaults.memory.agentScopeWrites.
      memory: resolveMemoryConfig(defaults.memory || own.memory ? { ...defaults.memory, ...own.memory } : undefined),
      reminders: resolveRemindersConfig(layer.reminders),
      ...(layer.commandTools ? { commandTools: layer.commandTools } : {}),
      ...withWebSearch(resolveWebSearch(layer.webSearch, { env: opts.env, path: `${where('webSearch')}.webSearch`, problems })),
      ...(layer.skills ? { skills: uniq(layer.skills.map((p) => resolve(baseDir, p))) } : {}),
      ...(layer.subagents ? { subagents: layer.subagents } : {}),
      discordReplyInThread: layer.discordReplyInThread ?? true,
    };
    problems.push(...approvalDeliveryProblems(name, agents[name]!));
  }

  const names = Object.keys(agents);
  const routes: Route[] = (file.routes ?? []).map((r) => ({
    match: r.match,
    agent: r.agent,
    ...(r.threadFollowUps !== undefined ? { threadFollowUps: r.threadFollowUps } : {}),
  }));
  routes.forEach((r, i) => {
    if (r.agent !== '' && !Object.hasOwn(agents, r.agent)) {
      problems.push({
        path: `routes[${i}].agent`,
        message: `unknown agent ${JSON.stringify(r.agent)}${didYouMean(r.agent, names)}; defined agents: ${names.join(', ')}`,
      });
    }
  });

  let defaultAgent: string;
  if (file.defaultAgent !== undefined) {
    defaultAgent = file.defaultAgent;
    if (!Object.hasOwn(agents, defaultAgent)) {
      problems.push({
        path: 'defaultAgent',
        message: `unknown agent ${JSON.stringify(defaultAgent)}${didYouMean(defaultAgent, names)}; defined agents: ${names.join(', ')}`,
      });
    }
  } else if (Object.hasOwn(agents, 'default')) defaultAgent = 'default';
  else if (names.length === 1) defaultAgent = names[0]!;
  else {
    defaultAgent = names[0] ?? 'default';
    problems.push({
      path: 'defaultAgent',
      message: `required when there are several agents and none is named "default"; set it to one of: ${names.join(', ')}`,
    });
  }

  if (problems.length > 0) throw new ConfigError(problems, configFile);

  const a = file.access ?? {};
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
    access: {
      telegram: { users: uniq(a.telegram?.users ?? []), chats: uniq(a.telegram?.chats ?? []) },
      slack: { users: uniq(a.slack?.users ?? []), channels: uniq(a.slack?.channels ?? []) },
      discord: {
        users: uniq(a.discord?.users ?? []),
        channels: uniq(a.discord?.channels ?? []),
        guilds: uniq(a.discord?.guilds ?? []),
      },
      rateLimit: a.rateLimit ?? { messages: 20, perSeconds: 60 },
      refusals: {
        repliesPerMinute: a.refusals?.repliesPerMinute ?? DEFAULT_REFUSAL_LIMITS.repliesPerMinute,
        strangerIntervalSeconds: a.refusals?.strangerIntervalSeconds ?? DEFAULT_REFUSAL_LIMITS.strangerIntervalSeconds,
      },
    },
    runner: resolveRunnerConfig(file.runner),
    logLevel: settings.logLevel,
    ...(settings.leaderRetryMs !== undefined ? { leaderRetryMs: settings.leaderRetryMs } : {}),
  };
}

/** `p` with symlinks resolved as far as it exists (a workspace may not exist yet). */
function physical(p: string): string {
  const tail: string[] = [];
  let cur = p;
  for (;;) {
    try {
      return join(realpathSync(cur), ...tail);
    } catch {
      const parent = dirname(cur);
      if (parent === cur) return p;
      tail.unshift(basename(cur));
      cur = parent;
    }
  }
}

function isWithin(dir: string, p: string): boolean {
  const rel = relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** The first of the bot's own files (config, .env, store) that `workspace` contains, described; or undefined. */
function botFilesInside(workspace: string, own: { configFile: string | undefined; envFile: string | undefined; store: StoreSettings }): string | undefined {
  const ws = physical(workspace);
  const files: Array<[string, string | undefined]> = [
    ['the config file', own.configFile],
    ['the .env file', own.envFile],
    ['the store', own.store.kind === 'sqlite' && own.store.path !== ':memory:' ? own.store.path : undefined],
  ];
  for (const [what, file] of files) {
    if (file !== undefined && isWithin(ws, physical(file))) return `${what} (${file})`;
  }
  return undefined;
}

/**
 * After a schema failure, a best-effort view with just what cross-reference checks need (agent names,
 * route agents, defaultAgent), so those problems are reported in the same run. Values it cannot
 * trust are left out; nothing here is used for a Config (loadConfig throws anyway).
 */
function lenientCrossRefView(data: unknown): FileConfig {
  const out: FileConfig = {};
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

/**
 * The agent that serves a conversation: the first route whose `match` equals the key or is a prefix
 * of it ending at a ':' boundary (`telegram:-100` matches `telegram:-100` and `telegram:-100:7`, not
 * `telegram:-1001`); a bare platform name matches every key of that platform. No match: defaultAgent.
 * Returns the live AgentConfig. Throws if the chosen agent was removed from `config.agents`.
 */
export function agentForConversation(config: Config, key: string): AgentConfig {
  let name = config.defaultAgent;
  for (const r of config.routes) {
    if (key === r.match || key.startsWith(`${r.match}:`)) {
      name = r.agent;
      break;
    }
  }
  const agent = Object.hasOwn(config.agents, name) ? config.agents[name] : undefined;
  if (!agent) throw new Error(`No agent named "${name}" for conversation ${key}; check routes and defaultAgent in the configuration`);
  return agent;
}

function withWebSearch(w: WebSearchConfig | undefined): { webSearch?: WebSearchConfig } {
  return w ? { webSearch: w } : {};
}
