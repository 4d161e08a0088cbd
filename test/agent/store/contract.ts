/**
 * The store contract suite: every engine runs it (sqlite.contract.e2e.test.ts, the PostgreSQL one).
 * It checks the behaviour stated in agent/store/types.ts through the repositories only, never a
 * table. Every test uses its own random keys, so `open` may return the same database every time
 * (lists that span the store are filtered to the test's keys).
 *
 * `extra.openInOtherProcess` (opens a fresh store and says how a child process opens the same one)
 * adds the races across real processes (./races.ts); `extra.bytesWritten` (what the engine has
 * written so far, e.g. WAL bytes or LSN) adds the check that an append costs the same at any length.
 */
import { randomBytes } from 'node:crypto';
import { FencedError, StoreConflictError, StoreError, type Store, type TranscriptRow } from '../../../agent/store/types.js';
import { describeStoreRaces, type OpenShared } from './races.js';

export interface ContractExtra {
  openInOtherProcess?: OpenShared;
  /** Bytes the engine has written so far for `store` (no background checkpoint resetting it). */
  bytesWritten?: (store: Store) => Promise<number>;
}

const rows = (from: number, to: number, text = 'm'): TranscriptRow[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ seq: from + i, message: { role: (from + i) % 2 ? 'user' : 'assistant', content: `${text}${from + i}` } }));

