/**
 * The audit trail's events: what an operator must be able to reconstruct from the log at `info`
 * (who ran what, what the gate decided and why, who approved it and when, who was refused, what the
 * configuration was and how it changed, when the service ran).
 *
 * Contract: an audit event carries ids, names, counts and outcomes only. Never a secret, never the
 * text of a message or a command's arguments (the approval key is the command's shape, e.g.
 * `git push`, as the approver saw it on the "Always" button). bot/service/log.ts writes them as one JSON line
 * each (field `event`); bot/audit/ appends them to the hash-chained audit file as well. Modules here
 * only call the `Audit` function they are given.
 *
 * Field names are stable (tools and `jq` filters rely on them): a field may be added, never renamed or
 * given another meaning. Common fields:
 *   event         the event's name (below)
 *   conversation  the conversation key (`telegram:501`, `slack:T1:C1:1700.1`, `cli:...`)
 *   agent, runId  the agent's name and the run's id
 *   requestId     an approval or question request
 *   platform, userId  who acted or was refused (`cli` / `local`: the host operator at `gatehouse approvals decide`)
 * Events:
 *   service_started / service_stopped   mode, platforms, agents, pid; reason for the stop
 *   config_loaded                       at start: file, agents, platforms, approvers, access
 *   config_reloaded                     ok, file, changes (agents/routes/approvers/access added and
 *                                       removed), needsRestart; error when rejected
 *   run_started / run_finished          outcome, tokens, cost
 *   gate_decision                       tool, decision, tier, rule, approvalKey, origin (a sub-agent's call)
 *   approval_asked / approval_decided   kind, outcome, by, byName, byPlatform, at
 *   approval_refused                    a click or decision that changed nothing: reason, who tried
 *   limit_refused                       limit (rate_limit, workspace_limit, run_timeout,
 *                                       max_iterations), with where and for whom
 *   stranger_refused / stranger_flood   access refusals
 *   egress_connection                   a boxed command's connection through the egress proxy
 *                                       (sandboxNetwork: { allow }): agent, host, port, method,
 *                                       decision (allowed/refused/failed), reason, address, bytesUp/Down
 */
import type { Tier } from '../policies/tiers.js';

type ApprovalKind = 'approval' | 'picker' | 'question' | 'approve_all';

/** Why a click (or a host decision) changed nothing. */
export type RefusalReason =
  /** The user is not a bound approver (nor, for a question, who asked). */
  | 'not_approver'
  /** The request was decided already: a replayed or late click. */
  | 'already_decided'
  /** The token is unknown or no longer kept: a stale button. */
  | 'stale_token'
  /** Not a token this bot makes: a forged or mangled button. */
  | 'bad_token'
  /** A real token sent from another conversation than its card's: forged. */
  | 'other_conversation'
  | 'expired'
  | 'not_a_choice'
  | 'no_such_request'
  /** The run's starter tried to decide its approval where `requesterMayApprove` is false. */
  | 'requester_may_not_approve';

/** What a reload changed. Entries are `agent`, `match -> agent`, `agent.platform:id`, `platform.list:id`. */
export interface ConfigChanges {
  agents: { added: string[]; removed: string[]; changed: string[] };
  routes: { added: string[]; removed: string[] };
  approvers: { added: string[]; removed: string[] };
  access: { added: string[]; removed: string[] };
}

type LimitName = 'rate_limit' | 'workspace_limit' | 'run_timeout' | 'max_iterations' | 'budget';

