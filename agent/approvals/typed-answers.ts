/**
 * A conversation's open requests as its messages meet them: whether a typed message answers an
 * open question, and what a queued message waits for.
 *
 * Contract:
 * - The open requests are asked of the store (a conversation's undecided requests), so another
 *   process's question is seen too, and a run resumed after a restart needs nothing noted here.
 *   One read when the conversation has none (the common case); none at all on an exclusive store,
 *   where the in-process index (./open-requests.ts) knows there are none.
 * - `answerTyped`: the text answers the oldest open question that allows custom answers and that
 *   this user may decide (./authority.ts): settled through the recorder, first decision wins. True
 *   when it answered one (the message is then not a new turn).
 * - `describeWaiting`: the first undecided request other than an "Approve all", described for a
 *   "queued" notice (e.g. `an approval on write_file`).
 */
import { mayDecide } from './authority.js';
import { platformOf } from './clicks.js';
import type { OpenRequests } from './open-requests.js';
import type { DecideContext } from './recorder.js';
import type { ApprovalStore } from './store.js';
import { describeWaitingFor } from './wording.js';

/** Pending ids of a conversation, with no read when the in-process index knows there are none. */
export async function openIds(store: ApprovalStore, open: OpenRequests | undefined, key: string): Promise<string[]> {
  if (open && !(await open.mayHave(key))) return [];
  const mark = open?.mark(key);
  const ids = await store.pending(key);
  if (ids.length === 0) open?.nonePending(key, mark);
  return ids;
}

export async function answerTyped(
  ctx: DecideContext,
  ids: readonly string[],
  conversationKey: string,
  user: { id: string; name?: string; roles?: string[] },
  text: string,
): Promise<boolean> {
  for (const id of ids) {
    const req = await ctx.store.get(id);
    if (!req || req.decision || req.kind !== 'question' || !req.allowCustom) continue;
    if (!mayDecide(ctx.who, req, user)) continue;
    if (await ctx.recorder.settle(id, { outcome: 'answered', answer: text, by: user.id, byName: user.name, at: ctx.now() }, platformOf(conversationKey)))
      return true;
  }
  return false;
}

export async function describeWaiting(store: ApprovalStore, ids: readonly string[]): Promise<string | undefined> {
  for (const id of ids) {
    const req = await store.get(id);
    if (!req || req.decision || req.kind === 'approve_all') continue;
    return describeWaitingFor(req);
  }
  return undefined;
}