export function describeStoreContract(engineName: string, open: () => Promise<Store>, extra: ContractExtra = {}): void {
  describe(`${engineName} store contract`, () => {
    let store: Store;
    let tag: string;
    const k = (name: string) => `${name}:${tag}`;
    beforeEach(async () => {
      tag = randomBytes(5).toString('hex');
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    describe('transcripts', () => {
      test('append, load, revision; a new conversation is created once', async () => {
        const c = k('conv');
        expect(await store.transcripts.load(c)).toBeUndefined();
        expect(await store.transcripts.revision(c)).toBeUndefined();
        const w1 = await store.transcripts.write({
          conversation: c,
          agent: 'a',
          state: { todos: [1] },
          changes: [{ op: 'append', rows: rows(1, 3) }],
          now: 10,
        });
        expect(w1).toEqual({ revision: 1, created: true });
        const w2 = await store.transcripts.write({
          conversation: c,
          agent: 'a',
          state: { todos: [2] },
          changes: [{ op: 'append', rows: rows(4, 4) }],
          now: 20,
        });
        expect(w2).toEqual({ revision: 2, created: false });
        expect(await store.transcripts.revision(c)).toBe(2);
        const t = await store.transcripts.load(c);
        expect(t).toEqual({ agent: 'a', state: { todos: [2] }, updatedAt: 20, base: [], baseSeq: 0, rows: rows(1, 4), revision: 2 });
      });

      test('replace and truncate', async () => {
        const c = k('conv');
        await store.transcripts.write({ conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(1, 4) }], now: 1 });
        await store.transcripts.write({
          conversation: c,
          agent: 'a',
          state: {},
          changes: [
            { op: 'replace', rows: [{ seq: 2, message: 'moved out' }] },
            { op: 'truncate', afterSeq: 3 },
          ],
          now: 2,
        });
        expect((await store.transcripts.load(c))?.rows).toEqual([...rows(1, 1), { seq: 2, message: 'moved out' }, ...rows(3, 3)]);
        expect((await store.transcripts.listRecent({ agent: 'a', limit: 1000 })).find((l) => l.conversation === c)?.lastSeq).toBe(3);
        // The seqs after a truncate are free again.
        await store.transcripts.write({ conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(4, 5, 'new') }], now: 3 });
        expect((await store.transcripts.load(c))?.rows.slice(3)).toEqual(rows(4, 5, 'new'));
      });

      test('rebase: load is the latest summary plus what follows it', async () => {
        const c = k('conv');
        await store.transcripts.write({ conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(1, 5) }], now: 1 });
        await store.transcripts.write({ conversation: c, agent: 'a', state: {}, changes: [{ op: 'rebase', throughSeq: 3, base: ['summary 1'] }], now: 2 });
        let t = await store.transcripts.load(c);
        expect(t).toMatchObject({ base: ['summary 1'], baseSeq: 3, rows: rows(4, 5) });
        await store.transcripts.write({
          conversation: c,
          agent: 'a',
          state: {},
          changes: [
            { op: 'append', rows: rows(6, 7) },
            { op: 'rebase', throughSeq: 6, base: ['summary 2'] },
          ],
          now: 3,
        });
        t = await store.transcripts.load(c);
        expect(t).toMatchObject({ base: ['summary 2'], baseSeq: 6, rows: rows(7, 7) });
        // A truncate below the summary drops it: the earlier one stands again.
        await store.transcripts.write({ conversation: c, agent: 'a', state: {}, changes: [{ op: 'truncate', afterSeq: 5 }], now: 4 });
        expect(await store.transcripts.load(c)).toMatchObject({ base: ['summary 1'], baseSeq: 3, rows: rows(4, 5) });
      });

      test('expectRevision: a stale write is a StoreConflictError and changes nothing', async () => {
        const c = k('conv');
        expect(
          await store.transcripts.write({ conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(1, 1) }], now: 1, expectRevision: 0 }),
        ).toEqual({ revision: 1, created: true });
        const again = store.transcripts.write({
          conversation: c,
          agent: 'a',
          state: {},
          changes: [{ op: 'append', rows: rows(2, 2) }],
          now: 2,
          expectRevision: 0,
        });
        await expect(again).rejects.toBeInstanceOf(StoreConflictError);
        await expect(again).rejects.toMatchObject({ conversation: c, expected: 0, actual: 1 });
        expect(
          await store.transcripts.write({
            conversation: c,
            agent: 'a',
            state: { s: 1 },
            changes: [{ op: 'append', rows: rows(2, 2) }],
            now: 3,
            expectRevision: 1,
          }),
        ).toEqual({ revision: 2, created: false });
        await expect(
          store.transcripts.write({ conversation: c, agent: 'b', state: { s: 2 }, changes: [{ op: 'append', rows: rows(3, 3) }], now: 4, expectRevision: 1 }),
        ).rejects.toMatchObject({ expected: 1, actual: 2 });
        expect(await store.transcripts.load(c)).toMatchObject({ agent: 'a', state: { s: 1 }, updatedAt: 3, rows: rows(1, 2), revision: 2 });
        await expect(store.transcripts.write({ conversation: k('none'), agent: 'a', state: {}, changes: [], now: 1, expectRevision: 3 })).rejects.toMatchObject(
          { actual: undefined },
        );
      });

      test('listRecent: most recently active first, per agent, limit and offset', async () => {
        const agent = k('agent');
        for (const [name, now] of [
          ['x', 10],
          ['y', 30],
          ['z', 20],
        ] as const) {
          await store.transcripts.write({ conversation: k(name), agent, state: {}, changes: [{ op: 'append', rows: rows(1, 2) }], now });
        }
        await store.transcripts.write({ conversation: k('other'), agent: k('agent2'), state: {}, changes: [], now: 40 });
        const list = await store.transcripts.listRecent({ agent, limit: 10 });
        expect(list).toEqual([
          { conversation: k('y'), agent, updatedAt: 30, lastSeq: 2 },
          { conversation: k('z'), agent, updatedAt: 20, lastSeq: 2 },
          { conversation: k('x'), agent, updatedAt: 10, lastSeq: 2 },
        ]);
        expect((await store.transcripts.listRecent({ agent, limit: 1, offset: 1 })).map((l) => l.conversation)).toEqual([k('z')]);
        const everyone = (await store.transcripts.listRecent({ limit: 100_000 })).filter((l) => l.conversation.endsWith(tag)).map((l) => l.conversation);
        expect(everyone).toEqual([k('other'), k('y'), k('z'), k('x')]);
      });

      test('applyRetention by count and by age deletes conversations with their tool results; other agents untouched', async () => {
        const agent = k('agent');
        for (let i = 1; i <= 6; i++) {
          await store.transcripts.putToolResult(k(`c${i}`), 'tr_1', `big ${i}`);
          await store.transcripts.write({ conversation: k(`c${i}`), agent, state: {}, changes: [{ op: 'append', rows: rows(1, 2) }], now: i * 100 });
        }
        await store.transcripts.write({ conversation: k('other'), agent: k('agent2'), state: {}, changes: [], now: 1 });
        expect((await store.transcripts.applyRetention({ agent, keep: 4, idleBefore: 0 })).sort()).toEqual([k('c1'), k('c2')]);
        expect(await store.transcripts.load(k('c1'))).toBeUndefined();
        expect(await store.transcripts.getToolResult(k('c2'), 'tr_1')).toBeUndefined();
        expect(await store.transcripts.getToolResult(k('c3'), 'tr_1')).toBe('big 3');
        expect((await store.transcripts.applyRetention({ agent, keep: 100, idleBefore: 450 })).sort()).toEqual([k('c3'), k('c4')]);
        expect((await store.transcripts.listRecent({ agent, limit: 10 })).map((l) => l.conversation)).toEqual([k('c6'), k('c5')]);
        expect(await store.transcripts.applyRetention({ agent, keep: 2, idleBefore: 0 })).toEqual([]);
        expect(await store.transcripts.load(k('other'))).toBeDefined();
      });

      test('tool results belong to their conversation; delete removes transcript and results', async () => {
        const c = k('conv');
        await store.transcripts.write({ conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(1, 1) }], now: 1 });
        const big = 'x'.repeat(100_000);
        await store.transcripts.putToolResult(c, 'tr_abc', big);
        expect(await store.transcripts.getToolResult(c, 'tr_abc')).toBe(big);
        expect(await store.transcripts.getToolResult(k('other'), 'tr_abc')).toBeUndefined();
        await store.transcripts.delete(c);
        expect(await store.transcripts.load(c)).toBeUndefined();
        expect(await store.transcripts.getToolResult(c, 'tr_abc')).toBeUndefined();
        expect(await store.transcripts.revision(c)).toBeUndefined();
      });

      test('a long transcript: load of 3,000 messages with a summary at 2,990 returns the summary and 10 rows', async () => {
        const c = k('long');
        for (let from = 1; from <= 3000; from += 500) {
          await store.transcripts.write({ conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(from, from + 499) }], now: from });
        }
        await store.transcripts.write({ conversation: c, agent: 'a', state: {}, changes: [{ op: 'rebase', throughSeq: 2990, base: ['summary'] }], now: 4000 });
        const t = await store.transcripts.load(c);
        expect(t?.base).toEqual(['summary']);
        expect(t?.rows.map((r) => r.seq)).toEqual(Array.from({ length: 10 }, (_, i) => 2991 + i));
        expect((await store.transcripts.listRecent({ agent: 'a', limit: 100_000 })).find((l) => l.conversation === c)?.lastSeq).toBe(3000);
      }, 60_000);

      if (extra.bytesWritten) {
        const bytesWritten = extra.bytesWritten;
        test('an append writes as many bytes at message 3,000 as at message 3', async () => {
          const short = k('short');
          const long = k('long');
          await store.transcripts.write({ conversation: short, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(1, 3) }], now: 1 });
          for (let from = 1; from <= 3000; from += 500) {
            await store.transcripts.write({ conversation: long, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(from, from + 499) }], now: 1 });
          }
          const cost = async (c: string, after: number) => {
            const before = await bytesWritten(store);
            for (let i = 1; i <= 20; i++) {
              await store.transcripts.write({
                conversation: c,
                agent: 'a',
                state: { n: i },
                changes: [{ op: 'append', rows: rows(after + i, after + i) }],
                now: 10 + i,
              });
            }
            return (await bytesWritten(store)) - before;
          };
          const atShort = await cost(short, 3);
          const atLong = await cost(long, 3000);
          expect(atShort).toBeGreaterThan(0);
          expect(atLong).toBeLessThanOrEqual(atShort * 1.25);
        }, 60_000);
      }
    });

    describe('runs and checkpoints', () => {
      test('queued turns oldest first; one record per conversation', async () => {
        await store.runs.enqueueTurn(k('c1'), 't1', { text: 'a' }, 5);
        await store.runs.enqueueTurn(k('c2'), 't2', { text: 'b' }, 5);
        await store.runs.enqueueTurn(k('c1'), 't0', { text: 'c' }, 7);
        const mine = async () => (await store.runs.queuedTurns()).filter((q) => q.conversation.endsWith(tag));
        expect(await mine()).toEqual([
          { conversation: k('c1'), id: 't1', turn: { text: 'a' } },
          { conversation: k('c2'), id: 't2', turn: { text: 'b' } },
          { conversation: k('c1'), id: 't0', turn: { text: 'c' } },
        ]);
        await store.runs.dropTurn(k('c1'), 't1');
        expect((await mine()).map((q) => q.id)).toEqual(['t2', 't0']);
        await store.runs.saveRecord(k('c1'), { step: 1 });
        await store.runs.saveRecord(k('c1'), { step: 2 });
        await store.runs.saveRecord(k('c2'), { step: 9 });
        const records = async () =>
          (await store.runs.records()).filter((r) => r.conversation.endsWith(tag)).sort((a, b) => a.conversation.localeCompare(b.conversation));
        expect(await records()).toEqual([
          { conversation: k('c1'), record: { step: 2 } },
          { conversation: k('c2'), record: { step: 9 } },
        ]);
        await store.runs.dropRecord(k('c1'));
        expect(await records()).toEqual([{ conversation: k('c2'), record: { step: 9 } }]);
      });

      test('a turn with its platform event: claimed and stored together, a redelivery stores nothing', async () => {
        const ev = `m:telegram:${tag}:1`;
        const mine = async () => (await store.runs.queuedTurns()).filter((q) => q.conversation === k('claimed')).map((q) => q.id);
        expect(await store.runs.enqueueTurn(k('claimed'), 'first', { text: 'a' }, 10, { event: ev, ttlMs: 1000 })).toBe(true);
        // The same event again (Telegram redelivering to another replica): refused, nothing stored.
        expect(await store.runs.enqueueTurn(k('claimed'), 'second', { text: 'a' }, 20, { event: ev, ttlMs: 1000 })).toBe(false);
        expect(await mine()).toEqual(['first']);
        // The event ledger saw the claim: a plain claim of the same id loses too.
        expect(await store.events.claim(ev, 1000, 30)).toBe(false);
        // Past its TTL the event may be taken again.
        expect(await store.runs.enqueueTurn(k('claimed'), 'third', { text: 'a' }, 2000, { event: ev, ttlMs: 1000 })).toBe(true);
        expect(await mine()).toEqual(['first', 'third']);
      });

      test('a checkpoint writes transcript, queued turn and record together', async () => {
        const c = k('conv');
        await store.runs.enqueueTurn(c, 'turn', { text: 'hi' }, 1);
        await store.checkpoint({
          transcript: { conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(1, 2) }], now: 2, expectRevision: 0 },
          dropTurn: { conversation: c, id: 'turn' },
          record: { conversation: c, record: { calls: {} } },
        });
        expect((await store.transcripts.load(c))?.rows).toEqual(rows(1, 2));
        expect((await store.runs.queuedTurns()).filter((q) => q.conversation === c)).toEqual([]);
        expect((await store.runs.records()).filter((r) => r.conversation === c)).toEqual([{ conversation: c, record: { calls: {} } }]);
        await store.checkpoint({ record: { conversation: c, record: null } });
        expect((await store.runs.records()).filter((r) => r.conversation === c)).toEqual([]);
      });

      test('a checkpoint with a transcript resolves with its new revision (append only, and with other changes)', async () => {
        const c = k('conv');
        await store.runs.enqueueTurn(c, 'turn', { text: 'hi' }, 1);
        const first = await store.checkpoint({
          transcript: { conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(1, 2) }], now: 2, expectRevision: 0 },
          dropTurn: { conversation: c, id: 'turn' },
        });
        expect(first).toEqual({ revision: await store.transcripts.revision(c) });
        const second = await store.checkpoint({
          transcript: {
            conversation: c,
            agent: 'a',
            state: {},
            changes: [
              { op: 'truncate', afterSeq: 1 },
              { op: 'append', rows: rows(2, 3) },
            ],
            now: 3,
            expectRevision: first!.revision,
          },
          record: { conversation: c, record: { calls: {} } },
        });
        expect(second).toEqual({ revision: await store.transcripts.revision(c) });
        expect(second!.revision).toBeGreaterThan(first!.revision);
      });

      test('a checkpoint whose transcript part fails writes nothing', async () => {
        const c = k('conv');
        await store.transcripts.write({ conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(1, 1) }], now: 1 });
        await store.runs.enqueueTurn(c, 'turn', { text: 'hi' }, 1);
        await store.runs.saveRecord(c, { v: 1 });
        await expect(
          store.checkpoint({
            transcript: { conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(2, 2) }], now: 2, expectRevision: 7 },
            dropTurn: { conversation: c, id: 'turn' },
            record: { conversation: c, record: { v: 2 } },
          }),
        ).rejects.toBeInstanceOf(StoreConflictError);
        expect((await store.transcripts.load(c))?.rows).toEqual(rows(1, 1));
        expect((await store.runs.queuedTurns()).filter((q) => q.conversation === c).map((q) => q.id)).toEqual(['turn']);
        expect((await store.runs.records()).filter((r) => r.conversation === c)).toEqual([{ conversation: c, record: { v: 1 } }]);
        // A failing later part (a seq already stored) undoes the earlier ones too.
        await expect(
          store.checkpoint({
            dropTurn: { conversation: c, id: 'turn' },
            transcript: { conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(1, 1) }], now: 3 },
          }),
        ).rejects.toThrow();
        expect((await store.runs.queuedTurns()).filter((q) => q.conversation === c).map((q) => q.id)).toEqual(['turn']);
        expect(await store.transcripts.revision(c)).toBe(1);
      });
    });

    describe('leases and fencing', () => {
      test('take bumps the epoch per conversation; only the latest fence holds', async () => {
        const c = k('conv');
        expect(await store.leases.current(c)).toBeUndefined();
        const a = await store.leases.take(c, 'replica-a', 1);
        expect(a).toEqual({ conversation: c, owner: 'replica-a', epoch: 1 });
        expect(await store.leases.holds(a)).toBe(true);
        const b = await store.leases.take(c, 'replica-b', 2);
        expect(b.epoch).toBe(2);
        expect(await store.leases.holds(a)).toBe(false);
        expect(await store.leases.holds(b)).toBe(true);
        expect(await store.leases.current(c)).toEqual(b);
        // Another conversation has its own epochs; a fence names its owner too.
        expect((await store.leases.take(k('other'), 'replica-a', 3)).epoch).toBe(1);
        expect(await store.leases.holds({ ...b, owner: 'replica-a' })).toBe(false);
      });

      test('a fenced write, checkpoint or record save is refused once the epoch moved on, changing nothing', async () => {
        const c = k('conv');
        const old = await store.leases.take(c, 'replica-a', 1);
        await store.runs.enqueueTurn(c, 'turn', { text: 'hi' }, 1);
        const w1 = await store.transcripts.write({
          conversation: c,
          agent: 'a',
          state: {},
          changes: [{ op: 'append', rows: rows(1, 1) }],
          now: 1,
          expectRevision: 0,
          fence: old,
        });
        expect(w1.revision).toBe(1);
        await store.runs.saveRecord(c, { v: 1 }, old);
        const now = await store.leases.take(c, 'replica-b', 2);
        const refused = async (p: Promise<unknown>) => {
          const err = await p.then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(err).toBeInstanceOf(FencedError);
          expect(err).toBeInstanceOf(StoreError);
          expect(err).toMatchObject({ fence: old, current: now.epoch });
          expect((err as Error).message).toContain(`lost conversation ${c} to another replica (epoch 1, now 2)`);
        };
        await refused(
          store.transcripts.write({
            conversation: c,
            agent: 'a',
            state: {},
            changes: [{ op: 'append', rows: rows(2, 2) }],
            now: 2,
            expectRevision: 1,
            fence: old,
          }),
        );
        // A write with other changes (the transaction path) too.
        await refused(
          store.transcripts.write({
            conversation: c,
            agent: 'a',
            state: {},
            changes: [{ op: 'replace', rows: [{ seq: 1, message: 'x' }] }],
            now: 2,
            fence: old,
          }),
        );
        await refused(
          store.checkpoint({
            fence: old,
            transcript: { conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(2, 2) }], now: 2, expectRevision: 1 },
            dropTurn: { conversation: c, id: 'turn' },
            record: { conversation: c, record: { v: 2 } },
          }),
        );
        await refused(store.checkpoint({ fence: old, dropTurn: { conversation: c, id: 'turn' }, record: { conversation: c, record: null } }));
        await refused(store.runs.saveRecord(c, { v: 3 }, old));
        await refused(store.runs.dropRecord(c, old));
        // A first write (the row created, or created-or-updated) under a moved fence creates nothing.
        for (const expectRevision of [0, undefined]) {
          await refused(
            store.checkpoint({
              fence: old,
              transcript: {
                conversation: c,
                agent: 'a',
                state: {},
                changes: [{ op: 'append', rows: rows(2, 2) }],
                now: 2,
                ...(expectRevision === 0 ? { expectRevision } : {}),
              },
              record: { conversation: c, record: { v: 5 } },
            }),
          );
        }
        const fresh = k('fresh');
        const freshOld = await store.leases.take(fresh, 'replica-a', 1);
        const freshNow = await store.leases.take(fresh, 'replica-b', 2);
        const err = await store
          .checkpoint({
            fence: freshOld,
            transcript: { conversation: fresh, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(1, 1) }], now: 2, expectRevision: 0 },
          })
          .catch((e: unknown) => e);
        expect(err).toMatchObject({ name: 'FencedError', current: freshNow.epoch });
        expect(await store.transcripts.load(fresh)).toBeUndefined();
        expect((await store.transcripts.load(c))?.rows).toEqual(rows(1, 1));
        expect(await store.runs.pending(c, 'turn')).toEqual({ record: { v: 1 }, turn: { text: 'hi' } });
        // The new holder writes.
        await store.checkpoint({
          fence: now,
          transcript: { conversation: c, agent: 'a', state: {}, changes: [{ op: 'append', rows: rows(2, 2) }], now: 3, expectRevision: 1 },
          dropTurn: { conversation: c, id: 'turn' },
          record: { conversation: c, record: null },
        });
        expect((await store.transcripts.load(c))?.rows).toEqual(rows(1, 2));
        expect(await store.runs.pending(c, 'turn')).toEqual({});
        await store.runs.saveRecord(c, { v: 4 }, now);
        expect(await store.runs.pending(c)).toEqual({ record: { v: 4 } });
      });
    });

    describe('approvals', () => {
      const T = 1_000_000;
      const create = (id: string, conversation: string, createdAt: number) =>
        store.approvals.create({
          id,
          conversation,
          request: { id, card: { title: id } },
          tokens: [
            { token: `${id}-yes`, choice: 'once' },
            { token: `${id}-no`, choice: 'deny' },
          ],
          createdAt,
          keepUntil: T + 1000,
        });

      test('create, get, byToken, pending per conversation and overall, oldest first', async () => {
        await create(k('r2'), k('c1'), T + 2);
        await create(k('r1'), k('c1'), T + 1);
        await create(k('r3'), k('c2'), T + 3);
        expect(await store.approvals.get(k('r1'), T)).toEqual({
          id: k('r1'),
          conversation: k('c1'),
          request: { id: k('r1'), card: { title: k('r1') } },
          createdAt: T + 1,
        });
        expect(await store.approvals.get(k('nope'), T)).toBeUndefined();
        expect(await store.approvals.byToken(`${k('r1')}-no`, T)).toEqual({ requestId: k('r1'), choice: 'deny' });
        expect(await store.approvals.byToken('unknown', T)).toBeUndefined();
        expect(await store.approvals.pending(k('c1'), T)).toEqual([k('r1'), k('r2')]);
        expect((await store.approvals.allPending(T)).filter((p) => p.id.endsWith(tag))).toEqual([
          { id: k('r1'), conversation: k('c1') },
          { id: k('r2'), conversation: k('c1') },
          { id: k('r3'), conversation: k('c2') },
        ]);
      });

      test('decideOnce wins once; update never clobbers the decision; expiry by keepUntil', async () => {
        await create(k('r1'), k('c1'), T);
        expect(await store.approvals.update(k('r1'), { id: k('r1'), cardHandle: 'h1' }, T + 1000)).toBe(true);
        expect(await store.approvals.update(k('nope'), {}, T + 1000)).toBe(false);
        expect(await store.approvals.decideOnce(k('r1'), { choice: 'once', by: 'u1' }, T + 5, T + 5000)).toBe(true);
        expect(await store.approvals.decideOnce(k('r1'), { choice: 'deny', by: 'u2' }, T + 6, T + 5000)).toBe(false);
        expect(await store.approvals.update(k('r1'), { id: k('r1'), cardHandle: 'h2' }, T + 5000)).toBe(true);
        expect(await store.approvals.get(k('r1'), T + 10)).toEqual({
          id: k('r1'),
          conversation: k('c1'),
          request: { id: k('r1'), cardHandle: 'h2' },
          decision: { choice: 'once', by: 'u1' },
          createdAt: T,
        });
        expect(await store.approvals.pending(k('c1'), T + 10)).toEqual([]);
        expect(await store.approvals.get(k('r1'), T + 5000)).toBeDefined();
        expect(await store.approvals.get(k('r1'), T + 5001)).toBeUndefined();

        await create(k('r2'), k('c1'), T);
        expect(await store.approvals.byToken(`${k('r2')}-yes`, T + 1001)).toBeUndefined();
        expect(await store.approvals.decideOnce(k('r2'), { choice: 'once' }, T + 1001, T + 9000)).toBe(false);
        expect(await store.approvals.pending(k('c1'), T + 1001)).toEqual([]);
      });
    });

    test('allowlists: in the order granted; add and remove say whether they changed anything', async () => {
      const a = k('agent');
      expect(await store.allowlists.add(a, 'command', 'git status', 1)).toBe(true);
      expect(await store.allowlists.add(a, 'tool', 'web_fetch', 2)).toBe(true);
      expect(await store.allowlists.add(a, 'command', 'git status', 3)).toBe(false);
      expect(await store.allowlists.add(a, 'tool', 'git status', 4)).toBe(true);
      expect(await store.allowlists.list(a)).toEqual([
        { kind: 'command', value: 'git status' },
        { kind: 'tool', value: 'web_fetch' },
        { kind: 'tool', value: 'git status' },
      ]);
      expect(await store.allowlists.remove(a, 'command', 'git status')).toBe(true);
      expect(await store.allowlists.remove(a, 'command', 'git status')).toBe(false);
      expect(await store.allowlists.list(k('other'))).toEqual([]);
    });

    test('events: a claim wins once within its ttl, again after it', async () => {
      const id = k('m:telegram:1');
      expect(await store.events.claim(id, 1000, 5000)).toBe(true);
      expect(await store.events.claim(id, 1000, 5999)).toBe(false);
      expect(await store.events.claim(k('other'), 1000, 5999)).toBe(true);
      expect(await store.events.claim(id, 1000, 6000)).toBe(true);
      expect(await store.events.claim(id, 1000, 6500)).toBe(false);
    });

    test('memory: in the order added; a replaced entry keeps its place', async () => {
      const list = `a:${k('agent')}`;
      await store.memory.put(list, 'a1', { text: 'one' });
      await store.memory.put(list, 'a2', { text: 'two' });
      await store.memory.put(list, 'a3', { text: 'three' });
      await store.memory.put(`c:${k('agent')}:conv`, 'c1', { text: 'elsewhere' });
      await store.memory.put(list, 'a1', { text: 'one, edited' });
      expect(await store.memory.list(list)).toEqual([
        { id: 'a1', entry: { text: 'one, edited' } },
        { id: 'a2', entry: { text: 'two' } },
        { id: 'a3', entry: { text: 'three' } },
      ]);
      expect(await store.memory.remove(list, 'a2')).toBe(true);
      expect(await store.memory.remove(list, 'a2')).toBe(false);
      await store.memory.put(list, 'a4', { text: 'four' });
      expect((await store.memory.list(list)).map((e) => e.id)).toEqual(['a1', 'a3', 'a4']);
    });

    test('reminders: soonest first, due, swap on rev', async () => {
      const r = (id: string, conversation: string, dueAt: number, rev = 1) => ({
        id: k(id),
        conversation: k(conversation),
        dueAt,
        rev,
        reminder: { text: id },
      });
      await store.reminders.put(r('late', 'c1', 3000));
      await store.reminders.put(r('soon', 'c1', 1000));
      await store.reminders.put(r('mid', 'c2', 2000));
      expect((await store.reminders.byConversation(k('c1'))).map((x) => x.id)).toEqual([k('soon'), k('late')]);
      expect((await store.reminders.all()).filter((x) => x.id.endsWith(tag)).map((x) => x.id)).toEqual([k('soon'), k('mid'), k('late')]);
      expect((await store.reminders.due(2000, 1000)).filter((x) => x.id.endsWith(tag)).map((x) => x.id)).toEqual([k('soon'), k('mid')]);
      expect(await store.reminders.get(k('mid'))).toEqual(r('mid', 'c2', 2000));
      expect(await store.reminders.swap(k('soon'), 1, r('soon', 'c1', 5000, 2))).toBe(true);
      expect(await store.reminders.swap(k('soon'), 1, r('soon', 'c1', 6000, 2))).toBe(false);
      expect(await store.reminders.get(k('soon'))).toEqual(r('soon', 'c1', 5000, 2));
      expect(await store.reminders.swap(k('missing'), 1, r('missing', 'c1', 1))).toBe(false);
      expect(await store.reminders.delete(k('soon'))).toBe(true);
      expect(await store.reminders.delete(k('soon'))).toBe(false);
      expect(await store.reminders.get(k('soon'))).toBeUndefined();
    });

    test('cache: get, set, delete', async () => {
      const key = k('tools:main\u0000files');
      expect(await store.cache.get(key)).toBeUndefined();
      await store.cache.set(key, { tools: [{ name: 'read' }], at: 1 });
      await store.cache.set(key, { tools: [], at: 2 });
      expect(await store.cache.get(key)).toEqual({ tools: [], at: 2 });
      await store.cache.delete(key);
      expect(await store.cache.get(key)).toBeUndefined();
    });

    test('description never holds a password; calls after close reject', async () => {
      expect(store.description).toMatch(new RegExp(`^${store.engine === 'sqlite' ? 'sqlite' : 'postgres'}://`));
      expect(store.description).not.toMatch(/:[^/@]*@/);
      const other = await open();
      await other.close();
      await expect(other.cache.get('x')).rejects.toThrow();
    });
  });

  if (extra.openInOtherProcess) describeStoreRaces(engineName, extra.openInOtherProcess);
}
