/**
 * The budget gate around model calls (issue 24).
 *
 * Contract:
 * - `reserve` runs BEFORE a call is sent: it reserves the call's worst case on every line in one
 *   atomic store operation (agent/store/types.ts SpendRepo), so parallel calls, sub-agents and
 *   replicas sharing the store cannot take a total past its limit. Refused: nothing is reserved and
 *   the refusal names the limit, the spend (used + held by calls in flight) and when it resets.
 * - The returned `settle` moves the reservation to the real usage; `release` (the call failed
 *   before any usage) gives it back. Each runs at most once.
 * - `budgetedModel` wraps a ModelClient: a refused call throws BudgetExceededError and never
 *   reaches the model; every call settles, whether it succeeded or threw.
 * - `onRefusal` is called for every refusal (the audit event, the metric).
 * - Soft limits (./limits.ts): a call over one, that would still fit under its hard ceiling, is put
 *   to `approve` (the run posts an approval card; with no approver bound, `approvers` says so and
 *   nothing is asked) with the smallest whole number of steps that lets
 *   it fit. Approved: the store raises that total's limit (a compare-and-set, so the same step is
 *   raised once) and the call reserves again. Denied, expired, or no approver: refused like a hard
 *   limit, the sentence saying why. Calls of this process (parallel calls, sub-agents, other runs)
 *   waiting on the same total at the same raise, with the same approvers, share ONE question: the first asks, the others wait
 *   for its outcome.
 */
import type { Message } from '../context/messages.js';
import type { ModelClient, ModelRequest } from '../model/types.js';
import type { RunLimit, Usage } from '../events.js';
import type { SpendRepo } from '../store/types.js';
import {
  linesFor,
  MICRO,
  refusalText,
  softLimitQuestion,
  usageAmounts,
  worstCase,
  type BudgetLimits,
  type BudgetLine,
  type BudgetScope,
  type BudgetUnit,
  type CallScope,
  type SoftOutcome,
} from './limits.js';

export interface BudgetRefusal {
  kind: 'budget';
  scope: BudgetScope;
  unit: BudgetUnit;
  /** Integers in the unit's store form (micro-USD or tokens). */
  spent: number;
  limit: number;
  /** What the refused call would have reserved. */
  wanted: number;
  resetsAt: number | undefined;
  /** A soft limit that was not raised: by how much it was asked, and why not. */
  soft?: { more: number; outcome: SoftOutcome };
  message: string;
}

export class BudgetExceededError extends Error {
  override name = 'BudgetExceededError';
  constructor(readonly refusal: BudgetRefusal) {
    super(refusal.message);
  }
}

const SCOPE_NAMES: Record<BudgetScope, RunLimit['scope']> = {
  conversation: 'conversation',
  userPerDay: 'user_day',
  agentPerDay: 'agent_day',
  agentPerMonth: 'agent_month',
};

/** A refusal as data (the headless --json `limit` field): amounts in dollars or tokens, not store units. */
export function limitOf(r: BudgetRefusal): RunLimit {
  const usd = r.unit === 'usd';
  return {
    kind: 'budget',
    scope: SCOPE_NAMES[r.scope],
    unit: r.unit,
    ...(usd ? { spentUsd: r.spent / MICRO } : { spentTokens: r.spent }),
    limit: usd ? r.limit / MICRO : r.limit,
    resetsAt: r.resetsAt === undefined ? null : new Date(r.resetsAt).toISOString(),
    ...(r.soft ? { soft: true, approval: r.soft.outcome.outcome } : {}),
  };
}

/** A soft limit put to the approvers: the numbers of its card (store units) and the question. */
export interface SoftLimitAsk {
  scope: BudgetScope;
  unit: BudgetUnit;
  spent: number;
  /** The limit now (the soft one plus what was approved before). */
  limit: number;
  more: number;
  cap: number;
  question: string;
}

export type SoftDecision = { outcome: 'approved'; by?: string } | SoftOutcome;

export interface Reservation {
  settle(usage: Usage): Promise<void>;
  release(): Promise<void>;
}

export interface BudgetGateOptions {
  spend: SpendRepo;
  limits: BudgetLimits;
  now?: () => number;
  onRefusal?: (r: BudgetRefusal, scope: CallScope) => void;
  /** Asks the approvers about a soft limit (an approval card); absent: soft limits act as hard ones. */
  approve?: (ask: SoftLimitAsk, scope: CallScope, signal: AbortSignal | undefined) => Promise<SoftDecision>;
  /**
   * Who would decide, as one string (platform and approvers): calls share a question only with the
   * same. Undefined: nobody is bound, the call is refused as `no_approver` without asking. Absent: ''.
   */
  approvers?: () => string | undefined;
}

/**
 * Soft-limit questions per store: `key@raised@approvers` -> the outcome (one card for everyone
 * waiting on it).
 * A question stays a while after it is decided, for the calls whose refusal was read before the
 * decision (their `raised` is stale): they take its outcome instead of asking again. A call whose
 * attempt began after the decision asks anew (a new turn after a denial gets a new card).
 */
type Question = { outcome: Promise<SoftDecision>; decidedAt?: number };
const asking = new WeakMap<SpendRepo, Map<string, Question>>();
/** Orders reservation attempts and decisions in this process. */
let sequence = 0;
const KEEP_DECIDED_MS = 60_000;

