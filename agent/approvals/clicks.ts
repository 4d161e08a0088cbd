/**
 * A click on a card's button, from an adapter: checked, then decided through the recorder.
 *
 * Contract:
 * - Each button carries an opaque token (144 random bits, 24 base64url chars, `TOKEN_PATTERN`);
 *   what it means lives in the store: token -> request id + choice. So a click after a restart
 *   still resolves, and nothing on the button can be forged.
 * - Checked in this order, each failure a private notice and an approval_refused naming who
 *   clicked: a token this bot does not make, an unknown one (stale), a request of another
 *   conversation, already decided (that decision wakes the waits here), not someone who may decide
 *   (./authority.ts), the requester rule (`requester_may_not_approve`: the starter of an approval
 *   on the request's own platform), expired (recorded as such first), a choice the request does
 *   not offer.
 * - A card's copy in an approver's direct messages (./delivery.ts) is checked exactly as one in the
 *   conversation, plus: the click comes from a direct conversation the card was sent to, by the
 *   person it was sent to, who is an approver on that platform. Its decision notes where it came
 *   from; approval_decided names `byPlatform` and `byConversation`.
 * - First valid click wins (the recorder's decideOnce); the loser reports the request as already
 *   decided. An "Approve all / Deny all" decision settles each of its members too.
 * - Never throws for bad input: the result says what happened.
 */
import type { RefusalReason } from '../audit.js';
import { auditRefused } from './audit-events.js';
import { mayDecide, requesterMayDecide } from './authority.js';
import { decisionForChoice } from './cards.js';
import { platformName } from './delivery.js';
import type { DecideContext } from './recorder.js';
import type { StoredRequest } from './store.js';
import { alreadyDecided, NOTICES, noticeFor, type ClickResult } from './wording.js';

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{16,40}$/;

/** The platform of a conversation key (`slack:T1:C1` -> `slack`). */
export const platformOf = (key: string): string => key.slice(0, Math.max(0, key.indexOf(':')));

export interface ClickAction {
  token: string;
  conversationKey: string;
  platform?: string;
  user: { id: string; name?: string; roles?: string[] };
}

export async function handleClick(ctx: DecideContext, action: ClickAction): Promise<ClickResult> {
  const { store, recorder } = ctx;
  const refused = (reason: RefusalReason, notice: string, req?: StoredRequest): ClickResult => {
    auditRefused(ctx.audit, action.platform ?? platformOf(action.conversationKey), action.user, action.conversationKey, reason, req);
    return { accepted: false, notice };
  };
  if (!TOKEN_PATTERN.test(action.token)) return refused('bad_token', NOTICES.badToken);
  const entry = await store.byToken(action.token);
  if (!entry) return refused('stale_token', NOTICES.staleToken);
  const req = await store.get(entry.requestId);
  if (!req) return refused('stale_token', NOTICES.staleToken);
  // A card's copy in an approver's direct messages is clicked there: that conversation, that person, that platform.
  const direct = req.conversationKey === action.conversationKey ? undefined : req.directs?.find((d) => d.key === action.conversationKey);
  if (req.conversationKey !== action.conversationKey && !direct) return refused('other_conversation', NOTICES.otherConversation, req);
  if (req.decision) return refused('already_decided', recorder.foundDecided(req.id, req.decision).notice ?? '', req);
  const clickPlatform = direct?.platform ?? req.platform;
  if ((direct && direct.userId !== action.user.id) || !mayDecide(ctx.who, req, action.user, clickPlatform)) {
    return refused('not_approver', req.kind === 'question' ? NOTICES.questionNotYours : NOTICES.approvalNotYours, req);
  }
  // The starter is a user of the conversation's platform: ids of another platform are other people.
  if (clickPlatform === req.platform && req.starterId === action.user.id && !requesterMayDecide(ctx.who, req)) {
    return refused('requester_may_not_approve', NOTICES.requesterMayNotApprove, req);
  }
  if (ctx.now() >= req.expiresAt) {
    await recorder.recordExpired(req);
    return refused('expired', NOTICES.expired, req);
  }
  const chosen = decisionForChoice(req, entry.choice, action.user, ctx.now());
  if (!chosen) return refused('bad_token', NOTICES.badToken, req);
  const decision = direct ? { ...chosen, note: `from ${platformName(direct.platform)} direct messages` } : chosen;
  const byPlatform = action.platform ?? platformOf(action.conversationKey);
  if (!(await recorder.record(req, decision, byPlatform, direct?.key)))
    return refused('already_decided', alreadyDecided((await store.get(req.id))?.decision), req);
  if (req.kind === 'approve_all') {
    for (const member of req.members ?? []) await recorder.settle(member, { ...decision, note: 'via Approve all / Deny all' });
    return { accepted: true, notice: decision.outcome === 'approved' ? 'Approved all.' : 'Denied all.' };
  }
  return { accepted: true, notice: noticeFor(decision) };
}
