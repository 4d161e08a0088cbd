/**
 * Spending limits (issue 24): which running totals a model call counts against, and how much.
 *
 * Contract:
 * - Scopes: a conversation (never resets), a user per UTC day, the agent per UTC day and per UTC
 *   month. Each scope may have a USD limit and a token limit; a call to a model with no price
 *   (agent/model/pricing.ts) counts only against token limits, a priced one against both.
 * - For an agent with a budget, the conversation and the agent's day and month are counted even
 *   where that scope has no limit (limit UNLIMITED), so `gatehouse conversations` shows its spend;
 *   a user's day only with its limit. An agent without a budget is not counted at all.
 * - A limit is hard (a number) or soft (`{ soft, hard? }`): a soft one may be passed by approval, a
 *   step of `soft` at a time, never past `hard` (absent: no ceiling). Its line carries `limit` =
 *   soft, `cap` = hard (UNLIMITED when absent) and `step`; the store adds the approved raises.
 * - Amounts are integers in the store: micro-USD (1e-6 $) or tokens.
 * - The worst case of a call is its input estimate at the input rate plus max_tokens at the output
 *   rate (the long-prompt rates once the estimate passes their threshold): what it may cost at most.
 */
import { priceFor } from '../model/pricing.js';
import type { Usage } from '../events.js';
import type { SpendLine } from '../store/types.js';

export type BudgetScope = 'conversation' | 'userPerDay' | 'agentPerDay' | 'agentPerMonth';
export type BudgetUnit = 'usd' | 'tokens';

/** A hard limit, or a soft one approvers may raise (one `soft` more per approval) up to `hard`. */
type LimitAmount = number | { soft: number; hard?: number };

interface ScopeLimit {
  usd?: LimitAmount;
  tokens?: LimitAmount;
}

export type BudgetLimits = Partial<Record<BudgetScope, ScopeLimit>>;

export interface CallScope {
  agent: string;
  conversation: string;
  /** The person whose message started the run; absent for a scheduled turn with no requester. */
  user?: string;
}

export interface BudgetLine extends SpendLine {
  scope: BudgetScope;
  unit: BudgetUnit;
  /** ms since the epoch when the total starts again; undefined: never (a conversation). */
  resetsAt: number | undefined;
  /** A soft limit: what one approval adds (store units); absent: a hard limit. */
  step?: number;
}

export const MICRO = 1_000_000;
const day = (t: number) => new Date(t).toISOString().slice(0, 10);
const month = (t: number) => new Date(t).toISOString().slice(0, 7);
const nextDay = (t: number) => {
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
};
const nextMonth = (t: number) => {
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
};

function scopeKey(scope: BudgetScope, s: CallScope, now: number): { key: string; resetsAt: number | undefined } | undefined {
  switch (scope) {
    case 'conversation':
      return { key: `conv:${s.agent}:${s.conversation}`, resetsAt: undefined };
    case 'userPerDay':
      return s.user === undefined ? undefined : { key: `user:${s.agent}:${s.user}:${day(now)}`, resetsAt: nextDay(now) };
    case 'agentPerDay':
      return { key: `agent:${s.agent}:${day(now)}`, resetsAt: nextDay(now) };
    case 'agentPerMonth':
      return { key: `agent:${s.agent}:${month(now)}`, resetsAt: nextMonth(now) };
  }
}

/** The worst case of one call: micro-USD (undefined when the model has no price) and tokens. */
export function worstCase(model: string, inputTokens: number, maxTokens: number): { micro: number | undefined; tokens: number } {
  const tokens = inputTokens + maxTokens;
  const price = priceFor(model);
  if (!price) return { micro: undefined, tokens };
  const rates = price.longPrompt && inputTokens > price.longPrompt.overTokens ? price.longPrompt.rates : price;
  // Rates are $ per million tokens, so $/M × tokens is micro-USD.
  return { micro: Math.ceil(inputTokens * rates.input + maxTokens * rates.output), tokens };
}

/** What a real usage amounts to, per unit. */
export function usageAmounts(u: Usage): { micro: number | undefined; tokens: number } {
  const tokens = u.inputTokens + u.outputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  return { micro: u.costKnown ? Math.ceil(u.costUSD * MICRO) : undefined, tokens };
}

/** The limit of a total that is only counted (shown by `gatehouse conversations`), never enforced. */
export const UNLIMITED = Number.MAX_SAFE_INTEGER;
/** Scopes counted for every agent with a budget, limit or not, so its spend is visible. */
const COUNTED: ReadonlySet<BudgetScope> = new Set(['conversation', 'agentPerDay', 'agentPerMonth']);

