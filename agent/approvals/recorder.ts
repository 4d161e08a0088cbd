/**
 * Recording a decision, the one path every way of deciding ends in (click, host, headless client,
 * typed answer, expiry, /stop, an "Always" that now covers a request).
 *
 * Contract:
 * - `record` writes the decision with the repository's `decideOnce`, one atomic statement on every
 *   engine, so within a process and across processes sharing the store exactly one decision is
 *   recorded. The winner then, in this order: audits approval_decided, reports the wait to
 *   telemetry, replaces every copy of the card with the outcome (earlier copies shown before a
 *   restart, the current one, direct messages'), publishes on the DecisionBus and wakes this
 *   process's waits (a bus that reaches only other processes still settles them). The loser returns
 *   false and wakes this process's waits with the decision that won.
 * - `settle` decides without a click: false when already decided (that decision then wakes the
 *   waits here).
 * - `expire` settles a request as `expired` (questions: `unanswered`); concurrent expiries of one
 *   request here (a wait's timer and the expiry watch fire together) share one settlement.
 * - A card that cannot be edited is logged, never fatal: the decision stands.
 * - DecideContext is what every way of deciding works with: the store, the recorder, who may decide,
 *   the clock and the audit trail.
 */
import type { Audit } from '../audit.js';
import type { OutputResolver } from '../run/output.js';
import type { Telemetry } from '../telemetry/types.js';
import type { Log } from '../log.js';
import { auditDecided } from './audit-events.js';
import type { Approvers } from './authority.js';
import { decidedCard } from './cards.js';
import type { DecisionBus } from './decision-bus.js';
import { decidedCopies } from './delivery.js';
import type { ApprovalStore, LoadedRequest, StoredRequest } from './store.js';
import { alreadyDecided, type ClickResult, type Decision } from './wording.js';
import { messageOf } from '../log.js';

export interface DecisionRecorderOptions {
  store: ApprovalStore;
  bus: DecisionBus;
  outputs: OutputResolver;
  now: () => number;
  /** Settles this process's waits on a request without the bus (./waits.ts). */
  wakeHere(requestId: string, decision: Decision): void;
  audit?: Audit;
  telemetry?: Pick<Telemetry, 'approvalDecided'>;
  log?: Log;
}

export interface DecideContext {
  store: ApprovalStore;
  recorder: DecisionRecorder;
  who: Approvers;
  now: () => number;
  audit?: Audit;
}

export class DecisionRecorder {
  /** Expiries in progress here (a wait's timer and the watch fire together): settled once. */
  private readonly expiring = new Map<string, Promise<void>>();

  constructor(private readonly opts: DecisionRecorderOptions) {}

  /**
   * Writes the decision, replaces the card, wakes the waiters (in that order). False when it was
   * decided first (another click, or another process sharing the store): that decision stands, and
   * wakes this process's waits.
   */
  async record(req: LoadedRequest, decision: Decision, byPlatform?: string, byConversation?: string): Promise<boolean> {
    const { store } = this.opts;
    if (!(await store.decideOnce(req, decision))) {
      const won = (await store.get(req.id))?.decision;
      if (won) this.opts.wakeHere(req.id, won);
      return false;
    }
    auditDecided(this.opts.audit, req, decision, byPlatform, byConversation);
    this.opts.telemetry?.approvalDecided({ kind: req.kind, outcome: decision.outcome, waitMs: Math.max(0, decision.at - req.createdAt) });
    // The handles as stored now, after the decision: `req` may have been read before the card's
    // handle was stored (a click right after the post); showIfDecided covers the other order.
    await this.showDecided((await store.get(req.id)) ?? req, decision);
    await this.opts.bus.publish(req.id, decision);
    // A bus that reaches only other processes still settles this one's waits.
    this.opts.wakeHere(req.id, decision);
    return true;
  }

  /** Records the expiry of a request found past its time (a late click or host decision). */
  recordExpired(req: LoadedRequest): Promise<boolean> {
    return this.record(req, this.expiryOf(req));
  }

  /**
   * Decides a request without a click (expiry, /stop, or an "Always" that now covers it).
   * Returns false when it was already decided (here or by another process: that decision then
   * wakes this process's waits).
   */
  async settle(requestId: string, decision: Decision, byPlatform?: string): Promise<boolean> {
    const req = await this.opts.store.get(requestId);
    if (!req) return false;
    if (req.decision) {
      this.opts.wakeHere(requestId, req.decision);
      return false;
    }
    return this.record(req, decision, byPlatform);
  }

  expire(requestId: string): Promise<void> {
    const running = this.expiring.get(requestId);
    if (running) return running;
    const work = (async () => {
      const req = await this.opts.store.get(requestId);
      if (!req) return;
      await this.settle(requestId, this.expiryOf(req));
    })().finally(() => this.expiring.delete(requestId));
    this.expiring.set(requestId, work);
    return work;
  }

  /** A click found the request decided (maybe by another process): that decision wakes the waits here too. */
  foundDecided(requestId: string, decision: Decision): ClickResult {
    this.opts.wakeHere(requestId, decision);
    return { accepted: false, notice: alreadyDecided(decision) };
  }

  /** Every copy of a request's card (earlier ones first, then the current one, then direct messages') shows `decision`. */
  async showDecided(req: StoredRequest, decision: Decision): Promise<void> {
    for (const c of decidedCopies(req, (card) => decidedCard(card, decision))) await this.updateCard(req, c.handle, c.card, c.key);
  }

  /** A click between posting a card and storing its handle found no handle to edit: edit it here. */
  async showIfDecided(id: string, handle: string, card: StoredRequest['card']): Promise<void> {
    const req = await this.opts.store.get(id);
    if (req?.decision) await this.updateCard(req, handle, decidedCard(card, req.decision));
  }

  private expiryOf(req: StoredRequest): Decision {
    return { outcome: req.kind === 'question' ? 'unanswered' : 'expired', at: this.opts.now() };
  }

  private async updateCard(
    req: Pick<StoredRequest, 'id' | 'conversationKey'>,
    handle: string,
    card: StoredRequest['card'],
    key = req.conversationKey,
  ): Promise<void> {
    try {
      await this.opts.outputs(key).updateCard(handle, card);
    } catch (err) {
      // The decision stands; a card we could not edit is a display problem, reported, not fatal.
      this.opts.log?.('warn', `could not update card ${req.id}: ${messageOf(err)}`);
    }
  }
}
