/**
 * What the runner queues and what it records about a run in progress, with the schemas that read
 * them back from the store (a store left by another version is outside data).
 */
import type { EventClaim } from '../store/types.js';
import { z } from 'zod';
import type { Tier } from '../../policies/tiers.js';
import type { ContentBlock } from '../context/messages.js';
import { CallState } from '../tools/executor.js';

export interface Turn {
  agentName: string;
  conversationKey: string;
  platform: string;
  sender: { id: string; name?: string };
  text: string;
  /** Extra content (images, text documents) sent along with the text. */
  attachments?: ContentBlock[];
  /** False where nobody can answer a question (ask_user_question is then not offered). */
  humanAvailable?: boolean;
  /** Chosen by the caller so it can tell this turn's events apart (default: a new id). */
  runId?: string;
  /** Per-turn policy (headless runs): replaces the agent's tier / approvers / run timeout for this turn. */
  overrides?: TurnOverrides;
}

interface TurnOverrides {
  tier?: Tier;
  approvers?: Record<string, string[]>;
  runTimeoutMs?: number;
  /** What would let a declined call run, said in the decline (see policies/gate.ts noApproverFix). */
  noApproverFix?: string;
}

/** A turn accepted by the queue, under the id its stored row has. */
export interface QueuedTurn {
  id: string;
  turn: Turn;
  /** The platform event it comes from, claimed with the turn in one transaction (see EventClaim). */
  claim?: EventClaim;
}

const TurnOverridesSchema = z
  .object({
    tier: z.enum(['read-only', 'low-risk', 'high-risk']).optional(),
    approvers: z.record(z.string(), z.array(z.string())).optional(),
    runTimeoutMs: z.number().optional(),
    noApproverFix: z.string().optional(),
  })
  .optional();

const TurnSchema = z.object({
  agentName: z.string(),
  conversationKey: z.string(),
  platform: z.string(),
  sender: z.object({ id: z.string(), name: z.string().optional() }),
  text: z.string(),
  attachments: z.array(z.unknown()).optional(),
  humanAvailable: z.boolean().optional(),
  runId: z.string().optional(),
  overrides: TurnOverridesSchema,
});

/** A stored turn as the runner reads it back; undefined when unreadable. */
export function parseTurn(value: unknown): Turn | undefined {
  const t = TurnSchema.safeParse(value);
  return t.success ? (t.data as Turn) : undefined;
}

/** The run record: saved when a run enters a tool batch, so a restart continues it (durable waits). */
export const RunRecord = z.object({
  runId: z.string(),
  agentName: z.string(),
  conversationKey: z.string(),
  platform: z.string(),
  starter: z.object({ id: z.string(), name: z.string().optional() }),
  humanAvailable: z.boolean(),
  overrides: TurnOverridesSchema,
  calls: z.record(z.string(), CallState),
  /**
   * Replicas: the run's last message, stored (with the transcript that holds it) before it is posted,
   * and dropped once posted. A replica taking the conversation over posts it if it is still here, so
   * a crash between the store and the post neither loses the answer nor runs the turn again.
   */
  outbox: z.union([z.object({ type: z.literal('answer'), text: z.string() }), z.object({ type: z.literal('error'), message: z.string() })]).optional(),
});
export type RunRecord = z.infer<typeof RunRecord>;
export type Outbox = NonNullable<RunRecord['outbox']>;
