/**
 * What the runner needs to know about an agent, read live (config can change, "Always approve" adds
 * to allowlists): the runner calls `AgentDirectory.get(name)` at every decision, never caches it.
 * bot/config/agents.ts's resolved AgentConfig satisfies this shape (checked there, at compile time).
 */
import type { BudgetLimits } from './budget/limits.js';
import type { Tier } from '../policies/tiers.js';
import type { CommandRule, ToolPolicy } from '../policies/tool-policy.js';
import type { MemorySettings } from './memory/memory.js';
import type { ReminderSettings } from './memory/reminders.js';
import type { SandboxMode } from './tools/sandbox/index.js';
import type { Companions } from './model/companions.js';
import type { SubagentsConfig } from './tools/builtin/subagent/config.js';

export interface AgentSettings {
  name: string;
  model: string;
  classifierModel: string;
  /** The system prompt. */
  system: string;
  /** The toolset: a tool not listed does not exist for this agent. */
  tools: readonly string[];
  /** The highest tier that runs without asking. */
  tier: Tier;
  /** Approver ids per platform (`role:<id>` entries on Discord). */
  approvers: Readonly<Record<string, readonly string[] | undefined>>;
  autoApprovedTools: readonly string[];
  autoApprovedCommands: readonly string[];
  envAllowlist: readonly string[];
  /** Absolute path every file tool and command is confined to. */
  workspace: string;
  /** The workspace's size limit in bytes (agent/tools/workspace-quota.ts); 0 or absent: none. */
  workspaceMaxBytes?: number;
  maxIterations: number;
  runTimeoutMs: number;
  /**
   * Conversations kept (agent/context/conversation-store.ts): the newest `maxConversations`, none idle more
   * than `maxIdleDays` (0: no age limit).
   */
  retention: { maxConversations: number; maxIdleDays: number };
  approvalTimeoutMs: number;
  questionTimeoutMs: number;
  maxTokens: number;
  /** Extended thinking with this budget on every model call of a run; absent: off. */
  thinking?: { budgetTokens: number };
  /** Spending limits (agent/budget/limits.ts); absent: none. */
  budget?: BudgetLimits;
  /** Where execute_command runs: `bubblewrap` (default) or `none` (on the host, an explicit opt-out). */
  sandbox?: SandboxMode;
  /** Network inside the sandbox; default false. */
  sandboxNetwork?: boolean;
  /** Models analyze_media may hand media to, per kind (agent/model/companions.ts). */
  companions?: Companions;
  /** The model's context window in tokens, when the built-in table (agent/context/fit.ts) does not know it. */
  contextWindowTokens?: number;
  /** Per tool or glob: allow | ask | deny (policies/tool-policy.ts). */
  toolPolicy?: ToolPolicy;
  /** Per simple command: deny | ask | allow, with a reason. */
  commandRules?: readonly CommandRule[];
  /** Memory scopes and caps (agent/memory/memory.ts); defaults when absent. */
  memory?: MemorySettings;
  /** Reminder delivery and caps (agent/memory/reminders.ts); defaults when absent. */
  reminders?: ReminderSettings;
  /** spawn_subagent's limits (agent/tools/builtin/subagent/config.ts); defaults when absent. */
  subagents?: SubagentsConfig;
}

export interface AgentDirectory {
  get(name: string): AgentSettings | undefined;
}
