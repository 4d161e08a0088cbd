/**
 * The small repositories on SQLite: allowlists, the event ledger, memory, reminders, the cache.
 *
 * Contract (beyond agent/store/types.ts): lists "in the order added" are rowid order (an upsert
 * keeps the row, so a replaced memory entry keeps its place); the atomic operations are one
 * statement each (`events.claim`: an insert that overwrites only an expired id, RETURNING;
 * `reminders.swap`: an UPDATE on rev, RETURNING).
 */
import type { AllowlistKind, AllowlistRepo, CacheRepo, EventLedger, MemoryRepo, ReminderRepo, StoredReminder } from '../types.js';
import type { Exec } from './transcripts.js';
import type { Row, Statement } from './worker.js';

const first = async (exec: Exec, st: Statement): Promise<Row | undefined> => ((await exec([st])) as [Row | undefined])[0];
const rows = async (exec: Exec, st: Statement): Promise<Row[]> => ((await exec([st])) as [Row[]])[0];
const changed = async (exec: Exec, st: Statement): Promise<boolean> => ((await exec([st])) as [{ changes: number }])[0].changes > 0;

export function sqliteAllowlists(exec: Exec): AllowlistRepo {
  return {
    async list(agent) {
      const rs = await rows(exec, { sql: 'SELECT kind, value FROM allowlist WHERE agent = ? ORDER BY rowid', params: [agent], mode: 'all' });
      return rs.map((r) => ({ kind: String(r.kind) as AllowlistKind, value: String(r.value) }));
    },
    add: (agent, kind, value, now) =>
      changed(exec, {
        sql: 'INSERT INTO allowlist(agent, kind, value, added_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
        params: [agent, kind, value, now],
        mode: 'run',
      }),
    remove: (agent, kind, value) =>
      changed(exec, { sql: 'DELETE FROM allowlist WHERE agent = ? AND kind = ? AND value = ?', params: [agent, kind, value], mode: 'run' }),
  };
}

/** Claims an event id: a row comes back only for the one caller that claimed it (new, or expired). */
export const claimEventStatement = (id: string, ttlMs: number, now: number): Statement => ({
  sql: 'INSERT INTO events(id, expires_at) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET expires_at = excluded.expires_at WHERE events.expires_at <= ? RETURNING id',
  params: [id, now + ttlMs, now],
  mode: 'get',
});

export function sqliteEvents(exec: Exec): EventLedger {
  return {
    async claim(id, ttlMs, now) {
      return (await first(exec, claimEventStatement(id, ttlMs, now))) !== undefined;
    },
  };
}

export function sqliteMemory(exec: Exec): MemoryRepo {
  return {
    async list(list) {
      const rs = await rows(exec, { sql: 'SELECT id, entry FROM memory WHERE list = ? ORDER BY rowid', params: [list], mode: 'all' });
      return rs.map((r) => ({ id: String(r.id), entry: JSON.parse(String(r.entry)) }));
    },
    async put(list, id, entry) {
      await exec([
        {
          sql: 'INSERT INTO memory(list, id, entry) VALUES (?, ?, ?) ON CONFLICT(list, id) DO UPDATE SET entry = excluded.entry',
          params: [list, id, JSON.stringify(entry)],
          mode: 'run',
        },
      ]);
    },
    remove: (list, id) => changed(exec, { sql: 'DELETE FROM memory WHERE list = ? AND id = ?', params: [list, id], mode: 'run' }),
  };
}

const reminderOf = (r: Row): StoredReminder => ({
  id: String(r.id),
  conversation: String(r.conversation),
  dueAt: Number(r.due_at),
  rev: Number(r.rev),
  reminder: JSON.parse(String(r.reminder)),
});
const REMINDER_COLUMNS = 'id, conversation, due_at, rev, reminder';

export function sqliteReminders(exec: Exec): ReminderRepo {
  const repo: ReminderRepo = {
    async put(r) {
      await exec([
        {
          sql: `INSERT INTO reminders(${REMINDER_COLUMNS}) VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET conversation = excluded.conversation, due_at = excluded.due_at, rev = excluded.rev, reminder = excluded.reminder`,
          params: [r.id, r.conversation, r.dueAt, r.rev, JSON.stringify(r.reminder)],
          mode: 'run',
        },
      ]);
    },
    async get(id) {
      const r = await first(exec, { sql: `SELECT ${REMINDER_COLUMNS} FROM reminders WHERE id = ?`, params: [id], mode: 'get' });
      return r ? reminderOf(r) : undefined;
    },
    delete: (id) => changed(exec, { sql: 'DELETE FROM reminders WHERE id = ?', params: [id], mode: 'run' }),
    async byConversation(conversation) {
      return (
        await rows(exec, {
          sql: `SELECT ${REMINDER_COLUMNS} FROM reminders WHERE conversation = ? ORDER BY due_at, rowid`,
          params: [conversation],
          mode: 'all',
        })
      ).map(reminderOf);
    },
    async all() {
      return (await rows(exec, { sql: `SELECT ${REMINDER_COLUMNS} FROM reminders ORDER BY due_at, rowid`, params: [], mode: 'all' })).map(reminderOf);
    },
    async due(now, limit) {
      return (
        await rows(exec, {
          sql: `SELECT ${REMINDER_COLUMNS} FROM reminders WHERE due_at <= ? ORDER BY due_at, rowid LIMIT ?`,
          params: [now, limit],
          mode: 'all',
        })
      ).map(reminderOf);
    },
    async swap(id, expectedRev, next) {
      const r = await first(exec, {
        sql: 'UPDATE reminders SET conversation = ?, due_at = ?, rev = ?, reminder = ? WHERE id = ? AND rev = ? RETURNING id',
        params: [next.conversation, next.dueAt, next.rev, JSON.stringify(next.reminder), id, expectedRev],
        mode: 'get',
      });
      return r !== undefined;
    },
    async claimDue(now, limit, next) {
      // One process per store: the compare-and-set of each row is the claim.
      const out: Array<{ before: StoredReminder; after: StoredReminder }> = [];
      for (const before of await repo.due(now, limit)) {
        const after = next(before);
        if (after && (await repo.swap(before.id, before.rev, after))) out.push({ before, after });
      }
      return out;
    },
  };
  return repo;
}

export function sqliteCache(exec: Exec): CacheRepo {
  return {
    async get(key) {
      const r = await first(exec, { sql: 'SELECT value FROM cache WHERE key = ?', params: [key], mode: 'get' });
      return r ? JSON.parse(String(r.value)) : undefined;
    },
    async set(key, value) {
      await exec([
        {
          sql: 'INSERT INTO cache(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
          params: [key, JSON.stringify(value)],
          mode: 'run',
        },
      ]);
    },
    async delete(key) {
      await exec([{ sql: 'DELETE FROM cache WHERE key = ?', params: [key], mode: 'run' }]);
    },
  };
}
