/**
 * Agent layering: gatehouse.yaml's `defaults:` and `agents:` (parsed by bot/config/schema.ts) into
 * resolved AgentConfigs, every default filled in (bot/config/index.ts calls it from loadConfig).
 *
 * Contract:
 * - Layering per agent: built-in defaults < `defaults:` < the agent's own keys. A key set on the agent
 *   replaces the default's value as a whole (lists and `approvers` are not merged), except
 *   `sandboxLimits`, `retention` and `memory`, merged key by key. An empty `system` means the default.
 * - No agent defined: one agent `default` (DEFAULT_TOOLS filtered by the tools that exist, tier
 *   read-only, `local` as console approver), still layered over `defaults:`.
 * - Problems go into `problems` with the key path they come from: `agents.<name>.<key>` when the agent
 *   sets the key, `defaults.<key>` when it inherits it; one found in `defaults` is listed once, not
 *   once per agent. Workspaces and read paths are resolved against `baseDir` and refused when they
 *   hold the bot's own files (bot/config/paths.ts).
 * - The result is plain and mutable (the lead appends to allowlists on "Always approve").
 */
import { budgetLimitsOf } from './budget.js';
import { resolveWebSearch } from './tools.js';
import type { WebSearchConfig } from '../../agent/tools/builtin/web/search.js';
import { SKILL_TOOL_NAMES } from '../../agent/tools/builtin/skills/tools.js';
import { subagentToolProblems } from '../../agent/tools/builtin/subagent/config.js';
import { resolve } from 'node:path';
import { PLATFORMS, type Platform } from '../../adapters/types.js';
import type { AgentSettings } from '../../agent/settings.js';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from '../../agent/tools/sandbox/index.js';
import type { NetworkConfig } from '../../agent/tools/builtin/web/config.js';
import type { CommandRule, ToolPolicy } from '../../policies/tool-policy.js';
import { resolveMcpServers } from '../../agent/mcp/config.js';
import { toolPolicyProblems } from './policy.js';
import { resolveMemoryConfig, resolveRemindersConfig } from './memory-reminders.js';
import { uniq, type AgentDefaults, type FileConfig, type RawAgent } from './schema.js';
import type { ConfigProblem, Env } from './problems.js';
import { sandboxNetworkFields } from '../../agent/egress/config.js';
import { approvalDeliveryProblems } from './approval-delivery.js';
import { botFilesInside, type BotFiles } from './paths.js';

/** Compile-time check: the runner reads an AgentConfig as agent/settings.ts's AgentSettings. */
type ReadAsSettings<T extends AgentSettings> = T;

/**
 * A resolved agent: every default filled in. Its type is what resolveAgent builds (the fields are
 * documented there and in AgentSettings), so no declaration can drift from the resolution.
 */
export type AgentConfig = ReadAsSettings<ReturnType<typeof resolveAgent>>;

export const DEFAULT_MODEL = 'claude-sonnet-5-5';
const DEFAULT_SYSTEM_PROMPT =
  'You are Gatehouse, an assistant with tools, talking with people in a chat. ' +
  'Be concise. Use your tools to check facts before answering; if a tool call is declined, ' +
  'explain what you could not do instead of retrying it.';
/**
 * The no-config agent's toolset (filtered by the tools that exist). Its tier stays read-only, so the
 * two writing tools (low-risk, confined to the workspace by the file tools' own path checks) each ask
 * the terminal user with a card: a first run reaches an approval. No execute_command (a shell reaches
 * more than the workspace's files and needs bubblewrap installed), no delete/move (high-risk).
 */
const DEFAULT_TOOLS = ['read_file', 'ls', 'find', 'grep', 'write_file', 'edit_file', 'get_time', 'list_todos', 'ask_user_question'] as const;

/** The built-ins the schema cannot hold (bot/config/schema.ts's `defaults:` holds the rest): see resolveAgent. */
const HARD_DEFAULTS = {
  system: DEFAULT_SYSTEM_PROMPT,
  tools: [] as string[],
  retention: { maxConversations: 10_000, maxIdleDays: 365 },
};

export interface ResolveAgentsContext {
  env: Env;
  /** The config file's directory (cwd without one): relative paths are resolved against it. */
  baseDir: string;
  knownTools: readonly string[];
  /** The bot's own files, which no workspace or read path may contain. */
  botFiles: BotFiles;
}

