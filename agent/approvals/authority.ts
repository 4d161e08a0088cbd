/**
 * Who may decide a request, read at decision time (config may change while a card waits).
 *
 * Contract:
 * - `mayDecide`: a bound approver of the request's agent on the platform the decision comes from;
 *   for a question also the person who started the run, but only on the request's own platform (ids
 *   of another platform are other people).
 * - `requesterMayDecide`: the requester rule (./requester.ts) for one request: false only for
 *   approvals, pickers and "Approve all" of an agent and platform where the starter may not decide
 *   their own; questions are never affected.
 */
import { isApprover } from '../../policies/access.js';
import { effectiveRequesterMayApprove } from './requester.js';
import type { StoredRequest } from './store.js';

/** Live reads of the config (the broker's options). */
export interface Approvers {
  /** Approver ids for an agent and platform. */
  approversOf(agentName: string, platform: string): readonly string[];
  /** The agent's explicit `requesterMayApprove`; undefined: the default rule (./requester.ts). */
  requesterMayApprove?(agentName: string): boolean | undefined;
}

export function mayDecide(who: Approvers, req: StoredRequest, user: { id: string; roles?: string[] }, platform = req.platform): boolean {
  if (isApprover(user, who.approversOf(req.agentName, platform))) return true;
  if (platform !== req.platform) return false;
  return req.kind === 'question' && req.starterId === user.id;
}

export function requesterMayDecide(who: Approvers, req: StoredRequest): boolean {
  if (req.kind === 'question') return true;
  return effectiveRequesterMayApprove(who.requesterMayApprove?.(req.agentName), who.approversOf(req.agentName, req.platform));
}
