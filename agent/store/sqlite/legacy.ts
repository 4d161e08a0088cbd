/**
 * Imports a store of the keyv build (one `keyv(key, value)` table, values `{"value":..,"expires":..}`,
 * keys `<namespace>:<key>`) into the version-1 tables. Pure: rows in, statements out; ./migrate.ts
 * runs them in the migration's transaction.
 *
 * Contract:
 * - Every namespace is converted: transcripts (`c:<conv>` -> a conversation with a row per message,
 *   revision 1; `tr:<conv>:<id>` -> tool results), runs (`q:<conv>` queued turns in list order,
 *   `run:<conv>` records), approvals (`r:<id>` -> the request minus `decision`, which goes to the
 *   decision column, kept until its expiry; `t:<token>` -> tokens), allowlists (`a:<agent>`),
 *   dedupe (-> events, keeping expiries), memory (list name = the old key, `a:<agent>` or
 *   `c:<agent>:<conv>`, entry id = the entry's `id`, in list order), reminders (`r:<id>`), mcp (-> cache
 *   under the old key).
 * - Lost on purpose: expired entries; the LRU index (`lru:<agent>`: recency is now updated_at order)
 *   and the derived lists (`tri:` tool-result ids, `p:` pending approval ids: pending is now
 *   "decision IS NULL"). Entries that fit none of the above are counted in `skipped` and logged.
 */
import { z } from 'zod';
import type { Statement } from './worker.js';

const Envelope = z.object({ value: z.unknown(), expires: z.number().nullish() }).loose();
const Conversation = z
  .object({ agent: z.string(), messages: z.array(z.unknown()), state: z.record(z.string(), z.unknown()).default({}), updatedAt: z.number() })
  .loose();
const Request = z.object({ id: z.string(), conversationKey: z.string(), createdAt: z.number().optional() }).loose();
const Token = z.object({ requestId: z.string(), choice: z.string() });
const Allowlist = z.object({ commands: z.array(z.string()).default([]), tools: z.array(z.string()).default([]) });
const MemoryList = z.array(z.object({ id: z.string() }).loose());
const Reminder = z.object({ id: z.string(), conversationKey: z.string(), dueAt: z.number(), rev: z.number() }).loose();
const Queued = z.array(z.object({ id: z.string(), turn: z.unknown() }));

/** Far enough to mean "no expiry" and still an exact integer. */
const NEVER = Number.MAX_SAFE_INTEGER;

export interface LegacyImport {
  stmts: Statement[];
  counts: Record<string, number>;
  skipped: string[];
}

const json = (v: unknown): string => JSON.stringify(v);

