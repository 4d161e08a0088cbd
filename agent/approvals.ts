/**
 * The approval broker: turns "a human must decide" into a card with buttons, and a click back into a
 * decision, exactly once.
 *
 * Contract:
 * - Each button carries an opaque token (144 random bits, 24 base64url chars). What it means lives in
 *   the store (`approvals` namespace): token -> request id + choice; request id -> the request, its
 *   card, its state. So a click after a restart still resolves, and nothing on the button can be forged.
 * - Only an authorized user decides: for approvals a bound approver of that agent and platform; for
 *   questions the person who started the run or a bound approver. Anyone else gets a private notice.
 * - First valid click wins. The decision is written to the store before anyone is told, then the card
 *   is replaced with the outcome, who decided and when. With `decideOnce` (a shared SQLite store) the
 *   write is one atomic compare-and-set, so across processes too exactly one decision is recorded;
 *   the loser reports the request as already decided. A later click, a replayed token, a token from
 *   another conversation or a made-up one changes nothing and gets a notice.
 * - A request not decided by its expiry resolves as `expired` (approvals: a denial; questions: no
 *   answer), and the card says so.
 * - `wait` may be called again after a restart for the same request: it returns the stored decision,
 *   or waits for the remaining time. `reshowPending` posts a conversation's undecided cards again
 *   (same tokens); every copy of a card is updated with the outcome.
 * - Audit (when `audit` is given): approval_asked when a card is posted or shown again,
 *   approval_decided (outcome, by whom, when) when a decision is recorded.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Audit } from './audit.js';
import type { Card, CardButton } from './events.js';
import type { KV } from './kv.js';
import type { OutputResolver } from './output.js';
import type { ProposalOption, QuestionSuggestion } from './tools/types.js';
import { isApprover } from '../policies/access.js';

export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{16,40}$/;

export type ApprovalOutcome = 'approved' | 'always' | 'denied' | 'expired' | 'answered' | 'unanswered';

const Decision = z.object({
  outcome: z.enum(['approved', 'always', 'denied', 'expired', 'answered', 'unanswered']),
  by: z.string().optional(),
  byName: z.string().optional(),
  at: z.number(),
  selectedOptionId: z.string().optional(),
  answer: z.string().optional(),
  note: z.string().optional(),
});
export type Decision = z.infer<typeof Decision>;

const Request = z.object({
  id: z.string(),
  kind: z.enum(['approval', 'picker', 'question', 'approve_all']),
  conversationKey: z.string(),
  platform: z.string(),
  agentName: z.string(),
  runId: z.string(),
  card: z.custom<Card>((v) => typeof v === 'object' && v !== null),
  cardHandle: z.string().optional(),
  createdAt: z.number(),
  expiresAt: z.number(),
  decision: Decision.optional(),
  /** question: who started the run (may answer besides approvers). */
  starterId: z.string().optional(),
  allowCustom: z.boolean().optional(),
  /** approve_all: the approval requests it decides. */
  members: z.array(z.string()).optional(),
  /** Handles of earlier copies of the card (shown again after a restart); decided with it. */
  earlierHandles: z.array(z.string()).optional(),
});
export type StoredRequest = z.infer<typeof Request>;

const TokenEntry = z.object({ requestId: z.string(), choice: z.string() });

export interface ClickResult {
  accepted: boolean;
  notice?: string;
}

export interface ApprovalBrokerOptions {
  kv: KV;
  outputs: OutputResolver;
  /** Approver ids for an agent and platform, read at click time (config may change). */
  approversOf(agentName: string, platform: string): readonly string[];
  now?: () => number;
  log?: (msg: string) => void;
  /**
   * Writes `next` (the request with its decision) at `r:<id>` only if the stored request has no
   * decision yet, in one atomic step; true when it wrote. Without it, a read then a write (enough
   * within one process, where decisions are serialized per request).
   */
  decideOnce?: (requestId: string, next: StoredRequest, ttlMs: number) => Promise<boolean>;
  audit?: Audit;
}

