/** The refusal as data (headless --json `limit`): store units become dollars or tokens, scopes their wire names. */
import { limitOf, type BudgetRefusal } from '../../../agent/budget/gate.js';

const base = { kind: 'budget', wanted: 10, message: 'm' } as const;

test('a token limit per user day reports tokens and the next UTC midnight', () => {
  const r: BudgetRefusal = { ...base, scope: 'userPerDay', unit: 'tokens', spent: 1900, limit: 2000, resetsAt: Date.UTC(2026, 11, 3) };
  expect(limitOf(r)).toEqual({ kind: 'budget', scope: 'user_day', unit: 'tokens', spentTokens: 1900, limit: 2000, resetsAt: '2026-12-03T00:00:00.000Z' });
});

test('a USD limit per agent month reports dollars, not micro-dollars', () => {
  const r: BudgetRefusal = { ...base, scope: 'agentPerMonth', unit: 'usd', spent: 4_900_000, limit: 5_000_000, resetsAt: Date.UTC(2027, 0, 1) };
  expect(limitOf(r)).toEqual({ kind: 'budget', scope: 'agent_month', unit: 'usd', spentUsd: 4.9, limit: 5, resetsAt: '2027-01-01T00:00:00.000Z' });
});
