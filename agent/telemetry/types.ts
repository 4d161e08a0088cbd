/**
 * The observability seam: what agent/ (and the router) report about messages, runs, model calls,
 * tool calls with their gate decision, approvals and sandboxed commands. bot/telemetry/ turns the
 * reports into Prometheus metrics (prom-client) and OpenTelemetry spans; agent/ imports neither.
 *
 * Contract:
 * - An implementation never throws into the caller and never waits on I/O: a metric or a span is
 *   not worth a failed run. `noTelemetry` does nothing and is the default everywhere.
 * - Content (message text, tool arguments and results, the system prompt) is handed over as it is;
 *   the implementation decides whether it leaves the process (metrics: never; traces: only with
 *   content capture on). Ids and names (agent, tool, model, conversation) are handed over raw; the
 *   implementation bounds what becomes a metric label and hashes the conversation key in traces.
 * - One `run()` per run (a resumed run is a new one, `resumed: true`), ended once with `end()`;
 *   `chat()` and `tool()` belong to that run and are ended once each (`end()`).
 */
import type { Tier } from '../../policies/tiers.js';
import type { RunLimit, Usage } from '../events.js';
import type { ContentBlock, Message } from '../context/messages.js';

type RunOutcome = 'completed' | 'stopped' | 'failed' | 'timeout' | 'max_iterations';

/** Why an inbound message did not become a turn (bounded: these values only). */
export type RefusalReason = 'stranger' | 'not_addressed' | 'rate_limited' | 'duplicate' | 'empty' | 'store_error';

/** Why a sandboxed command was killed, or the box limit it ran into. */
export type SandboxKill = 'timeout' | 'stopped' | 'cpu' | 'memory' | 'tmp_full' | 'sigkill';

export interface SandboxReport {
  /** False when the command ran on the host (`sandbox: none`). */
  boxed: boolean;
  /** Gatehouse killed it (timeout, /stop), or a box limit did. */
  killed?: SandboxKill;
  /** The box limits it hit (a command may hit a limit and still exit by itself). */
  limits: SandboxKill[];
}

interface GateReport {
  decision: 'allow' | 'ask' | 'deny';
  tier?: Tier;
  /** The rule that decided (a denylist rule id, or the gate's reason in a few words). */
  rule: string;
}

interface ApprovalReport {
  outcome: string;
  /** The deciding user's id, or "policy"; absent for expiry and /stop. */
  approver?: string;
  /** From the card being asked to the decision (when this process asked it). */
  waitMs?: number;
}

export interface ToolTelemetry {
  gate(g: GateReport): void;
  approval(a: ApprovalReport): void;
  sandbox(s: SandboxReport): void;
  end(r: { ok: boolean; result: unknown }): void;
}

export interface ChatTelemetry {
  end(r: { content?: readonly ContentBlock[]; stopReason?: string; usage?: Usage; error?: unknown }): void;
}

export interface RunTelemetry {
  chat(c: { model: string; maxTokens: number; system: string; messages: readonly Message[] }): ChatTelemetry;
  tool(t: { callId: string; name: string; input: unknown }): ToolTelemetry;
  /** `budgetLimit`: the spending limit's scope that ended the run (agent/events.ts RunLimit). */
  end(e: { outcome: RunOutcome; usage: Usage; budgetLimit?: RunLimit['scope'] }): void;
}

export interface Telemetry {
  run(r: { runId: string; agent: string; conversation: string; model: string; resumed: boolean }): RunTelemetry;
  /** Every inbound message. */
  messageIn(platform: string): void;
  /** An inbound message that did not become a turn, a command or an answer. */
  messageRefused(platform: string, reason: RefusalReason): void;
  /** An approval, picker or question decided (recorded once, by the process that decided it). */
  approvalDecided(a: { kind: string; outcome: string; waitMs: number }): void;
}

const noTool: ToolTelemetry = { gate: () => undefined, approval: () => undefined, sandbox: () => undefined, end: () => undefined };
const noChat: ChatTelemetry = { end: () => undefined };
const noRun: RunTelemetry = { chat: () => noChat, tool: () => noTool, end: () => undefined };

export const noTelemetry: Telemetry = { run: () => noRun, messageIn: () => undefined, messageRefused: () => undefined, approvalDecided: () => undefined };
export const noToolTelemetry = noTool;
export const noChatTelemetry = noChat;
export const noRunTelemetry = noRun;
