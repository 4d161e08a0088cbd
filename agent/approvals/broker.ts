/**
 * The approval broker: turns "a human must decide" into a card with buttons, and a click back into a
 * decision, exactly once.
 *
 * Contract:
 * - Each button carries an opaque token (144 random bits, 24 base64url chars). What it means lives in
 *   the store (`store.approvals`, through ./store.ts): token -> request id + choice; request id -> the
 *   request, its card, its decision. So a click after a restart still resolves, and nothing on the
 *   button can be forged.
 * - Only an authorized user decides: for approvals a bound approver of that agent and platform; for
 *   questions the person who started the run or a bound approver. Anyone else gets a private notice.
 * - First valid click wins. The decision is written to the store before anyone is told, then the card
 *   is replaced with the outcome, who decided and when. The write is the repository's `decideOnce`,
 *   one atomic statement on every engine, so within a process and across processes sharing the store
 *   exactly one decision is recorded; the loser reports the request as already decided. A later
 *   click, a replayed token, a token from another conversation or a made-up one changes nothing and
 *   gets a notice.
 * - A request not decided by its expiry resolves as `expired` (approvals: a denial; questions: no
 *   answer), and the card says so.
 * - Wake-ups go through the DecisionBus (./decision-bus.ts): a recorded decision is published, and
 *   every `wait` on that request is a subscription. With the SignalDecisionBus (bot/app.ts) a
 *   decision recorded by any process sharing the store wakes the waits on it at once, wherever they
 *   are; with the InProcessDecisionBus only this process's (another's is then seen by a click here
 *   that loses to it, or at expiry). No poll of the store.
 * - `wait` may be called again after a restart for the same request: it returns the stored decision,
 *   or waits for the remaining time. `reshowPending` posts a conversation's undecided cards again
 *   (same tokens); every copy of a card is updated with the outcome.
 * - Typed answers: whether a conversation has an open question that takes one is asked of the store
 *   (its undecided requests), so another process's question is seen too.
 * - Audit (when `audit` is given): approval_asked when a card is posted or shown again,
 *   approval_decided (outcome, by whom, on which platform, when) when a decision is recorded, and
 *   approval_refused for every click or decision that changed nothing (not an approver, already
 *   decided, a stale, forged or foreign token, expired), naming who tried (platform + user id).
 * - `decideAsHost`: the host operator (`gatehouse approvals decide`, through the service's attach
 *   socket) decides a request of an agent whose `approvers.cli` holds `local`; anyone else's request
 *   is refused (audited) with the reason. Recorded like a click: first decision wins, card updated.
 * - The requester rule (./requester.ts): where `requesterMayApprove` is false for the request's agent
 *   and platform, the run's starter (`starterId`, stored with every request) cannot decide its
 *   approvals, pickers or "Approve all" by click or from the host (for runs started at the terminal or
 *   headless, where the host operator is the starter): a private notice, nothing changes, and an
 *   approval_refused with reason `requester_may_not_approve`. Questions are not affected.
 * - Delivery (`approvalDelivery`, ./delivery.ts): a card may also (or instead) go to approvers'
 *   direct messages, on this platform or another. A click there is checked exactly as one here
 *   (token, once, expiry), plus: it must come from a direct conversation the card was sent to, by the
 *   person it was sent to, who is an approver on that platform; the requester rule applies to users
 *   of the request's own platform. Every copy (conversation, status line, direct messages) is
 *   updated with the outcome; approval_decided names `byPlatform` and, from a DM, `byConversation`.
 */
