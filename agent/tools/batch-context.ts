/**
 * What a batch of tool calls (./executor.ts) runs with, and what it records of each call.
 *
 * Contract:
 * - BatchContext: the run's side of a batch (its tools, gate, broker, events, abort signal, audit,
 *   workspace limit, telemetry). Nothing in agent/tools reaches the runner except through it.
 * - CallState: every step of a call that matters is recorded in `CallStates` (persisted by the
 *   runner on every change) before it happens: `awaiting` (the card's request id, with what the
 *   card asked), `started` (about to execute: from here the call runs at most once; a restart
 *   reports it as interrupted instead of running it again), `done` (the result). The schema is
 *   read back after a restart, so its shape is a stored format.
 */
import { z } from 'zod';
import type { AgentPolicy } from '../../policies/gate.js';
import type { Tier } from '../../policies/tiers.js';
import type { ApprovalBroker } from '../approvals/index.js';
import type { Audit } from '../audit.js';
import type { AgentEvent } from '../events.js';
import type { RunTelemetry } from '../telemetry/types.js';
import type { AnyTool, ToolContext } from './types.js';
import type { WorkspaceQuota } from './workspace-quota.js';

const ProposalSchema = z.object({
  summary: z.string(),
  preview: z.string().optional(),
  options: z.array(z.object({ id: z.string(), label: z.string() })).optional(),
  command: z.string().optional(),
  tier: z.enum(['read-only', 'low-risk', 'high-risk']).optional(),
  data: z.unknown().optional(),
});

export const CallState = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('awaiting'),
    requestId: z.string(),
    input: z.unknown(),
    proposal: ProposalSchema,
    tier: z.enum(['read-only', 'low-risk', 'high-risk']),
    always: z.union([z.object({ kind: z.literal('command'), key: z.string() }), z.object({ kind: z.literal('tool'), name: z.string() }), z.null()]),
  }),
  z.object({ status: z.literal('started'), questionId: z.string().optional() }),
  z.object({
    status: z.literal('done'),
    result: z.object({ content: z.union([z.string(), z.array(z.unknown())]), isError: z.boolean().optional() }),
  }),
]);
export type CallState = z.infer<typeof CallState>;

/** Per-call records for one batch, persisted by the runner on every change. */
export interface CallStates {
  get(callId: string): CallState | undefined;
  set(callId: string, state: CallState): Promise<void>;
}

export interface BatchContext {
  runId: string;
  conversationKey: string;
  platform: string;
  agentName: string;
  /** Who started the run (their platform user id), stored with its approvals (requesterMayApprove). */
  starterId?: string;
  tools: ReadonlyMap<string, AnyTool>;
  /** The tool context for one call (its own abort signal). */
  toolContext(callId: string, signal: AbortSignal): ToolContext;
  policy(): AgentPolicy;
  classify(command: string): Promise<{ tier: Tier; note?: string }>;
  broker: ApprovalBroker;
  approvalTimeoutMs: number;
  emit(event: AgentEvent): Promise<void>;
  /** Aborted by /stop or the run timeout. */
  signal: AbortSignal;
  states: CallStates;
  /** Persists an "Always approve" (command key or tool) for this agent. */
  addAlways(always: { kind: 'command'; key: string } | { kind: 'tool'; name: string }): Promise<void>;
  /**
   * Calls `recheck` after every "Always" added for this agent (from any conversation) until the returned
   * function is called; `addAlways` resolves after the re-checks. Without it, only this batch re-checks.
   */
  watchAllowlist?(recheck: () => Promise<void>): () => void;
  /** Waiting on a human does not count against the run's timeout. */
  humanWait<T>(wait: () => Promise<T>): Promise<T>;
  /** The audit trail: one gate_decision per decided call, limit_refused for workspace-limit refusals. */
  audit?: Audit;
  /** The agent's workspace size limit; absent: no limit. */
  workspaceQuota?: WorkspaceQuota;
  /** The run's trace and metrics: one `tool` per call, with its gate decision and approval. */
  telemetry?: RunTelemetry;
  /** Where the calls come from when not the run's own model (a sub-agent): its cards say so first, its audit records `origin`. */
  origin?: { title: string; line: string };
}