interface Waiter {
  resolve(d: Decision): void;
  timer?: NodeJS.Timeout;
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

export function newToken(): string {
  return randomBytes(18).toString('base64url');
}

export class ApprovalBroker {
  private readonly waiters = new Map<string, Waiter[]>();
  /** Serializes decisions per request inside this process (first click wins). */
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly now: () => number;
  private closed = false;
  /**
   * Conversations that may have an open question taking typed answers. Lets answerTyped skip a
   * store read for every ordinary message; filled when a question is asked or waited on again
   * after a restart, cleared when the conversation has no open question left.
   */
  private readonly typedAnswerable = new Set<string>();

  constructor(private readonly opts: ApprovalBrokerOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Posts an approval (or picker) card and stores it; returns the request id. */
  async askApproval(input: ApprovalCardInput): Promise<string> {
    const buttons: Array<{ label: string; style: CardButton['style']; choice: string }> = [];
    if (input.options && input.options.length > 0) {
      for (const o of input.options) buttons.push({ label: o.label, style: 'primary', choice: `option:${o.id}` });
    } else {
      buttons.push({ label: 'Approve once', style: 'primary', choice: 'once' });
      if (input.alwaysLabel) buttons.push({ label: input.alwaysLabel, style: 'default', choice: 'always' });
    }
    buttons.push({ label: 'Deny', style: 'danger', choice: 'deny' });
    const kind = input.options && input.options.length > 0 ? 'picker' : 'approval';
    const card: Omit<Card, 'buttons'> = { kind, title: input.title, body: input.body };
    if (input.preview !== undefined) card.preview = input.preview;
    return this.present(input, kind, card, buttons, input.timeoutMs, {});
  }

  /** Posts the extra "Approve all / Deny all" card for several approvals of one turn. */
  async askApproveAll(input: Omit<ApprovalCardInput, 'alwaysLabel' | 'options' | 'preview'>, members: string[]): Promise<string> {
    return this.present(
      input,
      'approve_all',
      { kind: 'approve_all', title: input.title, body: input.body },
      [
        { label: `Approve all ${members.length}`, style: 'primary', choice: 'all_approve' },
        { label: 'Deny all', style: 'danger', choice: 'all_deny' },
      ],
      input.timeoutMs,
      { members },
    );
  }

  async askQuestion(input: QuestionCardInput): Promise<string> {
    const buttons = input.suggestions.map((s, i) => ({ label: s.label, style: 'default' as const, choice: `answer:${i}` }));
    const lines = [input.question];
    for (const s of input.suggestions) if (s.description) lines.push(`• ${s.label}: ${s.description}`);
    if (input.allowCustom) lines.push(input.suggestions.length ? '(or type your own answer)' : '(type your answer)');
    return this.present(
      input,
      'question',
      { kind: 'question', title: 'Question', body: lines.join('\n') },
      buttons,
      input.timeoutMs,
      { starterId: input.starterId, allowCustom: input.allowCustom, suggestions: input.suggestions },
    );
  }

  private async present(
    input: { requestId?: string; conversationKey: string; platform: string; agentName: string; runId: string },
    kind: StoredRequest['kind'],
    cardBase: Omit<Card, 'buttons'>,
    buttons: Array<{ label: string; style: CardButton['style']; choice: string }>,
    timeoutMs: number,
    extra: { members?: string[]; starterId?: string; allowCustom?: boolean; suggestions?: QuestionSuggestion[] },
  ): Promise<string> {
    const id = input.requestId ?? newToken();
    const createdAt = this.now();
    const withTokens = buttons.map((b) => ({ ...b, token: newToken() }));
    const card: Card = { ...cardBase, buttons: withTokens.map(({ token, label, style }) => ({ token, label, style })) };
    const request: StoredRequest = {
      id,
      kind,
      conversationKey: input.conversationKey,
      platform: input.platform,
      agentName: input.agentName,
      runId: input.runId,
      card,
      createdAt,
      expiresAt: createdAt + timeoutMs,
    };
    if (extra.members) request.members = extra.members;
    if (extra.starterId !== undefined) request.starterId = extra.starterId;
    if (extra.allowCustom !== undefined) request.allowCustom = extra.allowCustom;
    // Suggestions' values are kept server-side; the button carries only the token.
    const ttl = timeoutMs + 24 * 3600_000; // keep decided requests a day so late clicks get a clear notice
    await this.opts.kv.set(`r:${id}`, { ...request, suggestions: extra.suggestions }, ttl);
    for (const b of withTokens) {
      await this.opts.kv.set(`t:${b.token}`, { requestId: id, choice: b.choice }, ttl);
    }
    await this.addPending(input.conversationKey, id, ttl);
    if (extra.allowCustom) this.typedAnswerable.add(input.conversationKey);
    // Stored before posting: a click can only come after the card exists, and must find its token.
    const handle = await this.opts.outputs(input.conversationKey).postCard(card, { requestId: id });
    await this.update(id, (r) => ({ ...r, cardHandle: handle }));
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
    for (const id of await this.pendingIds(conversationKey)) {
      const req = await this.get(id);
      if (!req || req.decision || this.now() >= req.expiresAt) continue;
      const handle = await this.opts.outputs(conversationKey).postCard(req.card, { requestId: id });
      await this.update(id, (r) => ({
        ...r,
        cardHandle: handle,
        ...(r.cardHandle !== undefined ? { earlierHandles: [...(r.earlierHandles ?? []), r.cardHandle] } : {}),
      }));
      if (req.kind === 'question' && req.allowCustom) this.typedAnswerable.add(conversationKey);
      this.auditAsked(req, true);
      n++;
    }
    return n;
  }

  /** What a conversation waits for, for a "queued" notice: e.g. `an approval on write_file`. */
  async describeWaiting(conversationKey: string): Promise<string | undefined> {
    for (const id of await this.pendingIds(conversationKey)) {
      const req = await this.get(id);
      if (!req || req.decision || req.kind === 'approve_all') continue;
      if (req.kind === 'question') return `an answer to "${firstLineOf(req.card.body)}"`;
      const subject = /^Approve (.+)\?$/.exec(req.card.title)?.[1] ?? req.card.title;
      return `${req.kind === 'picker' ? 'a choice' : 'an approval'} on ${subject}`;
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

  async get(requestId: string): Promise<(StoredRequest & { suggestions?: QuestionSuggestion[] }) | undefined> {
    const parsed = Request.extend({
      suggestions: z.array(z.object({ value: z.string(), label: z.string(), description: z.string().optional() })).optional(),
    }).safeParse(await this.opts.kv.get(`r:${requestId}`));
    return parsed.success ? (parsed.data as StoredRequest & { suggestions?: QuestionSuggestion[] }) : undefined;
  }

  /**
   * Resolves when the request is decided or expires. Safe to call again after a restart.
   * The abort signal (a /stop) settles the request as denied with a note.
   */
  async wait(requestId: string, signal?: AbortSignal): Promise<Decision> {
    const req = await this.get(requestId);
    // After close() a wait parks for good (its request stays stored for the next start), and starts
    // no timer that would keep a stopping process alive.
    if (this.closed) return new Promise<Decision>(() => undefined);
    if (!req) return { outcome: 'expired', at: this.now(), note: 'the request is no longer stored' };
    if (req.decision) return req.decision;
    if (req.kind === 'question' && req.allowCustom) this.typedAnswerable.add(req.conversationKey);
    return new Promise<Decision>((resolve) => {
      const waiter: Waiter = { resolve };
      const remaining = Math.max(0, req.expiresAt - this.now());
      const expired = (): Decision => ({ outcome: req.kind === 'question' ? 'unanswered' : 'expired', at: this.now() });
      waiter.timer = setTimeout(() => this.inBackground(requestId, this.expire(requestId), expired()), remaining);
      const list = this.waiters.get(requestId) ?? [];
      list.push(waiter);
      this.waiters.set(requestId, list);
      if (signal) {
        const onAbort = () => {
          const decision: Decision = { outcome: req.kind === 'question' ? 'unanswered' : 'denied', at: this.now(), note: 'the run was stopped' };
          this.inBackground(requestId, this.settle(requestId, decision), decision);
        };
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      }
    });
  }

  /**
   * Expiry and /stop settle a request outside any caller. If the store fails, that is logged, and
   * the waiting run is released all the same (with `fallback`): it must not hang on a store error.
   */
  private inBackground(requestId: string, work: Promise<unknown>, fallback: Decision): void {
    work.catch((err: unknown) => {
      this.opts.log?.(`could not record that request ${requestId} was ${fallback.outcome}: ${(err as Error).message}`);
      this.wake(requestId, fallback);
    });
  }

  private async expire(requestId: string): Promise<void> {
    const req = await this.get(requestId);
    if (!req) return;
    await this.settle(requestId, { outcome: req.kind === 'question' ? 'unanswered' : 'expired', at: this.now() });
  }

  /**
   * Decides a request without a click (expiry, /stop, or an "Always" that now covers it).
   * Returns false when it was already decided.
   */
  async settle(requestId: string, decision: Decision): Promise<boolean> {
    return this.locked(requestId, async () => {
      const req = await this.get(requestId);
      if (!req || req.decision) return false;
      return this.record(req, decision);
    });
  }

  /** A click from an adapter. Never throws for bad input: the result says what happened. */
  async click(action: { token: string; conversationKey: string; user: { id: string; name?: string; roles?: string[] } }): Promise<ClickResult> {
    if (!TOKEN_PATTERN.test(action.token)) return { accepted: false, notice: 'This button is not valid.' };
    const entry = TokenEntry.safeParse(await this.opts.kv.get(`t:${action.token}`));
    if (!entry.success) return { accepted: false, notice: 'This button is no longer valid.' };
    const { requestId, choice } = entry.data;
    return this.locked(requestId, async () => {
      const req = await this.get(requestId);
      if (!req) return { accepted: false, notice: 'This button is no longer valid.' };
      if (req.conversationKey !== action.conversationKey) {
        return { accepted: false, notice: 'This button belongs to another conversation.' };
      }
      if (req.decision) return { accepted: false, notice: `Already decided: ${describe(req.decision)}.` };
      if (!this.mayDecide(req, action.user)) {
        return {
          accepted: false,
          notice:
            req.kind === 'question'
              ? 'Only the person who asked, or an approver, can answer this.'
              : 'Only a bound approver can decide this. Nothing was changed.',
        };
      }
      if (this.now() >= req.expiresAt) {
        await this.record(req, { outcome: req.kind === 'question' ? 'unanswered' : 'expired', at: this.now() });
        return { accepted: false, notice: 'This request has expired.' };
      }
      const decision = this.decisionFor(req, choice, action.user);
      if (!decision) return { accepted: false, notice: 'This button is not valid.' };
      const alreadyDecided = async (): Promise<ClickResult> => {
        const now = await this.get(requestId);
        return { accepted: false, notice: now?.decision ? `Already decided: ${describe(now.decision)}.` : 'Already decided.' };
      };
      if (req.kind === 'approve_all') {
        if (!(await this.record(req, decision))) return alreadyDecided();
        for (const member of req.members ?? []) {
          await this.settleUnlocked(member, { ...decision, note: 'via Approve all / Deny all' });
        }
        return { accepted: true, notice: decision.outcome === 'approved' ? 'Approved all.' : 'Denied all.' };
      }
      if (!(await this.record(req, decision))) return alreadyDecided();
      return { accepted: true, notice: noticeFor(decision) };
    });
  }

  /** What each button of a request means (`once`, `always`, `deny`, `option:<id>`, `answer:<i>`, ...), in card order. */
  async buttonChoices(requestId: string): Promise<Array<{ token: string; label: string; choice: string }>> {
    const req = await this.get(requestId);
    const out: Array<{ token: string; label: string; choice: string }> = [];
    for (const b of req?.card.buttons ?? []) {
      const entry = TokenEntry.safeParse(await this.opts.kv.get(`t:${b.token}`));
      if (entry.success && entry.data.requestId === requestId) out.push({ token: b.token, label: b.label, choice: entry.data.choice });
    }
    return out;
  }

  /**
   * Decides a request for a caller the conversation itself already trusts, without the approver check:
   * a headless run's own client (the operator at `gatehouse run`, or a local caller holding the
   * service's token). `pick`: a button's token, or a typed answer (questions that allow one; null or
   * empty = no answer). First decision wins, as with clicks.
   */
  async decideAs(requestId: string, conversationKey: string, pick: { token: string } | { answer: string | null }, user: { id: string; name?: string }): Promise<ClickResult> {
    return this.locked(requestId, async () => {
      const req = await this.get(requestId);
      if (!req || req.conversationKey !== conversationKey) return { accepted: false, notice: 'No such open request in this conversation.' };
      if (req.decision) return { accepted: false, notice: `Already decided: ${describe(req.decision)}.` };
      let decision: Decision | null;
      if ('token' in pick) {
        const entry = TokenEntry.safeParse(await this.opts.kv.get(`t:${pick.token}`));
        decision = entry.success && entry.data.requestId === requestId ? this.decisionFor(req, entry.data.choice, user) : null;
      } else if (pick.answer === null || pick.answer.trim() === '') {
        decision = { outcome: req.kind === 'question' ? 'unanswered' : 'denied', by: user.id, byName: user.name, at: this.now(), note: 'no answer given' };
      } else if (req.kind === 'question' && req.allowCustom) {
        decision = { outcome: 'answered', answer: pick.answer, by: user.id, byName: user.name, at: this.now() };
      } else decision = null;
      if (!decision) return { accepted: false, notice: 'That is not one of the choices offered.' };
      if (!(await this.record(req, decision))) return { accepted: false, notice: 'Already decided.' };
      return { accepted: true, notice: noticeFor(decision) };
    });
  }

  /**
   * A typed message in a conversation with an open question that allows custom answers.
   * Returns true when it answered one (the message is then not a new turn).
   */
  async answerTyped(conversationKey: string, user: { id: string; name?: string; roles?: string[] }, text: string): Promise<boolean> {
    if (!this.typedAnswerable.has(conversationKey)) return false;
    let open = false;
    for (const id of await this.pendingIds(conversationKey)) {
      const req = await this.get(id);
      if (!req || req.decision || req.kind !== 'question' || !req.allowCustom) continue;
      open = true;
      if (!this.mayDecide(req, user)) continue;
      const done = await this.settle(id, { outcome: 'answered', answer: text, by: user.id, byName: user.name, at: this.now() });
      if (done) return true;
    }
    if (!open) this.typedAnswerable.delete(conversationKey);
    return false;
  }

  /**
   * A run of this conversation was resumed after a restart and may have an open question: typed
   * replies are checked against the store until it is known there is none.
   */
  noteResumed(conversationKey: string): void {
    this.typedAnswerable.add(conversationKey);
  }

  /** Pending (undecided) request ids of a conversation, oldest first. */
  async pendingIds(conversationKey: string): Promise<string[]> {
    const parsed = z.array(z.string()).safeParse(await this.opts.kv.get(`p:${conversationKey}`));
    return parsed.success ? parsed.data : [];
  }

  private async addPending(conversationKey: string, id: string, ttl: number): Promise<void> {
    const ids = await this.pendingIds(conversationKey);
    ids.push(id);
    await this.opts.kv.set(`p:${conversationKey}`, ids, ttl);
  }

  private async removePending(conversationKey: string, id: string): Promise<void> {
    const ids = (await this.pendingIds(conversationKey)).filter((x) => x !== id);
    if (ids.length) await this.opts.kv.set(`p:${conversationKey}`, ids);
    else await this.opts.kv.delete(`p:${conversationKey}`);
  }

  private mayDecide(req: StoredRequest, user: { id: string; roles?: string[] }): boolean {
    const approvers = this.opts.approversOf(req.agentName, req.platform);
    if (isApprover(user, approvers)) return true;
    return req.kind === 'question' && req.starterId === user.id;
  }

  private decisionFor(req: StoredRequest & { suggestions?: QuestionSuggestion[] }, choice: string, user: { id: string; name?: string }): Decision | null {
    const base = { by: user.id, byName: user.name, at: this.now() };
    if (choice === 'once' || choice === 'all_approve') return { outcome: 'approved', ...base };
    if (choice === 'always') return { outcome: 'always', ...base };
    if (choice === 'deny' || choice === 'all_deny') return { outcome: 'denied', ...base };
    if (choice.startsWith('option:')) return { outcome: 'approved', selectedOptionId: choice.slice(7), ...base };
    if (choice.startsWith('answer:')) {
      const s = req.suggestions?.[Number(choice.slice(7))];
      return s ? { outcome: 'answered', answer: s.value, ...base } : null;
    }
    return null;
  }

  private async settleUnlocked(requestId: string, decision: Decision): Promise<void> {
    // Called inside another request's lock; members have their own lock.
    await this.settle(requestId, decision);
  }

  /**
   * Writes the decision, replaces the card, wakes the waiters (in that order). False when another
   * process sharing the store decided first: its decision stands, and wakes this process's waiters.
   */
  private async record(req: StoredRequest, decision: Decision): Promise<boolean> {
    if (this.opts.decideOnce) {
      // As update() does: every stored field kept, whatever this version knows of them.
      const stored = Request.loose().safeParse(await this.opts.kv.get(`r:${req.id}`));
      const next = { ...(stored.success ? (stored.data as StoredRequest) : req), decision };
      if (!(await this.opts.decideOnce(req.id, next, this.keepMs(next)))) {
        const won = (await this.get(req.id))?.decision;
        if (won) this.wake(req.id, won);
        return false;
      }
    } else {
      await this.update(req.id, (r) => ({ ...r, decision }));
    }
    await this.removePending(req.conversationKey, req.id);
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
      at: new Date(decision.at).toISOString(),
    });
    const card: Card = { ...req.card, buttons: [], outcome: describe(decision, this.now) };
    // Earlier copies first (shown before a restart), then the current one.
    for (const handle of [...(req.earlierHandles ?? []), ...(req.cardHandle !== undefined ? [req.cardHandle] : [])]) {
      try {
        await this.opts.outputs(req.conversationKey).updateCard(handle, card);
      } catch (err) {
        // The decision stands; a card we could not edit is a display problem, reported, not fatal.
        this.opts.log?.(`could not update card ${req.id}: ${(err as Error).message}`);
      }
    }
    this.wake(req.id, decision);
    return true;
  }

  private keepMs(req: StoredRequest): number {
    return Math.max(60_000, req.expiresAt - this.now() + 24 * 3600_000);
  }

  private wake(requestId: string, decision: Decision): void {
    const waiters = this.waiters.get(requestId) ?? [];
    this.waiters.delete(requestId);
    for (const w of waiters) {
      if (w.timer) clearTimeout(w.timer);
      w.resolve(decision);
    }
  }

  private async update(id: string, fn: (r: StoredRequest) => StoredRequest): Promise<void> {
    const raw = await this.opts.kv.get(`r:${id}`);
    const parsed = Request.loose().safeParse(raw);
    if (!parsed.success) return;
    const next = fn(parsed.data as StoredRequest);
    await this.opts.kv.set(`r:${id}`, next, this.keepMs(next));
  }

  private async locked<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(id) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.locks.set(id, tail);
    try {
      return await run;
    } finally {
      if (this.locks.get(id) === tail) this.locks.delete(id);
    }
  }

