/**
 * The per-agent `budget` config key (issue 24), kept out of bot/config/schema.ts so that file only
 * names it.
 *
 *   budget:
 *     conversation:  { usd: 5 }             # never resets
 *     userPerDay:    { usd: 2, tokens: 200000 }
 *     agentPerDay:   { usd: 20 }
 *     agentPerMonth: { usd: 300 }
 *     # or soft: past $5 the agent's approvers are asked "allow $5 more?", never past $20
 *     conversation:  { usd: { soft: 5, hard: 20 } }
 *
 * A token limit is what counts for a model with no price in agent/model/pricing.ts. A number is a hard
 * limit; `{ soft, hard }` a soft one (`hard` optional: no ceiling).
 */
import { z } from 'zod';
import type { BudgetLimits } from '../../agent/budget/limits.js';

const positive = (what: string) =>
  z.preprocess(
    (v) => (typeof v === 'bigint' ? Number(v) : v),
    z.number().refine((n) => Number.isFinite(n) && n > 0, { message: `expected a positive number (${what})` }),
  );

const wholeTokens = positive('tokens').refine((n) => Number.isInteger(n), { message: 'expected a whole number of tokens' });

/** A number (hard), or `{ soft, hard? }`: approvers may allow one more `soft` at a time, up to `hard`. */
const amount = (n: z.ZodType<number>) =>
  z.union([
    n,
    z
      .strictObject({ soft: n, hard: n.optional() })
      .refine((a) => a.hard === undefined || a.hard > a.soft, { message: 'hard must be above soft', path: ['hard'] }),
  ]);

const scopeLimit = z
  .strictObject({
    usd: amount(positive('US dollars')).optional(),
    tokens: amount(wholeTokens).optional(),
  })
  .refine((l) => l.usd !== undefined || l.tokens !== undefined, { message: 'give usd, tokens or both' });

export const budgetConfigSchema = z.strictObject({
  conversation: scopeLimit.optional(),
  userPerDay: scopeLimit.optional(),
  agentPerDay: scopeLimit.optional(),
  agentPerMonth: scopeLimit.optional(),
});

export type BudgetConfig = z.infer<typeof budgetConfigSchema>;

/** The limits the gate enforces (agent/budget/limits.ts). */
export const budgetLimitsOf = (c: BudgetConfig | undefined): BudgetLimits => ({ ...c });
