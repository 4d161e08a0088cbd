/**
 * The agent's public output types: the events a run emits, and the platform-neutral Card.
 * Adapters import this file (and adapters/types.ts) and nothing else of agent/.
 *
 * Contract:
 * - Events of one conversation are delivered in order, one at a time: `render` for a conversation is
 *   not called again until the previous call settled (bot/service/app.ts serializes delivery).
 * - `text` events (only for adapters with `streamsText`) are the model's text as it streams, in
 *   segments: one segment per model reply, numbered from 1 within the run. A segment that is
 *   followed by tool calls (the model's "let me check…") is complete when the first `tool_started`
 *   or `approval_asked` of that reply arrives; the next reply's text starts a new segment.
 * - `answer.text` is exactly the text of the final model reply (the last segment), whole; it does
 *   NOT repeat earlier segments. An adapter that streams shows the segments and may finish the last
 *   one from `answer`; one that does not stream shows only `answer`.
 * - `thinking` events reach only outputs with `streamsThinking` (headless, ACP): a chat never shows
 *   the model's reasoning. Their segments are numbered like `text`'s.
 * - Exactly one of `answer` or `error` ends a run, followed by `run_finished`.
 * - A Card carries only opaque tokens on its buttons; what a token means lives server-side.
 */
import type { Tier } from '../policies/tiers.js';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** USD for this usage; 0 when costKnown is false (never read that as "free"). */
  costUSD: number;
  /** False when a model in this run has no price in the table. */
  costKnown: boolean;
}

export type AgentEvent =
  | { type: 'run_started'; runId: string }
  | { type: 'text'; runId: string; delta: string /** 1 for the run's first model reply, +1 per reply. */; segment: number }
  /** The model's extended thinking as it streams (agents with `thinking`; only outputs with `streamsThinking`). */
  | { type: 'thinking'; runId: string; delta: string; segment: number }
  | { type: 'tool_started'; runId: string; callId: string; tool: string; summary: string }
  | { type: 'tool_finished'; runId: string; callId: string; tool: string; ok: boolean; summary: string }
  /** The gate refused the call (denylist, policy, or above the tier with nobody to approve): it never ran. */
  | { type: 'tool_declined'; runId: string; callId: string; tool: string; reason: string }
  | { type: 'approval_asked'; runId: string; callId: string; tool: string; summary: string }
  | {
      type: 'approval_resolved';
      runId: string;
      callId: string;
      tool: string;
      outcome: 'approved' | 'always' | 'denied' | 'expired' | 'declined';
      by?: string;
    }
  | { type: 'question_asked'; runId: string; callId: string; question: string }
  | { type: 'question_answered'; runId: string; callId: string; answer: string | null; by?: string }
  | { type: 'answer'; runId: string; text: string }
  | { type: 'error'; runId: string; message: string; limit?: RunLimit }
  /** `usage` includes the sub-agents'; `subagents` shows their part apart (absent when none was started). */
  | { type: 'usage'; runId: string; usage: Usage; classifierUsage?: Usage; subagents?: { count: number; usage: Usage } }
  | { type: 'run_finished'; runId: string; reason: 'completed' | 'stopped' | 'failed' | 'timeout' | 'max_iterations' };

/** Which spending limit ended a run (agent/budget/gate.ts limitOf), for callers that read it as data. */
export interface RunLimit {
  kind: 'budget';
  scope: 'conversation' | 'user_day' | 'agent_day' | 'agent_month';
  unit: 'usd' | 'tokens';
  /** USD spent (used + held by calls in flight), with a USD limit. */
  spentUsd?: number;
  /** Tokens spent, with a token limit. */
  spentTokens?: number;
  /** In the unit's terms: US dollars or tokens. */
  limit: number;
  /** ISO 8601; null: never resets (a conversation). */
  resetsAt: string | null;
  /** A soft limit, not raised because the approval was denied, expired, or nobody could approve. */
  soft?: true;
  approval?: 'denied' | 'expired' | 'no_approver';
}

export type ButtonStyle = 'primary' | 'danger' | 'default';

export interface CardButton {
  /** Opaque, unguessable, single-use; at most 40 characters ([A-Za-z0-9_-]). */
  token: string;
  /** Short label (adapters may cut it to the platform's limit; the card body never is). */
  label: string;
  style: ButtonStyle;
}

export interface Card {
  kind: 'approval' | 'question' | 'picker' | 'approve_all';
  title: string;
  body: string;
  /** A diff or a command, shown as preformatted text. */
  preview?: string;
  buttons: CardButton[];
  /** Set once decided: buttons are then empty and this line records what happened, who and when. */
  outcome?: string;
  /** Informational: the tier the call was rated at, for the card's body. */
  tier?: Tier;
}
