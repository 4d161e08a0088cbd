/**
 * What the approvals write to the audit trail (agent/audit.ts), when an `audit` is given.
 *
 * Contract:
 * - approval_asked: a card was posted, or shown again after a restart (`reshown`).
 * - approval_decided: a decision was recorded (outcome, by whom, on which platform, from which
 *   direct conversation, when). Written once per request: only the decideOnce winner writes it.
 * - approval_refused: a click or decision that changed nothing (not an approver, already decided, a
 *   stale, forged or foreign token, expired, ...), naming who tried (platform + user id) and, when
 *   the token or id named a real request, which.
 */
import type { Audit, RefusalReason } from '../audit.js';
import type { LoadedRequest, StoredRequest } from './store.js';
import type { Decision } from './wording.js';

export function auditAsked(audit: Audit | undefined, req: StoredRequest, reshown: boolean): void {
  audit?.({
    event: 'approval_asked',
    conversation: req.conversationKey,
    agent: req.agentName,
    runId: req.runId,
    requestId: req.id,
    kind: req.kind,
    expiresAt: new Date(req.expiresAt).toISOString(),
    ...(reshown ? { reshown } : {}),
  });
}

export function auditDecided(audit: Audit | undefined, req: LoadedRequest, decision: Decision, byPlatform?: string, byConversation?: string): void {
  audit?.({
    event: 'approval_decided',
    conversation: req.conversationKey,
    agent: req.agentName,
    runId: req.runId,
    requestId: req.id,
    kind: req.kind,
    outcome: decision.outcome,
    ...(decision.by !== undefined ? { by: decision.by } : {}),
    ...(decision.byName !== undefined ? { byName: decision.byName } : {}),
    ...(byPlatform !== undefined ? { byPlatform } : {}),
    ...(byConversation !== undefined ? { byConversation } : {}),
    at: new Date(decision.at).toISOString(),
  });
}

export function auditRefused(
  audit: Audit | undefined,
  platform: string,
  user: { id: string; name?: string },
  conversation: string,
  reason: RefusalReason,
  req?: StoredRequest,
): void {
  audit?.({
    event: 'approval_refused',
    platform,
    userId: user.id,
    ...(user.name !== undefined ? { userName: user.name } : {}),
    conversation: req?.conversationKey ?? conversation,
    reason,
    ...(req ? { requestId: req.id, agent: req.agentName, kind: req.kind } : {}),
  });
}
