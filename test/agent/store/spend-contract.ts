/**
 * The spend part of the store contract (agent/store/types.ts SpendRepo), run by every engine's
 * contract file: raised limits (soft limits approved) and the purge of totals whose period ended,
 * both through `purge` and through the store's own sweep, on an injected clock.
 *
 * `opened.open(now)` opens a store whose clock is `now`; `opened.sweep(store)` runs the engine's
 * sweep and resolves with the store to read afterwards (SQLite sweeps when it opens: it reopens).
 */
import { randomBytes } from 'node:crypto';
import type { SpendLine, Store } from '../../../agent/store/types.js';

export interface SpendContractOptions {
  open(now: () => number): Promise<Store>;
  sweep(store: Store, now: () => number): Promise<Store>;
}

const DAY = Date.UTC(2026, 11, 2);
const NEXT_DAY = Date.UTC(2026, 11, 3);
const NEXT_MONTH = Date.UTC(2027, 0, 1);

export function describeSpendContract(engineName: string, o: SpendContractOptions): void {
  describe(`${engineName} store contract: spend`, () => {
    let clock = DAY + 3_600_000;
    let store: Store;
    let tag: string;
    const now = () => clock;
    beforeEach(async () => {
      clock = DAY + 3_600_000;
      tag = randomBytes(5).toString('hex');
      store = await o.open(now);
    });
    afterEach(async () => {
      await store.close();
    });
    const lines = () => ({
      day: { key: `agent:${tag}:2026-12-02:usd`, amount: 10, limit: 1000, resetsAt: NEXT_DAY } satisfies SpendLine,
      month: { key: `agent:${tag}:2026-12:usd`, amount: 10, limit: 1000, resetsAt: NEXT_MONTH } satisfies SpendLine,
      conv: { key: `conv:${tag}:c1:usd`, amount: 10, limit: 1000 } satisfies SpendLine,
    });
    const present = async (): Promise<string[]> => {
      const l = lines();
      const t = await store.spend.totals([l.day.key, l.month.key, l.conv.key]);
      return (['day', 'month', 'conv'] as const).filter((n) => t.has(l[n].key));
    };

    test('purge deletes the totals whose period ended, and only those; a conversation total stays', async () => {
      const l = lines();
      expect(await store.spend.reserve([l.day, l.month, l.conv], clock)).toEqual({ ok: true });
      await store.spend.settle([{ key: l.day.key, amount: 10, used: 7 }], clock);
      expect(await store.spend.purge(NEXT_DAY - 1)).toBe(0);
      expect(await present()).toEqual(['day', 'month', 'conv']);
      expect(await store.spend.purge(NEXT_DAY)).toBe(1);
      expect(await present()).toEqual(['month', 'conv']);
      expect(await store.spend.purge(NEXT_MONTH + 86_400_000)).toBe(1);
      expect(await present()).toEqual(['conv']);
    });

    test("the store's sweep purges past periods on its own clock", async () => {
      const l = lines();
      expect(await store.spend.reserve([l.day, l.month, l.conv], clock)).toEqual({ ok: true });
      store = await o.sweep(store, now);
      expect(await present()).toEqual(['day', 'month', 'conv']);
      clock = NEXT_DAY + 1;
      store = await o.sweep(store, now);
      expect(await present()).toEqual(['month', 'conv']);
    });

    test('a raised limit lets a total grow up to limit + raised, never past its cap; a raise from a stale value changes nothing', async () => {
      const soft: SpendLine = { key: `conv:${tag}:soft:usd`, amount: 100, limit: 100, cap: 250 };
      expect(await store.spend.reserve([soft], clock)).toEqual({ ok: true });
      expect(await store.spend.reserve([soft], clock)).toEqual({ ok: false, key: soft.key, total: { used: 0, reserved: 100 }, raised: 0 });
      expect(await store.spend.raise(soft, 0, 100, clock)).toBe(true);
      // The same step approved twice (two cards, two replicas) raises once.
      expect(await store.spend.raise(soft, 0, 100, clock)).toBe(false);
      expect(await store.spend.reserve([soft], clock)).toEqual({ ok: true });
      expect(await store.spend.reserve([{ ...soft, amount: 1 }], clock)).toMatchObject({ ok: false, raised: 100 });
      expect(await store.spend.raise(soft, 100, 200, clock)).toBe(true);
      // limit + raised = 300, but the cap is 250.
      expect(await store.spend.reserve([{ ...soft, amount: 51 }], clock)).toMatchObject({ ok: false, total: { used: 0, reserved: 200 }, raised: 200 });
      expect(await store.spend.reserve([{ ...soft, amount: 50 }], clock)).toEqual({ ok: true });
      // A line without a cap is a hard limit: a raise on its row does not move it.
      const hard: SpendLine = { key: `conv:${tag}:hard:usd`, amount: 100, limit: 100 };
      expect(await store.spend.reserve([hard], clock)).toEqual({ ok: true });
      expect(await store.spend.raise(hard, 0, 100, clock)).toBe(true);
      expect(await store.spend.reserve([{ ...hard, amount: 1 }], clock)).toMatchObject({ ok: false, raised: 100 });
    });

    test('a raise on a total with no row yet creates it, and its first reservation may use the raise', async () => {
      const soft: SpendLine = { key: `user:${tag}:u1:2026-12-02:usd`, amount: 150, limit: 100, cap: 1000, resetsAt: NEXT_DAY };
      expect(await store.spend.reserve([soft], clock)).toEqual({ ok: false, key: soft.key, total: { used: 0, reserved: 0 }, raised: 0 });
      expect(await store.spend.raise(soft, 0, 100, clock)).toBe(true);
      expect(await store.spend.reserve([soft], clock)).toEqual({ ok: true });
      // Its period's end came with the raise: the purge takes it.
      expect(await store.spend.purge(NEXT_DAY)).toBe(1);
    });
  });
}
