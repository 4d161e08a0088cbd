/**
 * The zod-free half of the `gatehouse run` protocol (./protocol.ts re-exports it): what an attached
 * run's client needs, so it loads neither zod nor the agent.
 */
import type { AgentEvent, RunLimit } from '../../agent/events.js';

export const CLI_PREFIX = 'cli:';
export const CONVERSATION_KEY = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;
/** The caller, as approver and question answerer of its own runs. */
export const HEADLESS_USER = { id: 'cli', name: 'gatehouse run' } as const;

export class HeadlessUsageError extends Error {
  override name = 'HeadlessUsageError';
}

export interface HeadlessResult {
  ok: boolean;
  answer?: string;
  error?: string;
  costUSD: number;
  costKnown: boolean;
  usage: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number };
  /** The KEY given with --conversation (null without one). */
  conversation: string | null;
  /**
   * Tool calls that did not run because of the gate or an approver, in order: the gate's reason
   * (which names what would allow it), or who denied it, or that the approval expired.
   */
  declined: Declined[];
  /** With ok false: the spending limit that ended the run (absent for any other failure). */
  limit?: RunLimit;
  /** The sub-agents the run started (spawn_subagent) and their part of `usage` and `costUSD`; absent when none. */
  subagents?: { count: number; costUSD: number; usage: HeadlessResult['usage'] };
}

export interface Declined {
  tool: string;
  reason: string;
}

/** What the service says about itself before a run's events: the config file it runs on, as loaded. */
export interface ServiceInfo {
  type: 'service';
  /** Absolute path of the gatehouse.yaml loaded (null: built-in defaults). */
  configFile: string | null;
  /** SHA-256 (hex) of that file's bytes as loaded or last reloaded (null without a file). */
  configSha256: string | null;
}

export interface Choice {
  value: string;
  label: string;
  description?: string;
}

/** What a headless caller receives: the run's events plus the two requests it may answer. */
export type HeadlessMessage =
  | AgentEvent
  | { type: 'user_input_required'; requestId: string; question: string; suggestions: Choice[]; allowCustom: boolean }
  | { type: 'approval_required'; requestId: string; title: string; body: string; preview?: string; choices: Choice[] }
  | { type: 'request_closed'; requestId: string; outcome: string };