/** An agent's keys over defaults': every key with a built-in value is set. */
type AgentLayer = AgentDefaults & RawAgent;

/** Every agent of the file, layered and resolved; problems are appended to `problems`. */
export function resolveAgents(
  file: Pick<FileConfig, 'defaults' | 'agents'>,
  ctx: ResolveAgentsContext,
  problems: ConfigProblem[],
): Record<string, AgentConfig> {
  const agents: Record<string, AgentConfig> = {};
  const defaults = file.defaults;
  const defined: Record<string, RawAgent> = file.agents ?? {};
  const usingBuiltin = Object.keys(defined).length === 0;
  const base: Record<string, RawAgent> = usingBuiltin ? { default: {} } : defined;
  const builtinDefault: RawAgent = {
    model: DEFAULT_MODEL,
    tools: DEFAULT_TOOLS.filter((t) => ctx.knownTools.includes(t)),
    approvers: { console: ['local'] },
  };
  for (const [name, own] of Object.entries(base)) {
    const layer: AgentLayer = usingBuiltin ? { ...builtinDefault, ...defaults, ...own } : { ...defaults, ...own };
    const agent = resolveAgent(name, { own, defaults, layer }, ctx, problems);
    agents[name] = agent;
    problems.push(...approvalDeliveryProblems(name, agent));
  }
  return agents;
}

/**
 * One agent from its layers (`layer`: built-ins, defaults and its own keys merged; `own` and
 * `defaults` for the keys merged key by key and for problem paths). Its return type IS AgentConfig.
 */
