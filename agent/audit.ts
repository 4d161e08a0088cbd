/**
 * The audit trail's events: what an operator must be able to reconstruct from the log at `info`
 * (who ran what, what the gate decided and why, who approved it and when).
 *
 * Contract: an audit event carries ids, names, counts and outcomes only. Never a secret, never the
 * text of a message or a command's arguments (the approval key is the command's shape, e.g.
 * `git push`, as the approver saw it on the "Always" button). bot/log.ts writes them as one JSON line
 * each (field `event`); modules here only call the `Audit` function they are given.
 */
import type { Tier } from '../policies/tiers.js';

export type AuditEvent =
  | { event: 'config_loaded'; file: string | null; agents: string[]; platforms: string[] }
  | { event: 'run_started'; conversation: string; agent: string; runId: string; resumed: boolean }
  | {
      event: 'run_finished';
      conversation: string;
      agent: string;
      runId: string;
      outcome: 'completed' | 'stopped' | 'failed' | 'timeout' | 'max_iterations';
      inputTokens: number;
      outputTokens: number;
      costUSD: number;
      costKnown: boolean;
      classifierTokens?: number;
    }
  | {
      event: 'gate_decision';
      conversation: string;
      agent: string;
      runId: string;
      tool: string;
      decision: 'allow' | 'ask' | 'deny';
      tier?: Tier;
      /** The "Always" key offered (a command's approval key, or the tool name). */
      approvalKey?: string;
      /** Which rule decided: a denylist rule id, or the gate's reason in a few words. */
      rule: string;
    }
  | {
      event: 'approval_asked';
      conversation: string;
      agent: string;
      runId: string;
      requestId: string;
      kind: 'approval' | 'picker' | 'question' | 'approve_all';
      expiresAt: string;
      /** After a restart: the same request shown again. */
      reshown?: boolean;
    }
  | {
      event: 'approval_decided';
      conversation: string;
      agent: string;
      runId: string;
      requestId: string;
      kind: 'approval' | 'picker' | 'question' | 'approve_all';
      outcome: string;
      /** The deciding user's id (or "policy"); absent for expiry and /stop. */
      by?: string;
      byName?: string;
      at: string;
    }
  | { event: 'stranger_refused'; platform: string; userId: string; channel: string }
  /** A flood of strangers, once a minute at most (bot/router.ts): counts instead of a line each. */
  | { event: 'stranger_flood'; platform: string; refused: number; told: number; senders: number; windowMs: number };

export type Audit = (e: AuditEvent) => void;

/** A one-line human summary of an audit event (the log line's `msg`). */
export function auditMessage(e: AuditEvent): string {
  switch (e.event) {
    case 'config_loaded':
      return `config loaded from ${e.file ?? '(built-in defaults)'}: agents ${e.agents.join(', ')}`;
    case 'run_started':
      return `run ${e.resumed ? 'resumed' : 'started'} in ${e.conversation} (agent ${e.agent})`;
    case 'run_finished':
      return `run finished in ${e.conversation}: ${e.outcome}, ${e.inputTokens} tokens in, ${e.outputTokens} out, ${e.costKnown ? `$${e.costUSD.toFixed(4)}` : 'cost unknown'}`;
    case 'gate_decision':
      return `gate: ${e.decision} ${e.tool}${e.tier ? ` (${e.tier})` : ''} in ${e.conversation}: ${e.rule}`;
    case 'approval_asked':
      return `${e.kind} ${e.reshown ? 'shown again' : 'asked'} in ${e.conversation} (request ${e.requestId})`;
    case 'approval_decided':
      return `${e.kind} ${e.requestId} in ${e.conversation}: ${e.outcome}${e.by ? ` by ${e.by}` : ''}`;
    case 'stranger_refused':
      return `refused a stranger on ${e.platform}: user ${e.userId} in ${e.channel}`;
    case 'stranger_flood':
      return `stranger flood on ${e.platform}: ${e.refused} refused from ${e.senders} senders in ${Math.round(e.windowMs / 1000)} s, ${e.told} told`;
  }
}