export type AuditEvent =
  | { event: 'service_started'; mode: 'start' | 'serve'; platforms: string[]; agents: string[]; pid: number; version: string }
  | { event: 'service_stopped'; pid: number; reason: string }
  | {
      event: 'config_loaded';
      file: string | null;
      agents: string[];
      platforms: string[];
      /** `agent.platform:id` for every bound approver. */
      approvers?: string[];
      /** `platform.list:id` for every access entry. */
      access?: string[];
    }
  | { event: 'config_reloaded'; ok: boolean; file: string | null; changes?: ConfigChanges; needsRestart?: string[]; error?: string }
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
      /** Set when the call came from a sub-agent of the run (spawn_subagent), not the run's own model. */
      origin?: 'sub-agent';
    }
  | {
      event: 'approval_asked';
      conversation: string;
      agent: string;
      runId: string;
      requestId: string;
      kind: ApprovalKind;
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
      kind: ApprovalKind;
      outcome: string;
      /** The deciding user's id (or "policy"); absent for expiry and /stop. */
      by?: string;
      byName?: string;
      /** Where the decider acted: the card's platform, or `cli` for the host operator. */
      byPlatform?: string;
      /** approvalDelivery: the direct conversation the decision came from (absent: the request's own). */
      byConversation?: string;
      at: string;
    }
  | {
      event: 'approval_refused';
      /** Who tried. */
      platform: string;
      userId: string;
      userName?: string;
      conversation: string;
      reason: RefusalReason;
      /** Known when the token (or id) named a real request. */
      requestId?: string;
      agent?: string;
      kind?: ApprovalKind;
    }
  | {
      event: 'egress_connection';
      agent: string;
      /** The conversation and run of the command that asked (per-command proxies, agent/egress/hub.ts `session`). */
      conversation?: string;
      runId?: string;
      host: string;
      port: number;
      method: 'CONNECT' | 'HTTP';
      decision: 'allowed' | 'refused' | 'failed';
      reason?: string;
      /** The address connected to (checked, then pinned). */
      address?: string;
      /** The approval card that decided it (a host not on the list, agent/egress/approvals.ts). */
      requestId?: string;
      /** Box -> world, and world -> box, counted at the proxy's sockets. */
      bytesUp: number;
      bytesDown: number;
    }
  | {
      event: 'limit_refused';
      limit: LimitName;
      conversation: string;
      platform?: string;
      userId?: string;
      agent?: string;
      runId?: string;
      tool?: string;
      /** rate_limit: seconds until the user may write again. */
      retryAfterSec?: number;
    }
  | { event: 'stranger_refused'; platform: string; userId: string; channel: string }
  /** A flood of strangers, once a minute at most (bot/service/router.ts): counts instead of a line each. */
  | { event: 'stranger_flood'; platform: string; refused: number; told: number; senders: number; windowMs: number };

export type Audit = (e: AuditEvent) => void;

const changeCount = (c: ConfigChanges): number =>
  Object.values(c).reduce((n, part: Record<string, string[]>) => n + Object.values(part).reduce((m, list) => m + list.length, 0), 0);

/** A one-line human summary of an audit event (the log line's `msg`). */
export function auditMessage(e: AuditEvent): string {
  switch (e.event) {
    case 'service_started':
      return `service started (${e.mode}, pid ${e.pid}): ${e.platforms.join(', ') || 'no chat platform'}; agents ${e.agents.join(', ')}`;
    case 'service_stopped':
      return `service stopped (pid ${e.pid}): ${e.reason}`;
    case 'config_loaded':
      return `config loaded from ${e.file ?? '(built-in defaults)'}: agents ${e.agents.join(', ')}`;
    case 'config_reloaded':
      return e.ok
        ? `config reloaded from ${e.file ?? '(built-in defaults)'}: ${e.changes ? changeCount(e.changes) : 0} change(s)`
        : `config reload rejected: ${e.error ?? ''}`;
    case 'run_started':
      return `run ${e.resumed ? 'resumed' : 'started'} in ${e.conversation} (agent ${e.agent})`;
    case 'run_finished':
      return `run finished in ${e.conversation}: ${e.outcome}, ${e.inputTokens} tokens in, ${e.outputTokens} out, ${e.costKnown ? `$${e.costUSD.toFixed(4)}` : 'cost unknown'}`;
    case 'gate_decision':
      return `gate: ${e.decision} ${e.origin ? `${e.origin} ` : ''}${e.tool}${e.tier ? ` (${e.tier})` : ''} in ${e.conversation}: ${e.rule}`;
    case 'approval_asked':
      return `${e.kind} ${e.reshown ? 'shown again' : 'asked'} in ${e.conversation} (request ${e.requestId})`;
    case 'approval_decided':
      return `${e.kind} ${e.requestId} in ${e.conversation}: ${e.outcome}${e.by ? ` by ${e.by}` : ''}${e.byPlatform ? ` (${e.byPlatform})` : ''}`;
    case 'approval_refused':
      return `refused a decision by ${e.platform} user ${e.userId} in ${e.conversation}: ${e.reason}${e.requestId ? ` (request ${e.requestId})` : ''}`;
    case 'egress_connection':
      return `agent ${e.agent}: ${e.method} ${e.host}:${e.port} ${e.decision}${e.reason ? ` (${e.reason})` : ''}, ${e.bytesUp} bytes up, ${e.bytesDown} down`;
    case 'limit_refused':
      return `${e.limit} reached in ${e.conversation}${e.tool ? ` (${e.tool})` : ''}${e.userId ? ` for ${e.platform ?? ''} user ${e.userId}` : ''}`;
    case 'stranger_refused':
      return `refused a stranger on ${e.platform}: user ${e.userId} in ${e.channel}`;
    case 'stranger_flood':
      return `stranger flood on ${e.platform}: ${e.refused} refused from ${e.senders} senders in ${Math.round(e.windowMs / 1000)} s, ${e.told} told`;
  }
}
