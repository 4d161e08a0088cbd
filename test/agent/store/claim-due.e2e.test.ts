/**
 * `reminders.claimDue` (agent/store/types.ts) on both engines, in one process: only due rows are
 * looked at, soonest first and at most `limit`; a row `next` declines is left as it was; a claimed
 * row holds `next`'s value and is not claimed again at its old rev. (Across processes:
 * test/agent/replica-signals.e2e.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { openSqliteStore } from '../../../agent/store/sqlite/index.js';
import { openPostgresStore } from '../../../agent/store/postgres/index.js';
import type { Store, StoredReminder } from '../../../agent/store/types.js';
import { testPostgresUrl } from '../../helpers/postgres.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-claim-due-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const engines: Array<[string, () => Promise<Store>]> = [
  ['sqlite', () => openSqliteStore({ path: join(dir, `s-${randomBytes(4).toString('hex')}.sqlite`), log: () => undefined })],
  ['postgres', async () => openPostgresStore({ url: await testPostgresUrl(), log: () => undefined })],
];

describe.each(engines)('reminders.claimDue on %s', (name, open) => {
  beforeAll(async () => {
    if (name === 'postgres') await testPostgresUrl();
  }, 200_000);

  test('claims the due rows next accepts, soonest first, within the limit; declined and future rows stay', async () => {
    const store = await open();
    try {
      const r = (id: string, dueAt: number): StoredReminder => ({ id, conversation: 'c', dueAt, rev: 1, reminder: { id } });
      for (const x of [r('late', 100), r('early', 50), r('declined', 60), r('future', 1_000), r('beyond-limit', 150)]) await store.reminders.put(x);
      const seen: string[] = [];
      const claimed = await store.reminders.claimDue(500, 4, (x) => {
        seen.push(x.id);
        return x.id === 'declined' ? undefined : { ...x, dueAt: x.dueAt + 10_000, rev: x.rev + 1, reminder: { id: x.id, claimed: true } };
      });
      expect(seen).toEqual(['early', 'declined', 'late', 'beyond-limit']);
      expect(claimed.map((c) => [c.before.id, c.before.rev, c.after.rev])).toEqual([
        ['early', 1, 2],
        ['late', 1, 2],
        ['beyond-limit', 1, 2],
      ]);
      expect(await store.reminders.get('early')).toEqual({ id: 'early', conversation: 'c', dueAt: 10_050, rev: 2, reminder: { id: 'early', claimed: true } });
      expect(await store.reminders.get('declined')).toEqual(r('declined', 60));
      expect(await store.reminders.get('future')).toEqual(r('future', 1_000));
      // The old rev is gone: a swap on it loses.
      expect(await store.reminders.swap('early', 1, r('early', 1))).toBe(false);
      expect(await store.reminders.claimDue(500, 10, (x) => ({ ...x, rev: x.rev + 1 }))).toEqual([
        { before: r('declined', 60), after: { ...r('declined', 60), rev: 2 } },
      ]);
    } finally {
      await store.close();
    }
  }, 60_000);
});