function resolveAgent(
  name: string,
  { own, defaults, layer }: { own: RawAgent; defaults: AgentDefaults; layer: AgentLayer },
  ctx: ResolveAgentsContext,
  problems: ConfigProblem[],
) {
  const baseDir = ctx.baseDir;
  const where = (key: keyof RawAgent): string => (own[key] !== undefined ? `agents.${name}` : 'defaults');
  if (layer.model === undefined) {
    problems.push({ path: `agents.${name}.model`, message: 'required (set it here or in defaults.model), e.g. claude-sonnet-5-5' });
  }
  // The API counts thinking inside max_tokens and refuses a budget that is not below it.
  const maxTokens = layer.maxTokens;
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
  const autoTools = uniq(layer.autoApprovedTools);
  autoTools.forEach((t, i) => {
    if (!tools.includes(t)) {
      problems.push({
        path: `${where('autoApprovedTools')}.autoApprovedTools[${i}]`,
        message: `${JSON.stringify(t)} is not in ${where('tools')}.tools; add it to the toolset first (an auto-approved tool the agent lacks does nothing)`,
      });
    }
  });
  const approvers = {} as Record<Platform, string[]> & { cli?: string[] };
  for (const p of PLATFORMS) approvers[p] = uniq(layer.approvers?.[p] ?? []);
  if (layer.approvers?.cli) approvers.cli = uniq(layer.approvers.cli);
  const workspace = resolve(baseDir, layer.workspace ?? 'workspace');
  const exposed = botFilesInside(workspace, ctx.botFiles);
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
    const inside = botFilesInside(p, ctx.botFiles);
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
    env: ctx.env,
    baseDir,
    path: `${where('mcpServers')}.mcpServers`,
    problems: policyProblems,
    botFileIn: (p) => botFilesInside(p, ctx.botFiles),
  });
  policyProblems.push(
    ...toolPolicyProblems(layer.toolPolicy, {
      path: `${where('toolPolicy')}.toolPolicy`,
      knownTools: [...ctx.knownTools, ...Object.keys(layer.commandTools ?? {}), ...(layer.webSearch ? ['web_search'] : [])],
      mcpServers: Object.keys(mcpServers),
    }),
  );
  policyProblems.push(...subagentToolProblems(layer.subagents, { path: `${where('subagents')}.subagents`, tools, mcpServers: Object.keys(mcpServers) }));
  // Set in defaults, the same problem would otherwise be listed once per agent.
  for (const p of policyProblems) if (!problems.some((q) => q.path === p.path && q.message === p.message)) problems.push(p);
  const network: NetworkConfig = { allow: [...(layer.network?.allow ?? [])] };
  const toolPolicy: ToolPolicy = { ...(layer.toolPolicy ?? {}) };
  const commandRules: CommandRule[] = (layer.commandRules ?? []).map((r) => ({
    match: r.match,
    policy: r.policy,
    ...(r.reason !== undefined ? { reason: r.reason } : {}),
  }));
  // The fields' docs live here: AgentConfig is this object's type.
  return {
    name,
    model: layer.model ?? DEFAULT_MODEL,
    classifierModel: layer.classifierModel,
    system: layer.system !== undefined && layer.system.trim() !== '' ? layer.system : HARD_DEFAULTS.system,
    /** Mutable, like every list here: the operator's config object is changed in place. */
    tools,
    tier: layer.tier,
    /** Per platform (every one, maybe empty), plus `cli`: the host operator (`local`) at `gatehouse approvals decide`. */
    approvers,
    autoApprovedTools: autoTools,
    autoApprovedCommands: uniq(layer.autoApprovedCommands),
    envAllowlist: uniq(layer.envAllowlist),
    workspace,
    /** The workspace size limit in bytes; 0: none. */
    workspaceMaxBytes: layer.workspaceMaxBytes,
    maxIterations: layer.maxIterations,
    runTimeoutMs: layer.runTimeoutMs,
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
    approvalTimeoutMs: layer.approvalTimeoutMs,
    questionTimeoutMs: layer.questionTimeoutMs,
    /** execute_command's default and longest timeout for this agent. */
    commandTimeoutMs: layer.commandTimeoutMs,
    maxTokens,
    ...(layer.thinking ? { thinking: { budgetTokens: layer.thinking.budgetTokens } } : {}),
    sandbox: layer.sandbox,
    /** `sandboxNetwork`, and `sandboxEgress` (the egress proxy's allowlist, agent/egress/) when it is `{ allow }`. */
    ...sandboxNetworkFields(layer.sandboxNetwork),
    /** The box's limits, every one filled (per key, the agent's < defaults' < built-in). */
    sandboxLimits,
    /** Host paths the box may read (absolute; relative ones resolved against the config file's directory). */
    sandboxReadPaths,
    ...(layer.companions ? { companions: layer.companions } : {}),
    ...(layer.budget ? { budget: budgetLimitsOf(layer.budget) } : {}),
    /** Unset: the default rule (agent/approvals/requester.ts). */
    ...(layer.requesterMayApprove !== undefined ? { requesterMayApprove: layer.requesterMayApprove } : {}),
    /** Unset: `here` (bot/config/approval-delivery.ts). */
    ...(layer.approvalDelivery !== undefined ? { approvalDelivery: layer.approvalDelivery } : {}),
    ...(layer.contextWindowTokens !== undefined ? { contextWindowTokens: layer.contextWindowTokens } : {}),
    /** web_fetch / http_request exceptions (`network.allow`); agent/tools/builtin/web/config.ts. */
    network,
    /** bot/config/thread-follow-ups.ts; unset: true. */
    ...(layer.threadFollowUps !== undefined ? { threadFollowUps: layer.threadFollowUps } : {}),
    toolPolicy,
    commandRules,
    /** MCP servers by name (agent/mcp/config.ts), references to environment variables filled in. */
    mcpServers,
    // Merged key by key: an agent that sets only maxEntries keeps defaults.memory.agentScopeWrites.
    memory: resolveMemoryConfig(defaults.memory || own.memory ? { ...defaults.memory, ...own.memory } : undefined),
    reminders: resolveRemindersConfig(layer.reminders),
    /** Custom command tools (bot/config/tools.ts), by tool name. */
    ...(layer.commandTools ? { commandTools: layer.commandTools } : {}),
    /** The web_search provider (bot/config/tools.ts); unset: web_search is not offered. */
    ...withWebSearch(resolveWebSearch(layer.webSearch, { env: ctx.env, path: `${where('webSearch')}.webSearch`, problems })),
    /** Skill folders (absolute); set: find_skills, load_skill, load_skill_section are offered. */
    ...(layer.skills ? { skills: uniq(layer.skills.map((p) => resolve(baseDir, p))) } : {}),
    ...(layer.subagents ? { subagents: layer.subagents } : {}),
    /** Discord: answer a channel mention in a new thread from that message (default) or in place. */
    discordReplyInThread: layer.discordReplyInThread,
  };
}

function withWebSearch(w: WebSearchConfig | undefined): { webSearch?: WebSearchConfig } {
  return w ? { webSearch: w } : {};
}