  /** Stops expiry timers (shutdown). Pending requests stay stored and resume after a restart. */
  close(): void {
    this.closed = true;
    for (const list of this.waiters.values()) for (const w of list) if (w.timer) clearTimeout(w.timer);
    this.waiters.clear();
  }
}

function firstLineOf(s: string): string {
  const line = s.split('\n', 1)[0] ?? '';
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

function who(d: Decision): string {
  return d.byName ? `${d.byName} (${d.by})` : (d.by ?? 'unknown');
}

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
}

/** The outcome line shown on a decided card (and in "already decided" notices). */
export function describe(d: Decision, _now?: () => number): string {
  const at = stamp(d.at);
  const note = d.note ? ` (${d.note})` : '';
  switch (d.outcome) {
    case 'approved':
      return d.selectedOptionId !== undefined
        ? `Chose "${d.selectedOptionId}" — ${who(d)}, ${at}${note}`
        : `Approved once by ${who(d)}, ${at}${note}`;
    case 'always':
      return `Always approved by ${who(d)}, ${at}${note}`;
    case 'denied':
      return d.by ? `Denied by ${who(d)}, ${at}${note}` : `Denied, ${at}${note}`;
    case 'expired':
      return `Expired without a decision, ${at}: not run${note}`;
    case 'answered':
      return `Answered by ${who(d)}, ${at}: ${d.answer ?? ''}`;
    case 'unanswered':
      return `No answer, ${at}${note}`;
  }
}

function noticeFor(d: Decision): string {
  switch (d.outcome) {
    case 'approved':
      return 'Approved.';
    case 'always':
      return 'Approved, and will be from now on.';
    case 'denied':
      return 'Denied.';
    case 'answered':
      return 'Answer sent.';
    default:
      return 'Done.';
  }
}