import { randomBytes } from 'node:crypto';
import type { Audit, RefusalReason } from '../audit.js';
import type { OutputResolver } from '../output.js';
import type { ApprovalRepo, Signals } from '../store/types.js';
import type { ProposalOption, QuestionSuggestion } from '../tools/types.js';
import { isApprover } from '../../policies/access.js';
import { approvalLayout, approveAllLayout, cardWithTokens, decidedCard, decisionForChoice, questionLayout, type Layout } from './cards.js';
import { InProcessDecisionBus, type DecisionBus } from './decision-bus.js';
import { ExpiryWatch } from './expiry-watch.js';
import { OpenRequests } from './open-requests.js';
import { ApprovalStore, type LoadedRequest, type StoredRequest } from './store.js';
import { Waits } from './waits.js';
import { CardDelivery, decidedCopies, platformName, type ApprovalDelivery, type DirectCards } from './delivery.js';
import { effectiveRequesterMayApprove, HOST_STARTED_PLATFORMS } from './requester.js';
import type { Telemetry } from '../telemetry/types.js';
import { alreadyDecided, describeWaitingFor, NOTICES, noticeFor, type ClickResult, type Decision } from './wording.js';
import type { Log } from '../log.js';

export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{16,40}$/;

/** Who `gatehouse approvals decide` decides as: the operator at the host (`approvers.cli: [local]`). */
export const HOST_OPERATOR = { id: 'local', name: 'host operator' } as const;

const platformOf = (key: string): string => key.slice(0, Math.max(0, key.indexOf(':')));

export function newToken(): string {
  return randomBytes(18).toString('base64url');
}

export interface ApprovalBrokerOptions {
  /** The store's approvals repository. */
  approvals: ApprovalRepo;
  /** How decisions wake waiting runs (default: in this process only). */
  bus?: DecisionBus;
  outputs: OutputResolver;
  /** Approver ids for an agent and platform, read at click time (config may change). */
  approversOf(agentName: string, platform: string): readonly string[];
  /** The agent's explicit `requesterMayApprove`, read at click time; undefined: the default rule (./requester.ts). */
  requesterMayApprove?(agentName: string): boolean | undefined;
  now?: () => number;
  log?: Log;
  audit?: Audit;
  /** Approvals decided and their wait, for metrics (agent/telemetry). */
  telemetry?: Pick<Telemetry, 'approvalDecided'>;
  /**
   * Processes share the store (PostgreSQL replicas): watch the expiry of every undecided request,
   * not only this process's waits (./expiry-watch.ts), through these signals. Started by
   * `watchExpiry`.
   */
  sharedExpiry?: Signals;
  /** Only this process creates requests on the store (Store.exclusive): typed replies skip the read (./open-requests.ts). */
  exclusiveStore?: boolean;
  /** approvalDelivery (./delivery.ts): the agent's setting, read when a card is posted, and the direct-message port. */
  deliveryOf?(agentName: string): ApprovalDelivery;
  direct?: DirectCards;
}

export interface ApprovalCardInput {
  /** Chosen by the caller so it can record the wait before the card exists. Default: a new token. */
  requestId?: string;
  conversationKey: string;
  platform: string;
  agentName: string;
  runId: string;
  title: string;
  body: string;
  preview?: string;
  /** Offer "Always approve" with this label (null: not offered). */
  alwaysLabel: string | null;
  options?: ProposalOption[];
  timeoutMs: number;
  /** Who started the run (platform user id): with `requesterMayApprove` false they cannot decide it. */
  starterId?: string;
}

export interface QuestionCardInput {
  requestId?: string;
  conversationKey: string;
  platform: string;
  agentName: string;
  runId: string;
  question: string;
  suggestions: QuestionSuggestion[];
  allowCustom: boolean;
  starterId: string;
  timeoutMs: number;
}

type Where = { requestId?: string; conversationKey: string; platform: string; agentName: string; runId: string };

export class ApprovalBroker {
  private readonly store: ApprovalStore;
  private readonly bus: DecisionBus;
  private readonly now: () => number;
  private readonly waits: Waits;
  private readonly expiryWatch: ExpiryWatch | undefined;
  /** Expiries in progress here (a wait's timer and the watch fire together): settled once. */
  private readonly expiring = new Map<string, Promise<void>>();
  private readonly open: OpenRequests | undefined;
  private readonly delivery: CardDelivery;