function limitFields(a: LimitAmount | undefined, per: number): Pick<BudgetLine, 'limit' | 'cap' | 'step'> {
  const units = (n: number) => Math.floor(n * per);
  if (a === undefined) return { limit: UNLIMITED };
  if (typeof a === 'number') return { limit: units(a) };
  return { limit: units(a.soft), cap: a.hard === undefined ? UNLIMITED : units(a.hard), step: units(a.soft) };
}

/** The lines a call counts against, with the worst case as each line's amount. */
export function linesFor(limits: BudgetLimits, s: CallScope, worst: { micro: number | undefined; tokens: number }, now: number): BudgetLine[] {
  const out: BudgetLine[] = [];
  for (const scope of ['conversation', 'userPerDay', 'agentPerDay', 'agentPerMonth'] as const) {
    const l = limits[scope] ?? (COUNTED.has(scope) ? {} : undefined);
    const k = l && scopeKey(scope, s, now);
    if (!l || !k) continue;
    if (worst.micro !== undefined) {
      out.push({ key: `${k.key}:usd`, amount: worst.micro, ...limitFields(l.usd, MICRO), scope, unit: 'usd', resetsAt: k.resetsAt });
    }
    out.push({ key: `${k.key}:tokens`, amount: worst.tokens, ...limitFields(l.tokens, 1), scope, unit: 'tokens', resetsAt: k.resetsAt });
  }
  return out;
}

/** The store keys of a conversation's total and its agent's day and month totals, per unit (for reading them). */
export function spendKeys(
  agent: string,
  conversation: string,
  now: number,
): Record<'conversation' | 'agentDay' | 'agentMonth', { usd: string; tokens: string }> {
  const both = (k: string) => ({ usd: `${k}:usd`, tokens: `${k}:tokens` });
  const s = { agent, conversation };
  return {
    conversation: both(scopeKey('conversation', s, now)!.key),
    agentDay: both(scopeKey('agentPerDay', s, now)!.key),
    agentMonth: both(scopeKey('agentPerMonth', s, now)!.key),
  };
}

const SCOPE_WORDS: Record<BudgetScope, string> = {
  conversation: 'this conversation',
  userPerDay: 'your daily',
  agentPerDay: "this agent's daily",
  agentPerMonth: "this agent's monthly",
};

/** Who spent, for an approval card (read by approvers, not the requester). */
const SPENDER: Record<BudgetScope, string> = {
  conversation: 'this conversation',
  userPerDay: 'the requester today',
  agentPerDay: 'this agent today',
  agentPerMonth: 'this agent this month',
};

export const formatAmount = (unit: BudgetUnit, n: number): string => (unit === 'usd' ? `$${(n / MICRO).toFixed(2)}` : `${n.toLocaleString('en-US')} tokens`);

/** Why a soft limit was not raised, for the sentence that ends the run. */
export type SoftOutcome = { outcome: 'denied' | 'expired'; by?: string } | { outcome: 'no_approver' };

const softWhy = (o: SoftOutcome, more: string): string =>
  o.outcome === 'no_approver'
    ? `it is a soft limit, but no approver is bound here to allow ${more} more`
    : o.outcome === 'expired'
      ? `allowing ${more} more was not decided in time`
      : `allowing ${more} more was denied${o.by ? ` by ${o.by}` : ''}`;

/** The sentence a user sees when a call is refused (a soft limit: with why it was not raised). */
export function refusalText(r: {
  scope: BudgetScope;
  unit: BudgetUnit;
  spent: number;
  limit: number;
  resetsAt: number | undefined;
  soft?: { more: number; outcome: SoftOutcome };
}): string {
  const what = r.scope === 'conversation' ? 'this conversation has' : `${SCOPE_WORDS[r.scope]} limit has`;
  const reset =
    r.resetsAt === undefined
      ? 'it does not reset (start a new conversation or ask an operator)'
      : `it resets at ${new Date(r.resetsAt).toISOString().replace('.000Z', 'Z')}`;
  const soft = r.soft ? `; ${softWhy(r.soft.outcome, formatAmount(r.unit, r.soft.more))}` : '';
  return `Stopped: the spending limit is reached: ${what} spent ${formatAmount(r.unit, r.spent)} of ${formatAmount(r.unit, r.limit)} (${r.scope}, ${r.unit})${soft}; ${reset}.`;
}

/** The question on a soft limit's approval card. */
export function softLimitQuestion(r: { scope: BudgetScope; unit: BudgetUnit; spent: number; limit: number; more: number; cap: number }): string {
  const ceiling = r.cap < UNLIMITED ? ` (the hard limit is ${formatAmount(r.unit, r.cap)})` : '';
  return `${SPENDER[r.scope]} has spent ${formatAmount(r.unit, r.spent)} of ${formatAmount(r.unit, r.limit)}; allow ${formatAmount(r.unit, r.more)} more?${ceiling}`;
}