/** About 4 characters a token: an estimate, erring high for English text. */
function estimateInputTokens(req: Pick<ModelRequest, 'system' | 'messages' | 'tools'>): number {
  const chars = req.system.length + JSON.stringify(req.messages satisfies Message[]).length + JSON.stringify(req.tools).length;
  return Math.ceil(chars / 3.5);
}

export class BudgetGate {
  private readonly now: () => number;
  constructor(private readonly o: BudgetGateOptions) {
    this.now = o.now ?? Date.now;
  }

  async reserve(
    scope: CallScope,
    model: string,
    inputTokens: number,
    maxTokens: number,
    signal?: AbortSignal,
  ): Promise<{ ok: true; reservation: Reservation } | { ok: false; refusal: BudgetRefusal }> {
    const lines = linesFor(this.o.limits, scope, worstCase(model, inputTokens, maxTokens), this.now());
    for (let failures = 0; ; ) {
      const attempt = ++sequence;
      const r = await this.o.spend.reserve(lines, this.now());
      if (r.ok) break;
      const line = lines.find((l) => l.key === r.key)!;
      const spent = r.total.used + r.total.reserved;
      const cap = line.cap ?? line.limit;
      const limit = Math.min(line.limit + r.raised, cap);
      const base = { kind: 'budget' as const, scope: line.scope, unit: line.unit, spent, limit, wanted: line.amount, resetsAt: line.resetsAt };
      const more = line.step && this.o.approve && spent + line.amount <= cap ? moreFor(line, spent, limit, cap) : 0;
      let soft: BudgetRefusal['soft'];
      if (more > 0) {
        const group = this.o.approvers ? this.o.approvers() : '';
        let d: SoftDecision = { outcome: 'no_approver' };
        try {
          const q = { ...base, more, cap, question: softLimitQuestion({ ...base, more, cap }) };
          if (group !== undefined) d = await this.ask(attempt, `${line.key}@${r.raised}@${group}`, line, r.raised, q, scope, signal);
        } catch (err) {
          // Another run's question failed (it was stopped): ask again, unless this call was.
          if (signal?.aborted || ++failures > 2) throw err;
          continue;
        }
        if (d.outcome === 'approved') continue;
        soft = { more, outcome: d };
      }
      const refusal: BudgetRefusal = { ...base, ...(soft ? { soft } : {}), message: refusalText({ ...base, ...(soft ? { soft } : {}) }) };
      this.o.onRefusal?.(refusal, scope);
      return { ok: false, refusal };
    }
    let done = false;
    const finish = async (usage: Usage | undefined) => {
      if (done) return;
      done = true;
      const real = usage ? usageAmounts(usage) : { micro: 0, tokens: 0 };
      // An unknown price on a priced model's line cannot happen (same model), but never settle NaN.
      await this.o.spend.settle(
        lines.map((l) => ({ key: l.key, amount: l.amount, used: l.unit === 'usd' ? (real.micro ?? l.amount) : real.tokens })),
        this.now(),
      );
    };
    return { ok: true, reservation: { settle: (u) => finish(u), release: () => finish(undefined) } };
  }

  /** One question per total, raise and approvers in this process; the one who asked raises on approval. */
  private ask(
    attempt: number,
    id: string,
    line: BudgetLine,
    raised: number,
    q: SoftLimitAsk,
    scope: CallScope,
    signal: AbortSignal | undefined,
  ): Promise<SoftDecision> {
    let open = asking.get(this.o.spend);
    if (!open) asking.set(this.o.spend, (open = new Map()));
    const known = open.get(id);
    if (known && (known.decidedAt === undefined || attempt < known.decidedAt)) return known.outcome;
    const question: Question = {
      outcome: (async () => {
        const d = await this.o.approve!(q, scope, signal);
        // False: another process raised it first; the reservation is tried again either way.
        if (d.outcome === 'approved') await this.o.spend.raise(line, raised, raised + q.more, this.now());
        return d;
      })(),
    };
    const settled = () => {
      question.decidedAt = ++sequence;
      setTimeout(() => open.get(id) === question && open.delete(id), KEEP_DECIDED_MS).unref();
    };
    question.outcome.then(settled, settled);
    open.set(id, question);
    return question.outcome;
  }
}

/** The smallest whole number of steps that lets the call fit, never past the cap. */
function moreFor(line: BudgetLine, spent: number, limit: number, cap: number): number {
  const steps = Math.max(1, Math.ceil((spent + line.amount - limit) / line.step!));
  return Math.min(steps * line.step!, cap - limit);
}

/** A ModelClient that asks the gate before each call and settles after it. */
export function budgetedModel(inner: ModelClient, gate: BudgetGate, scope: () => CallScope): ModelClient {
  return {
    async complete(req) {
      const r = await gate.reserve(scope(), req.model, estimateInputTokens(req), req.maxTokens, req.signal);
      if (!r.ok) throw new BudgetExceededError(r.refusal);
      let res;
      try {
        res = await inner.complete(req);
      } catch (err) {
        // A failed call may still have been billed in part; the SDK does not say how much, so the
        // worst case is kept for an error after sending, and given back only for an abort.
        await (req.signal?.aborted ? r.reservation.release() : r.reservation.settle(worstUsage(req)));
        throw err;
      }
      await r.reservation.settle(res.usage);
      return res;
    },
  };
}

function worstUsage(req: ModelRequest): Usage {
  return { inputTokens: estimateInputTokens(req), outputTokens: req.maxTokens, cacheReadTokens: 0, cacheWriteTokens: 0, costUSD: 0, costKnown: false };
}