  constructor(private readonly opts: ApprovalBrokerOptions) {
    this.now = opts.now ?? Date.now;
    this.store = new ApprovalStore(opts.approvals, this.now);
    this.bus = opts.bus ?? new InProcessDecisionBus();
    this.open = opts.exclusiveStore ? new OpenRequests(() => this.store.allPending()) : undefined;
    this.delivery = new CardDelivery({
      outputs: opts.outputs,
      approversOf: opts.approversOf,
      requesterMayApprove: (agent, platform) => effectiveRequesterMayApprove(opts.requesterMayApprove?.(agent), opts.approversOf(agent, platform)),
      ...(opts.direct ? { direct: opts.direct } : {}),
      noteDirect: (id, copy) => this.store.setHandles(id, (h) => ({ directs: [...(h.directs ?? []).filter((d) => d.key !== copy.key), copy] })),
      ...(opts.deliveryOf ? { deliveryOf: (agent: string) => opts.deliveryOf!(agent) } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
    this.waits = new Waits({
      bus: this.bus,
      read: (id) => this.store.get(id),
      expire: (id) => this.expire(id),
      abort: (id, decision) => this.settle(id, decision),
      now: this.now,
      ...(opts.log ? { log: opts.log } : {}),
    });
    this.expiryWatch = opts.sharedExpiry
      ? new ExpiryWatch({
          signals: opts.sharedExpiry,
          store: this.store,
          expire: (id) => this.expire(id),
          now: this.now,
          ...(opts.log ? { log: opts.log } : {}),
        })
      : undefined;
  }

  /** Starts watching the expiry of every undecided request (with `sharedExpiry`; else nothing). */
  async watchExpiry(): Promise<void> {
    await this.expiryWatch?.start();
  }

  /** Posts an approval (or picker) card and stores it; returns the request id. */
  async askApproval(input: ApprovalCardInput): Promise<string> {
    return this.present(input, approvalLayout(input), input.timeoutMs, input.starterId !== undefined ? { starterId: input.starterId } : {});
  }

  /** Posts the extra "Approve all / Deny all" card for several approvals of one turn. */
  async askApproveAll(input: Omit<ApprovalCardInput, 'alwaysLabel' | 'options' | 'preview'>, members: string[]): Promise<string> {
    return this.present(input, approveAllLayout(input, members.length), input.timeoutMs, {
      members,
      ...(input.starterId !== undefined ? { starterId: input.starterId } : {}),
    });
  }

  async askQuestion(input: QuestionCardInput): Promise<string> {
    return this.present(input, questionLayout(input), input.timeoutMs, {
      starterId: input.starterId,
      allowCustom: input.allowCustom,
      suggestions: input.suggestions,
    });
  }

  private async present(
    input: Where,
    layout: Layout,
    timeoutMs: number,
    extra: Pick<StoredRequest, 'members' | 'starterId' | 'allowCustom' | 'suggestions'>,
  ): Promise<string> {
    const id = input.requestId ?? newToken();
    const createdAt = this.now();
    const tokens = layout.buttons.map(() => newToken());
    const card = cardWithTokens(layout, tokens);
    const request: StoredRequest = {
      id,
      kind: layout.kind,
      conversationKey: input.conversationKey,
      platform: input.platform,
      agentName: input.agentName,
      runId: input.runId,
      card,
      createdAt,
      expiresAt: createdAt + timeoutMs,
      ...extra,
    };
    // Stored before posting: a click can only come after the card exists, and must find its token.
    this.open?.created(input.conversationKey);
    await this.store.create(
      request,
      tokens.map((token, i) => ({ token, choice: layout.buttons[i]!.choice })),
    );
    this.expiryWatch?.noted(id, request.expiresAt);
    const { handle, ...copies } = await this.delivery.deliver(request, card);
    await this.store.replace({ ...request, cardHandle: handle, ...copies });
    // Decided between posting and storing the handles (a quick click, another process): every copy shows it.
    const stored = await this.store.get(id);
    if (stored?.decision)
      for (const c of decidedCopies(stored, (k) => decidedCard(k, stored.decision!))) await this.updateCard(stored, c.handle, c.card, c.key);
    this.auditAsked(request, false);
    return id;
  }

  /**
   * After a restart: shows every undecided, unexpired card of a conversation again (in the order
   * they were asked), so a person at a terminal, or one who scrolled away, sees what is waiting.
   * The same buttons (tokens) are posted; the earlier copy is decided along with the new one.
   * Returns how many were shown.
   */
  async reshowPending(conversationKey: string): Promise<number> {
    let n = 0;
    for (const id of await this.store.pending(conversationKey)) {
      const req = await this.store.get(id);
      if (!req || req.decision || this.now() >= req.expiresAt) continue;
      const handle = await this.opts.outputs(conversationKey).postCard(req.hereCard ?? req.card, { requestId: id });
      await this.store.setHandles(id, (h) => ({
        cardHandle: handle,
        earlierHandles: h.cardHandle !== undefined ? [...(h.earlierHandles ?? []), h.cardHandle] : h.earlierHandles,
      }));
      await this.showIfDecided(id, conversationKey, handle, req.hereCard ?? req.card);
      this.auditAsked(req, true);
      n++;
    }
    return n;
  }

  /** What a conversation waits for, for a "queued" notice: e.g. `an approval on write_file`. */
  async describeWaiting(conversationKey: string, openIds?: string[]): Promise<string | undefined> {
    for (const id of openIds ?? (await this.openIds(conversationKey))) {
      const req = await this.store.get(id);
      if (!req || req.decision || req.kind === 'approve_all') continue;
      return describeWaitingFor(req);
    }
    return undefined;
  }

  private auditAsked(req: StoredRequest, reshown: boolean): void {
    this.opts.audit?.({
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

  get(requestId: string): Promise<LoadedRequest | undefined> {
    return this.store.get(requestId);
  }

  /**
   * Resolves when the request is decided or expires. Safe to call again after a restart.
   * The abort signal (a /stop) settles the request as denied with a note.
   */
  wait(requestId: string, signal?: AbortSignal): Promise<Decision> {
    return this.waits.wait(requestId, signal);
  }

  private expire(requestId: string): Promise<void> {
    const running = this.expiring.get(requestId);
    if (running) return running;
    const work = (async () => {
      const req = await this.store.get(requestId);
      if (!req) return;
      await this.settle(requestId, { outcome: req.kind === 'question' ? 'unanswered' : 'expired', at: this.now() });
    })().finally(() => this.expiring.delete(requestId));
    this.expiring.set(requestId, work);
    return work;
  }

  /**
   * Decides a request without a click (expiry, /stop, or an "Always" that now covers it).
   * Returns false when it was already decided (here or by another process: that decision then
   * wakes this process's waits).
   */
  async settle(requestId: string, decision: Decision, byPlatform?: string): Promise<boolean> {
    const req = await this.store.get(requestId);
    if (!req) return false;
    if (req.decision) {
      this.wakeHere(requestId, req.decision);
      return false;
    }
    return this.record(req, decision, byPlatform);
  }

  /** A click from an adapter. Never throws for bad input: the result says what happened. */
  async click(action: {
    token: string;
    conversationKey: string;
    platform?: string;
    user: { id: string; name?: string; roles?: string[] };
  }): Promise<ClickResult> {
    const refused = (reason: RefusalReason, notice: string, req?: StoredRequest): ClickResult => {
      this.auditRefused(action.platform ?? platformOf(action.conversationKey), action.user, action.conversationKey, reason, req);
      return { accepted: false, notice };
    };
    if (!TOKEN_PATTERN.test(action.token)) return refused('bad_token', NOTICES.badToken);
    const entry = await this.store.byToken(action.token);
    if (!entry) return refused('stale_token', NOTICES.staleToken);
    const req = await this.store.get(entry.requestId);
    if (!req) return refused('stale_token', NOTICES.staleToken);
    // A card's copy in an approver's direct messages is clicked there: that conversation, that person, that platform.
    const direct = req.conversationKey === action.conversationKey ? undefined : req.directs?.find((d) => d.key === action.conversationKey);
    if (req.conversationKey !== action.conversationKey && !direct) return refused('other_conversation', NOTICES.otherConversation, req);
    if (req.decision) return refused('already_decided', this.foundDecided(req.id, req.decision).notice ?? '', req);
    const clickPlatform = direct?.platform ?? req.platform;
    if ((direct && direct.userId !== action.user.id) || !this.mayDecide(req, action.user, clickPlatform)) {
      return refused('not_approver', req.kind === 'question' ? NOTICES.questionNotYours : NOTICES.approvalNotYours, req);
    }
    // The starter is a user of the conversation's platform: ids of another platform are other people.
    if (clickPlatform === req.platform && req.starterId === action.user.id && !this.requesterMayApprove(req)) {
      return refused('requester_may_not_approve', NOTICES.requesterMayNotApprove, req);
    }
    if (this.now() >= req.expiresAt) {
      await this.record(req, { outcome: req.kind === 'question' ? 'unanswered' : 'expired', at: this.now() });
      return refused('expired', NOTICES.expired, req);
    }
    const chosen = decisionForChoice(req, entry.choice, action.user, this.now());
    if (!chosen) return refused('bad_token', NOTICES.badToken, req);
    const decision = direct ? { ...chosen, note: `from ${platformName(direct.platform)} direct messages` } : chosen;
    const byPlatform = action.platform ?? platformOf(action.conversationKey);
    if (!(await this.record(req, decision, byPlatform, direct?.key)))
      return refused('already_decided', alreadyDecided((await this.store.get(req.id))?.decision), req);
    if (req.kind === 'approve_all') {
      for (const member of req.members ?? []) await this.settle(member, { ...decision, note: 'via Approve all / Deny all' });
      return { accepted: true, notice: decision.outcome === 'approved' ? 'Approved all.' : 'Denied all.' };
    }
    return { accepted: true, notice: noticeFor(decision) };
  }

  /**
   * The host operator's decision (`gatehouse approvals decide ID approve|deny`): allowed only when
   * the request's agent lists `local` under `approvers.cli`. Approve is "once" (never "Always": that
   * is a choice for the card's own buttons); a picker cannot be decided here (it needs a choice).
   */
  async decideAsHost(requestId: string, verdict: 'approve' | 'deny'): Promise<ClickResult & { reason?: RefusalReason }> {
    const user = { id: HOST_OPERATOR.id, name: HOST_OPERATOR.name };
    const req = await this.store.get(requestId);
    const refused = (reason: RefusalReason, notice: string): ClickResult & { reason: RefusalReason } => {
      this.auditRefused('cli', user, req?.conversationKey ?? '', reason, req);
      return { accepted: false, notice, reason };
    };
    if (!req) return refused('no_such_request', `No request ${requestId} (decided more than a day ago, or never asked).`);
    if (!isApprover(user, this.opts.approversOf(req.agentName, 'cli'))) {
      return refused(
        'not_approver',
        `agent ${req.agentName} does not let the host operator decide: add \`cli: [local]\` to agents.${req.agentName}.approvers in gatehouse.yaml (then \`gatehouse reload\`).`,
      );
    }
    if (req.decision) return refused('already_decided', this.foundDecided(req.id, req.decision).notice ?? 'Already decided.');
    if (HOST_STARTED_PLATFORMS.includes(req.platform) && !this.requesterMayApprove(req)) {
      return refused(
        'requester_may_not_approve',
        `${NOTICES.requesterMayNotApprove} (This run was started from the host, so the host operator is its requester.)`,
      );
    }
    if (this.now() >= req.expiresAt) {
      await this.record(req, { outcome: req.kind === 'question' ? 'unanswered' : 'expired', at: this.now() });
      return refused('expired', NOTICES.expired);
    }
    if (req.kind === 'question' || req.kind === 'picker') {
      return refused('not_a_choice', `${req.kind} ${requestId} needs a choice or an answer: decide it on its card (approve/deny is for approvals).`);
    }
    const decision: Decision = {
      outcome: verdict === 'approve' ? 'approved' : 'denied',
      by: user.id,
      byName: user.name,
      at: this.now(),
      note: 'from the host',
    };
    if (!(await this.record(req, decision, 'cli'))) return refused('already_decided', alreadyDecided((await this.store.get(req.id))?.decision));
    if (req.kind === 'approve_all') {
      for (const member of req.members ?? []) await this.settle(member, { ...decision, note: 'via Approve all / Deny all, from the host' });
    }
    return { accepted: true, notice: noticeFor(decision) };
  }

  private auditRefused(platform: string, user: { id: string; name?: string }, conversation: string, reason: RefusalReason, req?: StoredRequest): void {
    this.opts.audit?.({
      event: 'approval_refused',
      platform,
      userId: user.id,
      ...(user.name !== undefined ? { userName: user.name } : {}),
      conversation: req?.conversationKey ?? conversation,
      reason,
      ...(req ? { requestId: req.id, agent: req.agentName, kind: req.kind } : {}),
    });
  }

  /** What each button of a request means (`once`, `always`, `deny`, `option:<id>`, `answer:<i>`, ...), in card order. */
  async buttonChoices(requestId: string): Promise<Array<{ token: string; label: string; choice: string }>> {
    const req = await this.store.get(requestId);
    const out: Array<{ token: string; label: string; choice: string }> = [];
    for (const b of req?.card.buttons ?? []) {
      const entry = await this.store.byToken(b.token);
      if (entry?.requestId === requestId) out.push({ token: b.token, label: b.label, choice: entry.choice });
    }
    return out;
  }

  /**
   * Decides a request for a caller the conversation itself already trusts, without the approver check:
   * a headless run's own client (the operator at `gatehouse run`, or a local caller holding the
   * service's token). `pick`: a button's token, or a typed answer (questions that allow one; null or
   * empty = no answer). First decision wins, as with clicks.
   */
  async decideAs(
    requestId: string,
    conversationKey: string,
    pick: { token: string } | { answer: string | null },
    user: { id: string; name?: string },
  ): Promise<ClickResult> {
    const req = await this.store.get(requestId);
    const refused = (reason: RefusalReason, notice: string): ClickResult => {
      this.auditRefused('cli', user, conversationKey, reason, req);
      return { accepted: false, notice };
    };
    if (!req || req.conversationKey !== conversationKey) return refused('no_such_request', NOTICES.noSuchRequest);
    if (req.decision) return refused('already_decided', this.foundDecided(req.id, req.decision).notice ?? '');
    let decision: Decision | null;
    if ('token' in pick) {
      const entry = await this.store.byToken(pick.token);
      decision = entry?.requestId === requestId ? decisionForChoice(req, entry.choice, user, this.now()) : null;
    } else if (pick.answer === null || pick.answer.trim() === '') {
      decision = { outcome: req.kind === 'question' ? 'unanswered' : 'denied', by: user.id, byName: user.name, at: this.now(), note: 'no answer given' };
    } else if (req.kind === 'question' && req.allowCustom) {
      decision = { outcome: 'answered', answer: pick.answer, by: user.id, byName: user.name, at: this.now() };
    } else decision = null;
    if (!decision) return refused('not_a_choice', NOTICES.notAChoice);
    if (!(await this.record(req, decision, 'cli'))) return refused('already_decided', alreadyDecided(undefined));
    return { accepted: true, notice: noticeFor(decision) };
  }

  /**
   * A typed message in a conversation with an open question that allows custom answers.
   * Returns true when it answered one (the message is then not a new turn). One read of the
   * conversation's undecided requests when it has none (the common case), none on an exclusive store.
   */
  async answerTyped(conversationKey: string, user: { id: string; name?: string; roles?: string[] }, text: string, openIds?: string[]): Promise<boolean> {
    for (const id of openIds ?? (await this.openIds(conversationKey))) {
      const req = await this.store.get(id);
      if (!req || req.decision || req.kind !== 'question' || !req.allowCustom) continue;
      if (!this.mayDecide(req, user)) continue;
      if (await this.settle(id, { outcome: 'answered', answer: text, by: user.id, byName: user.name, at: this.now() }, platformOf(conversationKey)))
        return true;
    }
    return false;
  }

  /**
   * A run of this conversation was resumed after a restart. Nothing to do now: answerTyped asks the
   * store, which knows the resumed run's open question. Kept for the runner's call.
   */
  noteResumed(_conversationKey: string): void {}

  /** pendingIds, with no read when the in-process index knows there are none (`openIds` of the two above). */
  async openIds(key: string): Promise<string[]> {
    if (this.open && !(await this.open.mayHave(key))) return [];
    const mark = this.open?.mark(key);
    const ids = await this.store.pending(key);
    if (ids.length === 0) this.open?.nonePending(key, mark);
    return ids;
  }

  /** Pending (undecided) request ids of a conversation, oldest first. */
  pendingIds(conversationKey: string): Promise<string[]> {
    return this.store.pending(conversationKey);
  }

  /** False only for approvals (not questions) of an agent and platform where the requester may not approve. */
  private requesterMayApprove(req: StoredRequest): boolean {
    if (req.kind === 'question') return true;
    return effectiveRequesterMayApprove(this.opts.requesterMayApprove?.(req.agentName), this.opts.approversOf(req.agentName, req.platform));
  }

  private mayDecide(req: StoredRequest, user: { id: string; roles?: string[] }, platform = req.platform): boolean {
    if (isApprover(user, this.opts.approversOf(req.agentName, platform))) return true;
    if (platform !== req.platform) return false;
    return req.kind === 'question' && req.starterId === user.id;
  }

  /**
   * Writes the decision, replaces the card, wakes the waiters (in that order). False when it was
   * decided first (another click, or another process sharing the store): that decision stands, and
   * wakes this process's waits.
   */
  private async record(req: LoadedRequest, decision: Decision, byPlatform?: string, byConversation?: string): Promise<boolean> {
    if (!(await this.store.decideOnce(req, decision))) {
      const won = (await this.store.get(req.id))?.decision;
      if (won) this.wakeHere(req.id, won);
      return false;
    }
    this.opts.audit?.({
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
    this.opts.telemetry?.approvalDecided({ kind: req.kind, outcome: decision.outcome, waitMs: Math.max(0, decision.at - req.createdAt) });
    // The handles as stored now, after the decision: `req` may have been read before the card's
    // handle was stored (a click right after the post); showIfDecided covers the other order.
    const h = (await this.store.get(req.id)) ?? req;
    // Earlier copies first (shown before a restart), then the current one, then direct messages'.
    for (const c of decidedCopies(h, (card) => decidedCard(card, decision))) await this.updateCard(req, c.handle, c.card, c.key);
    await this.bus.publish(req.id, decision);
    // A bus that reaches only other processes still settles this one's waits.
    this.wakeHere(req.id, decision);
    return true;
  }

  /** A click between posting a card and storing its handle found no handle to edit: edit it here. */
  private async showIfDecided(id: string, conversationKey: string, handle: string, card: StoredRequest['card']): Promise<void> {
    const req = await this.store.get(id);
    if (req?.decision) await this.updateCard(req, handle, decidedCard(card, req.decision));
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
      this.opts.log?.('warn', `could not update card ${req.id}: ${(err as Error).message}`);
    }
  }

  /** A click found the request decided (maybe by another process): that decision wakes the waits here too. */
  private foundDecided(requestId: string, decision: Decision): ClickResult {
    this.wakeHere(requestId, decision);
    return { accepted: false, notice: alreadyDecided(decision) };
  }

  private wakeHere(requestId: string, decision: Decision): void {
    this.waits.wakeHere(requestId, decision);
  }

  /** Stops expiry timers (shutdown). Pending requests stay stored and resume after a restart. */
  close(): void {
    this.expiryWatch?.stop();
    this.waits.close();
  }
}
