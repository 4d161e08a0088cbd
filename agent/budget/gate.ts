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
 */
import type { Message } from '../messages.js';
import type { ModelClient, ModelRequest } from '../model-types.js';
import type { RunLimit, Usage } from '../events.js';
import type { SpendRepo } from '../store/types.js';
import { linesFor, MICRO, refusalText, usageAmounts, worstCase, type BudgetLimits, type BudgetScope, type BudgetUnit, type CallScope } from './limits.js';

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
  };
}

export interface Reservation {
  settle(usage: Usage): Promise<void>;
  release(): Promise<void>;
}

export interface BudgetGateOptions {
  spend: SpendRepo;
  limits: BudgetLimits;
  now?: () => number;
  onRefusal?: (r: BudgetRefusal, scope: CallScope) => void;
}

/** About 4 characters a token: an estimate, erring high for English text. */
export function estimateInputTokens(req: Pick<ModelRequest, 'system' | 'messages' | 'tools'>): number {
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
  ): Promise<{ ok: true; reservation: Reservation } | { ok: false; refusal: BudgetRefusal }> {
    const now = this.now();
    const lines = linesFor(this.o.limits, scope, worstCase(model, inputTokens, maxTokens), now);
    const r = await this.o.spend.reserve(lines, now);
    if (!r.ok) {
      const line = lines.find((l) => l.key === r.key)!;
      const spent = r.total.used + r.total.reserved;
      const base = { kind: 'budget' as const, scope: line.scope, unit: line.unit, spent, limit: line.limit, wanted: line.amount, resetsAt: line.resetsAt };
      const refusal: BudgetRefusal = { ...base, message: refusalText(base) };
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
}

/** A ModelClient that asks the gate before each call and settles after it. */
export function budgetedModel(inner: ModelClient, gate: BudgetGate, scope: () => CallScope): ModelClient {
  return {
    async complete(req) {
      const r = await gate.reserve(scope(), req.model, estimateInputTokens(req), req.maxTokens);
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
