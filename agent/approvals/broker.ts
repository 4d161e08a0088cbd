/**
 * The approval broker: turns "a human must decide" into a card with buttons, and a click back into a
 * decision, exactly once. It wires the parts of this folder together and is what the rest of the
 * bot holds (re-exported by agent/approvals/index.ts).
 *
 * Contract:
 * - Asking (`askApproval`, `askApproveAll`, `askQuestion`): the request, with one opaque token per
 *   button (`newToken`: 144 random bits, 24 base64url chars), is stored before its card is posted
 *   (./store.ts), so a click can only come after its token is findable; then the card is delivered
 *   (`approvalDelivery`, ./delivery.ts: the conversation, approvers' direct messages, or both) and
 *   its handles stored. A decision that lands in between (a quick click, another process) still
 *   reaches every copy. Audited as approval_asked (./audit-events.ts).
 * - Deciding: a click (./clicks.ts), the host operator or a headless run's own client
 *   (./host-decisions.ts), a typed answer to an open question (./typed-answers.ts), expiry, /stop
 *   or an "Always" (`settle`) all end in the recorder (./recorder.ts): first decision wins, written
 *   to the store before anyone is told, then every copy of the card shows the outcome, who decided
 *   and when. Who may decide: ./authority.ts and the requester rule (./requester.ts).
 * - A request not decided by its expiry resolves as `expired` (approvals: a denial; questions: no
 *   answer), and the card says so; with `sharedSignals` every process watches every undecided
 *   request's expiry (./expiry-watch.ts).
 * - Typed replies (`openIds`): a conversation's open requests are read from the store only when
 *   ./open-requests.ts says it may have some: on an exclusive store from what this process
 *   created, with `sharedSignals` from what every process announced (./announce.ts) before
 *   posting its card.
 * - Wake-ups go through the DecisionBus (./decision-bus.ts): a recorded decision is published, and
 *   every `wait` (./waits.ts) is a subscription. With the SignalDecisionBus (bot/service/app.ts) a decision
 *   recorded by any process sharing the store wakes the waits on it at once, wherever they are;
 *   with the InProcessDecisionBus only this process's (another's is then seen by a click here that
 *   loses to it, or at expiry). No poll of the store.
 * - `wait` may be called again after a restart for the same request: it returns the stored
 *   decision, or waits for the remaining time. `reshowPending` (./reshow.ts) posts a conversation's
 *   undecided cards again (same tokens).
 * - `close` stops expiry timers (shutdown); pending requests stay stored and resume after a restart.
 */
