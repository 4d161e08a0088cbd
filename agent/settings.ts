/**
 * What the runner needs to know about an agent, read live (config can change, "Always approve" adds
 * to allowlists): the runner calls `AgentDirectory.get(name)` at every decision, never caches it.
 * bot/config.ts's resolved AgentConfig satisfies this shape.
 */
import type { Tier } from '../policies/tiers.js';

export interface AgentSettings {
  name: string;
  model: string;
  classifierModel: string;
  system: string;
  tools: readonly string[];
  tier: Tier;
  approvers: Readonly<Record<string, readonly string[] | undefined>>;
  autoApprovedTools: readonly string[];
  autoApprovedCommands: readonly string[];
  envAllowlist: readonly string[];
  /** Absolute path. */
  workspace: string;
  maxIterations: number;
  runTimeoutMs: number;
  maxConversations: number;
  approvalTimeoutMs: number;
  questionTimeoutMs: number;
  maxTokens: number;
}

export interface AgentDirectory {
  get(name: string): AgentSettings | undefined;
}
