/**
 * Decisions that do not come from a card's button: the host operator's (`gatehouse approvals
 * decide`, through the service's attach socket) and a headless run's own client (`gatehouse run`,
 * or a local caller holding the service's token), plus what such a client is shown of a card.
 *
 * Contract:
 * - `decideAsHost`: allowed only when the request's agent lists `local` under `approvers.cli`;
 *   anyone else's request is refused (audited) with the reason. The requester rule (./requester.ts)
 *   applies to runs started at the terminal or headless, where the host operator is the starter.
 *   Approve is "once" (never "Always": that is a choice for the card's own buttons); a question or
 *   a picker cannot be decided here (it needs a choice). Recorded like a click: first decision
 *   wins, card updated, an "Approve all" settles its members.
 * - `decideAs`: for a caller the conversation itself already trusts, without the approver check.
 *   `pick`: a button's token, or a typed answer (questions that allow one; null or empty = no
 *   answer). First decision wins, as with clicks; refusals are audited on platform `cli`.
 * - `buttonChoices`: what each button of a request means, in card order.
 */
import type { RefusalReason } from '../audit.js';
import { isApprover } from '../../policies/access.js';
import { auditRefused } from './audit-events.js';
import { requesterMayDecide } from './authority.js';
import { decisionForChoice } from './cards.js';
import type { DecideContext } from './recorder.js';
import { HOST_STARTED_PLATFORMS } from './requester.js';
import type { ApprovalStore } from './store.js';
import { alreadyDecided, NOTICES, noticeFor, type ClickResult, type Decision } from './wording.js';

/** Who `gatehouse approvals decide` decides as: the operator at the host (`approvers.cli: [local]`). */
const HOST_OPERATOR = { id: 'local', name: 'host operator' } as const;

export async function decideAsHost(ctx: DecideContext, requestId: string, verdict: 'approve' | 'deny'): Promise<ClickResult & { reason?: RefusalReason }> {
  const { store, recorder } = ctx;
  const user = { id: HOST_OPERATOR.id, name: HOST_OPERATOR.name };
  const req = await store.get(requestId);
  const refused = (reason: RefusalReason, notice: string): ClickResult & { reason: RefusalReason } => {
    auditRefused(ctx.audit, 'cli', user, req?.conversationKey ?? '', reason, req);
    return { accepted: false, notice, reason };
  };
  if (!req) return refused('no_such_request', `No request ${requestId} (decided more than a day ago, or never asked).`);
  if (!isApprover(user, ctx.who.approversOf(req.agentName, 'cli'))) {
    return refused(
      'not_approver',
      `agent ${req.agentName} does not let the host operator decide: add \`cli: [local]\` to agents.${req.agentName}.approvers in gatehouse.yaml (then \`gatehouse reload\`).`,
    );
  }
  if (req.decision) return refused('already_decided', recorder.foundDecided(req.id, req.decision).notice ?? 'Already decided.');
  if (HOST_STARTED_PLATFORMS.includes(req.platform) && !requesterMayDecide(ctx.who, req)) {
    return refused(
      'requester_may_not_approve',
      `${NOTICES.requesterMayNotApprove} (This run was started from the host, so the host operator is its requester.)`,
    );
  }
  if (ctx.now() >= req.expiresAt) {
    await recorder.recordExpired(req);
    return refused('expired', NOTICES.expired);
  }
  if (req.kind === 'question' || req.kind === 'picker') {
    return refused('not_a_choice', `${req.kind} ${requestId} needs a choice or an answer: decide it on its card (approve/deny is for approvals).`);
  }
  const decision: Decision = {
    outcome: verdict === 'approve' ? 'approved' : 'denied',
    by: user.id,
    byName: user.name,
    at: ctx.now(),
    note: 'from the host',
  };
  if (!(await recorder.record(req, decision, 'cli'))) return refused('already_decided', alreadyDecided((await store.get(req.id))?.decision));
  if (req.kind === 'approve_all') {
    for (const member of req.members ?? []) await recorder.settle(member, { ...decision, note: 'via Approve all / Deny all, from the host' });
  }
  return { accepted: true, notice: noticeFor(decision) };
}

export async function decideAs(
  ctx: DecideContext,
  requestId: string,
  conversationKey: string,
  pick: { token: string } | { answer: string | null },
  user: { id: string; name?: string },
): Promise<ClickResult> {
  const { store, recorder } = ctx;
  const req = await store.get(requestId);
  const refused = (reason: RefusalReason, notice: string): ClickResult => {
    auditRefused(ctx.audit, 'cli', user, conversationKey, reason, req);
    return { accepted: false, notice };
  };
  if (!req || req.conversationKey !== conversationKey) return refused('no_such_request', NOTICES.noSuchRequest);
  if (req.decision) return refused('already_decided', recorder.foundDecided(req.id, req.decision).notice ?? '');
  let decision: Decision | null;
  if ('token' in pick) {
    const entry = await store.byToken(pick.token);
    decision = entry?.requestId === requestId ? decisionForChoice(req, entry.choice, user, ctx.now()) : null;
  } else if (pick.answer === null || pick.answer.trim() === '') {
    decision = { outcome: req.kind === 'question' ? 'unanswered' : 'denied', by: user.id, byName: user.name, at: ctx.now(), note: 'no answer given' };
  } else if (req.kind === 'question' && req.allowCustom) {
    decision = { outcome: 'answered', answer: pick.answer, by: user.id, byName: user.name, at: ctx.now() };
  } else decision = null;
  if (!decision) return refused('not_a_choice', NOTICES.notAChoice);
  if (!(await recorder.record(req, decision, 'cli'))) return refused('already_decided', alreadyDecided(undefined));
  return { accepted: true, notice: noticeFor(decision) };
}

export async function buttonChoices(store: ApprovalStore, requestId: string): Promise<Array<{ token: string; label: string; choice: string }>> {
  const req = await store.get(requestId);
  const out: Array<{ token: string; label: string; choice: string }> = [];
  for (const b of req?.card.buttons ?? []) {
    const entry = await store.byToken(b.token);
    if (entry?.requestId === requestId) out.push({ token: b.token, label: b.label, choice: entry.choice });
  }
  return out;
}