import { randomBytes } from 'node:crypto';
import type { RefusalReason } from '../audit.js';
import { auditAsked } from './audit-events.js';
import { approvalLayout, approveAllLayout, cardWithTokens, questionLayout, type Layout } from './cards.js';
import { handleClick, type ClickAction } from './clicks.js';
import { InProcessDecisionBus, type DecisionBus } from './decision-bus.js';
import { CardDelivery } from './delivery.js';
import { ExpiryWatch } from './expiry-watch.js';
import { buttonChoices, decideAs, decideAsHost } from './host-decisions.js';
import { OpenRequests } from './open-requests.js';
import { announceRequest } from './announce.js';
import { DecisionRecorder, type DecideContext } from './recorder.js';
import { effectiveRequesterMayApprove } from './requester.js';
import { reshowPending, settleUnawaited } from './reshow.js';
import { ApprovalStore, type LoadedRequest, type StoredRequest } from './store.js';
import { answerTyped, describeWaiting, openIds } from './typed-answers.js';
import { Waits } from './waits.js';
import type { ClickResult, Decision } from './wording.js';
import type { OutputResolver } from '../run/output.js';
import type { ApprovalRepo, Signals } from '../store/types.js';
import type { ProposalOption, QuestionSuggestion } from '../tools/types.js';
import type { ApprovalDelivery, DirectCards } from './delivery.js';
import type { Audit } from '../audit.js';
import type { Telemetry } from '../telemetry/types.js';
import type { Log } from '../log.js';

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
   * Processes share the store (PostgreSQL replicas), and these are its signals: watch the expiry of
   * every undecided request, not only this process's waits (./expiry-watch.ts, started by
   * `watchExpiry`), and hear of the requests every process creates (./open-requests.ts).
   */
  sharedSignals?: Signals;
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
  private readonly recorder: DecisionRecorder;
  private readonly expiryWatch: ExpiryWatch | undefined;
  private readonly open: OpenRequests | undefined;
  private readonly delivery: CardDelivery;
  /** What every way of deciding works with (./recorder.ts). */
  private readonly deciding: DecideContext;

  constructor(private readonly opts: ApprovalBrokerOptions) {
    this.now = opts.now ?? Date.now;
    this.store = new ApprovalStore(opts.approvals, this.now);
    this.bus = opts.bus ?? new InProcessDecisionBus();
    const allPending = () => this.store.allPending();
    this.open = opts.sharedSignals
      ? new OpenRequests({ allPending, signals: opts.sharedSignals })
      : opts.exclusiveStore
        ? new OpenRequests({ allPending })
        : undefined;
    this.recorder = new DecisionRecorder({
      store: this.store,
      bus: this.bus,
      outputs: opts.outputs,
      now: this.now,
      wakeHere: (id, decision) => this.waits.wakeHere(id, decision),
      ...(opts.audit ? { audit: opts.audit } : {}),
      ...(opts.telemetry ? { telemetry: opts.telemetry } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
    // The options are read at decision time: config may change while a card waits.
    this.deciding = { store: this.store, recorder: this.recorder, who: opts, now: this.now, ...(opts.audit ? { audit: opts.audit } : {}) };
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
      expire: (id) => this.recorder.expire(id),
      abort: (id, decision) => this.recorder.settle(id, decision),
      now: this.now,
      ...(opts.log ? { log: opts.log } : {}),
    });
    this.expiryWatch = opts.sharedSignals
      ? new ExpiryWatch({
          signals: opts.sharedSignals,
          store: this.store,
          expire: (id) => this.recorder.expire(id),
          now: this.now,
          ...(opts.log ? { log: opts.log } : {}),
        })
      : undefined;
  }

  /** Starts watching the expiry of every undecided request (with `sharedSignals`; else nothing). */
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
    this.open?.creating(input.conversationKey);
    await this.store.create(
      request,
      tokens.map((token, i) => ({ token, choice: layout.buttons[i]!.choice })),
    );
    // Before the card: a typed reply to it, taken by any process, finds the request announced.
    if (this.opts.sharedSignals) await announceRequest(this.opts.sharedSignals, id, input.conversationKey, this.opts.log);
    this.expiryWatch?.noted(id, request.expiresAt);
    const { handle, ...copies } = await this.delivery.deliver(request, card);
    await this.store.replace({ ...request, cardHandle: handle, ...copies });
    // Decided between posting and storing the handles (a quick click, another process): every copy shows it.
    const stored = await this.store.get(id);
    if (stored?.decision) await this.recorder.showDecided(stored, stored.decision);
    auditAsked(this.opts.audit, request, false);
    return id;
  }

  /**
   * After a restart: shows every undecided, unexpired card of a conversation again (./reshow.ts).
   * Returns how many were shown.
   */
  reshowPending(conversationKey: string): Promise<number> {
    return reshowPending(
      { store: this.store, recorder: this.recorder, outputs: this.opts.outputs, now: this.now, ...(this.opts.audit ? { audit: this.opts.audit } : {}) },
      conversationKey,
    );
  }

  /**
   * After a restart, before `reshowPending` (./reshow.ts): undecided requests no resumed run waits
   * on again are settled as denied with `note`. `awaited`: per resumed run id, the requests it waits
   * on. Looked at: with `run`, that run's requests of its conversation (a replica taking one run
   * over); with `conversations`, every undecided request of the conversations it accepts (a store
   * this process alone runs them on, at its start).
   */
  async settleUnawaited(
    awaited: ReadonlyMap<string, ReadonlySet<string>>,
    note: string,
    scope: { run: { conversationKey: string; runId: string } } | { conversations: (key: string) => boolean },
  ): Promise<number> {
    const deps = { store: this.store, recorder: this.recorder, now: this.now };
    if ('run' in scope) return settleUnawaited(deps, await this.store.pending(scope.run.conversationKey), awaited, note, scope.run.runId);
    const ids = (await this.store.allPending()).filter((p) => scope.conversations(p.conversation)).map((p) => p.id);
    return settleUnawaited(deps, ids, awaited, note);
  }

  /** What a conversation waits for, for a "queued" notice: e.g. `an approval on write_file`. */
  async describeWaiting(conversationKey: string, openIds?: string[]): Promise<string | undefined> {
    return describeWaiting(this.store, openIds ?? (await this.openIds(conversationKey)));
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

  /**
   * Decides a request without a click (expiry, /stop, or an "Always" that now covers it).
   * Returns false when it was already decided (here or by another process: that decision then
   * wakes this process's waits).
   */
  settle(requestId: string, decision: Decision, byPlatform?: string): Promise<boolean> {
    return this.recorder.settle(requestId, decision, byPlatform);
  }

  /** A click from an adapter (./clicks.ts). Never throws for bad input: the result says what happened. */
  click(action: ClickAction): Promise<ClickResult> {
    return handleClick(this.deciding, action);
  }

  /** The host operator's decision (`gatehouse approvals decide ID approve|deny`, ./host-decisions.ts). */
  decideAsHost(requestId: string, verdict: 'approve' | 'deny'): Promise<ClickResult & { reason?: RefusalReason }> {
    return decideAsHost(this.deciding, requestId, verdict);
  }

  /** What each button of a request means (`once`, `always`, `deny`, `option:<id>`, `answer:<i>`, ...), in card order. */
  buttonChoices(requestId: string): Promise<Array<{ token: string; label: string; choice: string }>> {
    return buttonChoices(this.store, requestId);
  }

  /**
   * Decides a request for a caller the conversation itself already trusts, without the approver
   * check (./host-decisions.ts): a button's token, or a typed answer. First decision wins.
   */
  decideAs(
    requestId: string,
    conversationKey: string,
    pick: { token: string } | { answer: string | null },
    user: { id: string; name?: string },
  ): Promise<ClickResult> {
    return decideAs(this.deciding, requestId, conversationKey, pick, user);
  }

  /**
   * A typed message in a conversation with an open question that allows custom answers
   * (./typed-answers.ts). Returns true when it answered one (the message is then not a new turn).
   */
  async answerTyped(conversationKey: string, user: { id: string; name?: string; roles?: string[] }, text: string, openIds?: string[]): Promise<boolean> {
    return answerTyped(this.deciding, openIds ?? (await this.openIds(conversationKey)), conversationKey, user, text);
  }

  /**
   * A run of this conversation was resumed after a restart. Nothing to do now: answerTyped asks the
   * store, which knows the resumed run's open question. Kept for the runner's call.
   */
  noteResumed(_conversationKey: string): void {}

  /** pendingIds, with no read when the in-process index knows there are none (`openIds` of the two above). */
  openIds(key: string): Promise<string[]> {
    return openIds(this.store, this.open, key);
  }

  /** Pending (undecided) request ids of a conversation, oldest first. */
  pendingIds(conversationKey: string): Promise<string[]> {
    return this.store.pending(conversationKey);
  }

  /** Stops expiry timers (shutdown). Pending requests stay stored and resume after a restart. */
  close(): void {
    this.expiryWatch?.stop();
    this.waits.close();
  }
}
