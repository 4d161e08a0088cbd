/**
 * Restore after a restart: a conversation's undecided cards shown again.
 *
 * Contract:
 * - Every undecided, unexpired request of the conversation is posted again, in the order asked,
 *   with the same buttons (tokens), so a person at a terminal, or one who scrolled away, sees what
 *   is waiting. What the conversation showed (`hereCard`: a status line, or the card with a note)
 *   is what is posted.
 * - The new handle becomes the card's; the earlier one is kept, so a decision updates every copy.
 *   A decision that lands between the post and storing the handle still reaches the new copy.
 * - Each card shown again is audited as approval_asked with `reshown`.
 * - Before that, `settleUnawaited` ends the undecided requests no resumed run will wait on again:
 *   those whose waiter lived only in the stopped process (a command's network request, a spending
 *   check, a run that had stored no record yet). They are settled as denied with a note saying why,
 *   so their cards show it and a click on them changes nothing (an "Always" there would otherwise be
 *   recorded and never applied). What a run waits on again is its calls' approvals and questions.
 */
import type { Audit } from '../audit.js';
import type { OutputResolver } from '../run/output.js';
import { auditAsked } from './audit-events.js';
import type { DecisionRecorder } from './recorder.js';
import type { ApprovalStore } from './store.js';

export interface ReshowDeps {
  store: ApprovalStore;
  recorder: DecisionRecorder;
  outputs: OutputResolver;
  now: () => number;
  audit?: Audit;
}

/** Returns how many cards were shown. */
export async function reshowPending(deps: ReshowDeps, conversationKey: string): Promise<number> {
  const { store } = deps;
  let n = 0;
  for (const id of await store.pending(conversationKey)) {
    const req = await store.get(id);
    if (!req || req.decision || deps.now() >= req.expiresAt) continue;
    const card = req.hereCard ?? req.card;
    const handle = await deps.outputs(conversationKey).postCard(card, { requestId: id });
    await store.setHandles(id, (h) => ({
      cardHandle: handle,
      earlierHandles: h.cardHandle !== undefined ? [...(h.earlierHandles ?? []), h.cardHandle] : h.earlierHandles,
    }));
    await deps.recorder.showIfDecided(id, handle, card);
    auditAsked(deps.audit, req, true);
    n++;
  }
  return n;
}

/**
 * Settles, as denied with `note`, the undecided requests among `ids` that no resumed run waits on:
 * kept are those in `awaited` under their run's id (or an approve-all card over one of them); with
 * `onlyRun`, requests of other runs are left as they are. Returns how many were settled.
 */
export async function settleUnawaited(
  deps: Pick<ReshowDeps, 'store' | 'recorder' | 'now'>,
  ids: readonly string[],
  awaited: ReadonlyMap<string, ReadonlySet<string>>,
  note: string,
  onlyRun?: string,
): Promise<number> {
  let n = 0;
  for (const id of ids) {
    const req = await deps.store.get(id);
    if (!req || req.decision) continue;
    if (onlyRun !== undefined && req.runId !== onlyRun) continue;
    const waits = awaited.get(req.runId);
    if (waits?.has(id)) continue;
    if (waits && req.kind === 'approve_all' && (req.members ?? []).some((m) => waits.has(m))) continue;
    if (await deps.recorder.settle(id, { outcome: 'denied', at: deps.now(), note })) n++;
  }
  return n;
}
