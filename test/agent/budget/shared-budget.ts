/**
 * The budget gate's behaviour on one engine, run by the SQLite and PostgreSQL test files: two
 * stores on one database stand for two replicas sharing one budget. The model is the REAL SDK
 * against the fake Anthropic API, whose usage numbers are what gets settled.
 */
import { createAnthropicModel } from '../../../agent/model/anthropic.js';
import { BudgetExceededError, BudgetGate, budgetedModel, type SoftDecision, type SoftLimitAsk } from '../../../agent/budget/gate.js';
import type { BudgetLimits } from '../../../agent/budget/limits.js';
import type { ModelRequest } from '../../../agent/model/types.js';
import type { Store } from '../../../agent/store/types.js';
import { startFakeAnthropic, type FakeAnthropic } from '../../fakes/anthropic.js';
import { until } from '../../helpers/wait.js';

const KEY = 'sk-test-budget';
const SONNET = 'claude-sonnet-4-6'; // $3 in, $15 out per million tokens
const req = (model: string, maxTokens: number): ModelRequest => ({
  model,
  system: 'be brief',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
  tools: [],
  maxTokens,
});

export function budgetSuite(engine: string, openPair: () => Promise<[Store, Store]>): void {
  describe(`budget on ${engine}`, () => {
    let fake: FakeAnthropic;
    let stores: Store[] = [];
    let clock = Date.UTC(2026, 11, 2, 12, 0, 0);
    beforeEach(async () => {
      fake = await startFakeAnthropic({ apiKey: KEY });
      stores = await openPair();
      clock = Date.UTC(2026, 11, 2, 12, 0, 0);
    });
    afterEach(async () => {
      await fake.close();
      for (const s of stores) await s.close();
    });
    const modelOn = (store: Store, limits: BudgetLimits, refusals: unknown[] = [], approve?: (ask: SoftLimitAsk) => Promise<SoftDecision>) =>
      budgetedModel(
        createAnthropicModel({ apiKey: KEY, baseURL: fake.url, retryBaseMs: 5 }),
        new BudgetGate({ spend: store.spend, limits, now: () => clock, onRefusal: (r) => refusals.push(r), ...(approve ? { approve } : {}) }),
        () => ({
          agent: 'ops',
          conversation: 'telegram:1',
          user: 'telegram:42',
        }),
      );

    test('parallel calls on two replicas never reserve past the limit, and settle to the fake usage', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      fake.setHandler(() => ({ text: 'ok', gate, usage: { input_tokens: 10, output_tokens: 100 } }));
      const limits: BudgetLimits = { conversation: { usd: 0.1 } };
      const [a, b] = [modelOn(stores[0]!, limits), modelOn(stores[1]!, limits)];
      // Worst case per call: 1000 output tokens at $15/M = $0.015 plus a few input tokens, so at most 6 fit in $0.10.
      let refused = 0;
      const calls = Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? a : b).complete(req(SONNET, 1000)).catch((err: unknown) => {
          if (!(err instanceof BudgetExceededError)) throw err;
          refused++;
          return err;
        }),
      );
      await until(() => refused + fake.requests.length === 20, 'every call reserved or was refused');
      expect(fake.requests.length).toBe(6);
      release();
      const results = await Promise.all(calls);
      const errors = results.filter((r): r is BudgetExceededError => r instanceof BudgetExceededError);
      expect(errors).toHaveLength(14);
      expect(errors[0]!.refusal).toMatchObject({ kind: 'budget', scope: 'conversation', unit: 'usd', limit: 100_000, resetsAt: undefined });
      expect(errors[0]!.message).toMatch(/this conversation has spent \$0\.\d\d of \$0\.10/);
      // Settled to the real usage: 10 in at $3/M + 100 out at $15/M = 1530 micro-USD each, nothing held.
      const totals = await stores[1]!.spend.totals(['conv:ops:telegram:1:usd']);
      expect(totals.get('conv:ops:telegram:1:usd')).toEqual({ used: 6 * 1530, reserved: 0 });
    });

    test('settling frees the headroom the worst case held: sequential calls go on until the real spend reaches the limit', async () => {
      fake.setHandler(() => ({ text: 'ok', usage: { input_tokens: 1000, output_tokens: 1000 } })); // $0.018 each
      const m = modelOn(stores[0]!, { conversation: { usd: 0.05 } });
      await m.complete(req(SONNET, 1000));
      await m.complete(req(SONNET, 1000)); // $0.036 used; worst case of a third: $0.015 + input
      await expect(m.complete(req(SONNET, 1000))).rejects.toThrow(/spent \$0\.04 of \$0\.05/);
      expect(fake.requests).toHaveLength(2);
    });

    test('a model with no price counts against the token limit only, and a day limit resets at UTC midnight', async () => {
      fake.setHandler(() => ({ text: 'ok', usage: { input_tokens: 300, output_tokens: 200 } }));
      const refusals: unknown[] = [];
      const m = modelOn(stores[0]!, { agentPerDay: { usd: 0.000001, tokens: 1500 } }, refusals);
      await m.complete(req('claude-unpriced-9', 500)); // 500 used
      await m.complete(req('claude-unpriced-9', 500)); // 1000 used
      const err = await m.complete(req('claude-unpriced-9', 500)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BudgetExceededError);
      expect((err as BudgetExceededError).refusal).toMatchObject({
        scope: 'agentPerDay',
        unit: 'tokens',
        spent: 1000,
        limit: 1500,
        resetsAt: Date.UTC(2026, 11, 3),
      });
      expect((err as Error).message).toContain('resets at 2026-12-03T00:00:00Z');
      expect(refusals).toHaveLength(1);
      expect(fake.requests).toHaveLength(2);
      clock = Date.UTC(2026, 11, 3, 0, 0, 1);
      await m.complete(req('claude-unpriced-9', 500));
      expect(fake.requests).toHaveLength(3);
    });

    test('a call refused on one line reserves nothing on the others', async () => {
      fake.setHandler(() => ({ text: 'ok', usage: { input_tokens: 1, output_tokens: 1 } }));
      const m = modelOn(stores[0]!, { agentPerMonth: { usd: 100 }, userPerDay: { usd: 0.001 } });
      await expect(m.complete(req(SONNET, 1000))).rejects.toThrow(/your daily limit has spent \$0\.00 of \$0\.00/);
      const t = await stores[0]!.spend.totals(['agent:ops:2026-12:usd']);
      expect(t.get('agent:ops:2026-12:usd') ?? { used: 0, reserved: 0 }).toEqual({ used: 0, reserved: 0 });
      expect(fake.requests).toHaveLength(0);
    });

    test('a soft limit: parallel calls over it share one question; approved, the raise holds on the other replica too', async () => {
      fake.setHandler(() => ({ text: 'ok', usage: { input_tokens: 1000, output_tokens: 1000 } })); // $0.018 each
      const asks: SoftLimitAsk[] = [];
      let decide!: (d: SoftDecision) => void;
      const approve = (ask: SoftLimitAsk) => {
        asks.push(ask);
        return new Promise<SoftDecision>((r) => (decide = r));
      };
      const limits: BudgetLimits = { conversation: { usd: { soft: 0.05, hard: 0.12 } } };
      const a = modelOn(stores[0]!, limits, [], approve);
      await a.complete(req(SONNET, 1000));
      await a.complete(req(SONNET, 1000)); // $0.036 used: a third's worst case ($0.015 + input) passes $0.05
      const parallel = [a.complete(req(SONNET, 1000)), a.complete(req(SONNET, 1000)), a.complete(req(SONNET, 1000))];
      await until(() => asks.length === 1, 'the question');
      expect(asks[0]!.question).toBe('this conversation has spent $0.04 of $0.05; allow $0.05 more? (the hard limit is $0.12)');
      expect(fake.requests).toHaveLength(2);
      decide({ outcome: 'approved' });
      // $0.10 now: the three waiting calls all fit (worst cases of $0.015 each), asked once.
      await Promise.all(parallel);
      expect(fake.requests).toHaveLength(5);
      expect(asks).toHaveLength(1);
      // $0.09 used: the next one asks again, for what is left under the hard limit.
      const next = a.complete(req(SONNET, 1000)).catch((e: unknown) => e as BudgetExceededError);
      await until(() => asks.length === 2, 'the second question');
      expect(asks[1]!.question).toBe('this conversation has spent $0.09 of $0.10; allow $0.02 more? (the hard limit is $0.12)');
      decide({ outcome: 'denied', by: 'Ada' });
      const refused = (await next) as BudgetExceededError;
      expect(refused).toBeInstanceOf(BudgetExceededError);
      expect(refused.refusal.soft).toEqual({ more: 20_000, outcome: { outcome: 'denied', by: 'Ada' } });
      expect(refused.message).toMatch(
        /^Stopped: the spending limit is reached: this conversation has spent \$0\.09 of \$0\.10 \(conversation, usd\); allowing \$0\.02 more was denied by Ada; it does not reset/,
      );
      // The other replica reads the raised limit from the store: $0.10, not $0.05.
      const asksOnB: SoftLimitAsk[] = [];
      const b = modelOn(stores[1]!, limits, [], async (ask) => (asksOnB.push(ask), { outcome: 'no_approver' }));
      await expect(b.complete(req(SONNET, 1000))).rejects.toThrow(
        /spent \$0\.09 of \$0\.10 .*it is a soft limit, but no approver is bound here to allow \$0\.02 more/,
      );
      expect(asksOnB).toHaveLength(1);
      expect(fake.requests).toHaveLength(5);
    });

    test('a call whose refusal was read before the approval takes that approval: no second card', async () => {
      fake.setHandler(() => ({ text: 'ok', usage: { input_tokens: 1000, output_tokens: 1000 } }));
      const asks: SoftLimitAsk[] = [];
      let decide!: (d: SoftDecision) => void;
      const approve = (ask: SoftLimitAsk) => {
        asks.push(ask);
        return new Promise<SoftDecision>((r) => (decide = r));
      };
      // The store as the gate sees it, with one refusal held back on its way (a slow replica, a busy loop).
      let hold: Promise<void> | undefined;
      let held = false;
      const spend: Store['spend'] = {
        ...stores[0]!.spend,
        reserve: async (lines, now) => {
          const r = await stores[0]!.spend.reserve(lines, now);
          if (!r.ok && hold) {
            const h = hold;
            hold = undefined;
            held = true;
            await h;
          }
          return r;
        },
      };
      const limits: BudgetLimits = { conversation: { usd: { soft: 0.05 } } };
      const m = budgetedModel(
        createAnthropicModel({ apiKey: KEY, baseURL: fake.url, retryBaseMs: 5 }),
        new BudgetGate({ spend, limits, now: () => clock, approve }),
        () => ({
          agent: 'ops',
          conversation: 'telegram:1',
        }),
      );
      await m.complete(req(SONNET, 1000));
      await m.complete(req(SONNET, 1000));
      const first = m.complete(req(SONNET, 1000));
      await until(() => asks.length === 1, 'the question');
      let release!: () => void;
      hold = new Promise<void>((r) => (release = r));
      let secondDone = false;
      const second = m.complete(req(SONNET, 1000)).finally(() => (secondDone = true));
      await until(() => held, 'the second refusal held');
      decide({ outcome: 'approved' });
      await first;
      release();
      await until(() => secondDone || asks.length > 1, 'the second call');
      expect(asks).toHaveLength(1);
      await second;
      expect(fake.requests).toHaveLength(4);
    });

    test('runs decided by other approvers get their own card; a run with none bound is refused without asking', async () => {
      fake.setHandler(() => ({ text: 'ok', usage: { input_tokens: 1000, output_tokens: 1000 } }));
      const limits: BudgetLimits = { agentPerDay: { usd: { soft: 0.05 } } };
      const asked: string[] = [];
      const deciders: Array<(d: SoftDecision) => void> = [];
      const gateFor = (conversation: string, approvers: string | undefined) =>
        budgetedModel(
          createAnthropicModel({ apiKey: KEY, baseURL: fake.url, retryBaseMs: 5 }),
          new BudgetGate({
            spend: stores[0]!.spend,
            limits,
            now: () => clock,
            approvers: () => approvers,
            approve: () => {
              asked.push(conversation);
              return new Promise<SoftDecision>((r) => deciders.push(r));
            },
          }),
          () => ({ agent: 'ops', conversation }),
        );
      const [slack, slack2, telegram, headless] = [
        gateFor('slack:1', 'slack:U1'),
        gateFor('slack:2', 'slack:U1'),
        gateFor('telegram:1', 'telegram:5'),
        gateFor('cli:1', undefined),
      ];
      await slack.complete(req(SONNET, 1000));
      await telegram.complete(req(SONNET, 1000)); // $0.036 today: the next call of any of them asks
      const waiting = [slack.complete(req(SONNET, 1000)), slack2.complete(req(SONNET, 1000)), telegram.complete(req(SONNET, 1000))];
      await until(() => asked.length === 2, 'a question per set of approvers');
      expect(asked.sort()).toEqual(['slack:1', 'telegram:1'].sort());
      await expect(headless.complete(req(SONNET, 1000))).rejects.toThrow(/it is a soft limit, but no approver is bound here to allow \$0\.05 more/);
      expect(asked).toHaveLength(2);
      for (const d of deciders) d({ outcome: 'approved' });
      await Promise.all(waiting);
      expect(fake.requests).toHaveLength(5);
    });

    test('a soft limit with its hard ceiling reached stops without asking', async () => {
      fake.setHandler(() => ({ text: 'ok', usage: { input_tokens: 1000, output_tokens: 1000 } }));
      const asks: SoftLimitAsk[] = [];
      const m = modelOn(stores[0]!, { conversation: { usd: { soft: 0.03, hard: 0.04 } } }, [], async (ask) => (asks.push(ask), { outcome: 'approved' }));
      await m.complete(req(SONNET, 1000)); // $0.018
      await m.complete(req(SONNET, 1000)); // asked once ($0.03 -> $0.04): $0.036
      expect(asks.map((x) => x.more)).toEqual([10_000]);
      await expect(m.complete(req(SONNET, 1000))).rejects.toThrow(/spent \$0\.04 of \$0\.04 \(conversation, usd\); it does not reset/);
      expect(asks).toHaveLength(1);
      expect(fake.requests).toHaveLength(2);
    });
  });
}