export function importKeyv(rows: ReadonlyArray<{ key: string; value: string }>, now: number): LegacyImport {
  const stmts: Statement[] = [];
  const counts: Record<string, number> = {};
  const skipped: string[] = [];
  const count = (what: string) => (counts[what] = (counts[what] ?? 0) + 1);
  const run = (sql: string, ...params: unknown[]) => stmts.push({ sql, params, mode: 'run' });

  for (const { key: fullKey, value: text } of rows) {
    const colon = fullKey.indexOf(':');
    const ns = fullKey.slice(0, colon);
    const key = fullKey.slice(colon + 1);
    let env;
    try {
      env = Envelope.parse(JSON.parse(text));
    } catch {
      skipped.push(fullKey);
      continue;
    }
    const expires = env.expires ?? NEVER;
    if (expires < now) continue; // keyv would not have returned it either
    const v = env.value;
    const ok = ((): boolean => {
      switch (ns) {
        case 'transcripts': {
          if (key.startsWith('c:')) {
            const c = Conversation.safeParse(v);
            if (!c.success) return false;
            const conv = key.slice(2);
            const n = c.data.messages.length;
            run(
              'INSERT INTO conversations(key, agent, state, updated_at, last_seq, base_seq, revision) VALUES (?, ?, ?, ?, ?, 0, 1)',
              conv,
              c.data.agent,
              json(c.data.state),
              c.data.updatedAt,
              n,
            );
            c.data.messages.forEach((m, i) => run('INSERT INTO messages(conversation, seq, message) VALUES (?, ?, ?)', conv, i + 1, json(m)));
            count('conversations');
            return true;
          }
          if (key.startsWith('tr:') && typeof v === 'string') {
            // Ids are `tr_<base64url>` (no colon); conversation keys may hold colons.
            const at = key.lastIndexOf(':');
            run('INSERT OR REPLACE INTO tool_results(conversation, id, content) VALUES (?, ?, ?)', key.slice(3, at), key.slice(at + 1), v);
            count('tool results');
            return true;
          }
          return key.startsWith('lru:') || key.startsWith('tri:');
        }
        case 'runs': {
          if (key.startsWith('q:')) {
            const q = Queued.safeParse(v);
            if (!q.success) return false;
            for (const t of q.data)
              run('INSERT OR REPLACE INTO queued_turns(conversation, id, turn, created_at) VALUES (?, ?, ?, 0)', key.slice(2), t.id, json(t.turn));
            count('queued turns');
            return true;
          }
          if (key.startsWith('run:')) {
            run('INSERT OR REPLACE INTO run_records(conversation, record) VALUES (?, ?)', key.slice(4), json(v));
            count('run records');
            return true;
          }
          return false;
        }
        case 'approvals': {
          if (key.startsWith('r:')) {
            const r = Request.safeParse(v);
            if (!r.success) return false;
            const { decision, ...request } = r.data as Record<string, unknown>;
            run(
              'INSERT OR REPLACE INTO approvals(id, conversation, request, decision, created_at, keep_until) VALUES (?, ?, ?, ?, ?, ?)',
              r.data.id,
              r.data.conversationKey,
              json(request),
              decision === undefined ? null : json(decision),
              r.data.createdAt ?? 0,
              expires,
            );
            count('approvals');
            return true;
          }
          if (key.startsWith('t:')) {
            const t = Token.safeParse(v);
            if (!t.success) return false;
            run('INSERT OR REPLACE INTO approval_tokens(token, request_id, choice) VALUES (?, ?, ?)', key.slice(2), t.data.requestId, t.data.choice);
            count('tokens');
            return true;
          }
          return key.startsWith('p:');
        }
        case 'allowlists': {
          const a = Allowlist.safeParse(v);
          if (!key.startsWith('a:') || !a.success) return false;
          for (const c of a.data.commands) run('INSERT OR IGNORE INTO allowlist(agent, kind, value, added_at) VALUES (?, ?, ?, 0)', key.slice(2), 'command', c);
          for (const t of a.data.tools) run('INSERT OR IGNORE INTO allowlist(agent, kind, value, added_at) VALUES (?, ?, ?, 0)', key.slice(2), 'tool', t);
          count('allowlists');
          return true;
        }
        case 'dedupe':
          run('INSERT OR REPLACE INTO events(id, expires_at) VALUES (?, ?)', key, expires);
          count('events');
          return true;
        case 'memory': {
          const m = MemoryList.safeParse(v);
          if (!m.success) return false;
          for (const e of m.data) run('INSERT OR REPLACE INTO memory(list, id, entry) VALUES (?, ?, ?)', key, e.id, json(e));
          count('memory lists');
          return true;
        }
        case 'reminders': {
          const r = Reminder.safeParse(v);
          if (!key.startsWith('r:') || !r.success) return false;
          run(
            'INSERT OR REPLACE INTO reminders(id, conversation, due_at, rev, reminder) VALUES (?, ?, ?, ?, ?)',
            r.data.id,
            r.data.conversationKey,
            r.data.dueAt,
            r.data.rev,
            json(v),
          );
          count('reminders');
          return true;
        }
        case 'mcp':
          run('INSERT OR REPLACE INTO cache(key, value) VALUES (?, ?)', key, json(v));
          count('cache entries');
          return true;
      }
      return false;
    })();
    if (!ok) skipped.push(fullKey);
  }
  return { stmts, counts, skipped };
}
