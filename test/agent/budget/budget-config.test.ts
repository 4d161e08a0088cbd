/** The `budget` config key (bot/config/budget.ts): a number is a hard limit, `{ soft, hard }` a soft one. */
import { budgetConfigSchema, budgetLimitsOf } from '../../../bot/config/budget.js';
import { linesFor, UNLIMITED } from '../../../agent/budget/limits.js';

const issues = (v: unknown) => {
  const r = budgetConfigSchema.safeParse(v);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

test('a number stays a hard limit; { soft, hard } makes a line approvers may raise a step at a time up to hard', () => {
  const c = budgetConfigSchema.parse({ conversation: { usd: { soft: 5, hard: 20 }, tokens: 1000 }, agentPerDay: { tokens: { soft: 500 } } });
  const lines = linesFor(budgetLimitsOf(c), { agent: 'a', conversation: 'c' }, { micro: 1, tokens: 1 }, Date.UTC(2026, 11, 2));
  const of = (key: string) => lines.find((l) => l.key === key);
  expect(of('conv:a:c:usd')).toMatchObject({ limit: 5_000_000, cap: 20_000_000, step: 5_000_000 });
  expect(of('conv:a:c:tokens')).toMatchObject({ limit: 1000 });
  expect(of('conv:a:c:tokens')).not.toHaveProperty('cap');
  expect(of('agent:a:2026-12-02:tokens')).toMatchObject({ limit: 500, cap: UNLIMITED, step: 500, resetsAt: Date.UTC(2026, 11, 3) });
});

test('a soft limit is refused with hard at or below soft, a fractional token count, or an unknown key', () => {
  expect(issues({ conversation: { usd: { soft: 5, hard: 5 } } })).toEqual(['conversation.usd.hard: hard must be above soft']);
  expect(issues({ conversation: { tokens: { soft: 10.5 } } }).join('\n')).toContain('expected a whole number of tokens');
  expect(issues({ conversation: { usd: { soft: 5, step: 1 } } })).not.toEqual([]);
  expect(issues({ conversation: { usd: { hard: 5 } } })).not.toEqual([]);
});
