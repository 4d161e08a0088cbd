/**
 * The `gatehouse run` protocol, shared by the CLI (./command.ts), the attach endpoint (./attach.ts) and
 * the in-process runs (./runs.ts). Kept free of heavy imports: an attached run loads only this, the
 * socket client and zod, never the agent.
 */
import { z } from 'zod';
import type { AgentEvent } from '../../agent/events.js';
import { TIERS } from '../../policies/tiers.js';

export const CLI_PREFIX = 'cli:';
export const CONVERSATION_KEY = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;
/** The caller, as approver and question answerer of its own runs. */
export const HEADLESS_USER = { id: 'cli', name: 'gatehouse run' } as const;

export class HeadlessUsageError extends Error {
  override name = 'HeadlessUsageError';
}

export const HeadlessRequest = z.object({
  agent: z.string().min(1).optional(),
  conversation: z.string().optional(),
  message: z.string(),
  approvalPolicy: z.enum(TIERS).optional(),
  timeoutSeconds: z.number().positive().optional(),
  interactive: z.boolean().default(false),
});
export type HeadlessRequest = z.input<typeof HeadlessRequest>;

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

/** An answer from the caller: a choice's value, or typed text (questions that allow it). */
export const HeadlessResponse = z.discriminatedUnion('type', [
  z.object({ type: z.literal('user_input_response'), requestId: z.string().min(1), value: z.string().nullable().optional(), answer: z.string().nullable().optional() }),
  z.object({ type: z.literal('approval_response'), requestId: z.string().min(1), value: z.string().nullable().optional(), approved: z.boolean().optional() }),
]);
export type HeadlessResponse = z.infer<typeof HeadlessResponse>;

