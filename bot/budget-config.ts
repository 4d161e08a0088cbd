/**
 * The per-agent `budget` config key (issue 24), kept out of bot/config-schema.ts so that file only
 * names it.
 *
 *   budget:
 *     conversation:  { usd: 5 }             # never resets
 *     userPerDay:    { usd: 2, tokens: 200000 }
 *     agentPerDay:   { usd: 20 }
 *     agentPerMonth: { usd: 300 }
 *
 * A token limit is what counts for a model with no price in agent/pricing.ts.
 */
import { z } from 'zod';
import type { BudgetLimits } from '../agent/budget/limits.js';

const positive = (what: string) =>
  z.preprocess(
    (v) => (typeof v === 'bigint' ? Number(v) : v),
    z.number().refine((n) => Number.isFinite(n) && n > 0, { message: `expected a positive number (${what})` }),
  );

const scopeLimit = z
  .strictObject({
    usd: positive('US dollars').optional(),
    tokens: positive('tokens')
      .refine((n) => Number.isInteger(n), { message: 'expected a whole number of tokens' })
      .optional(),
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
