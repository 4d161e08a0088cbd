/**
 * TEMPORARY, until the SQLite engine (agent/store/sqlite) lands: the `ApprovalRepo` over the keyv
 * `approvals` namespace, in the keys today's build writes (`r:<id>` = the request with its decision,
 * `t:<token>`, `p:<conversation>`), so a store of today's build keeps working. decideOnce is the
 * namespace's compare-and-set on "no decision yet" (bot/storage.ts decideOnce).
 */
import { z } from 'zod';
import type { ApprovalRepo } from '../agent/store/types.js';
import type { Storage } from './storage.js';

const Rec = z.object({ id: z.string(), conversationKey: z.string(), createdAt: z.number(), decision: z.unknown().optional() }).loose();
const TokenEntry = z.object({ requestId: z.string(), choice: z.string() });

export function kvApprovalRepo(storage: Pick<Storage, 'approvals' | 'decideOnce'>): ApprovalRepo {
  const kv = storage.approvals;
  const ids = async (conv: string): Promise<string[]> => {
    const p = z.array(z.string()).safeParse(await kv.get(`p:${conv}`));
    return p.success ? p.data : [];
  };
  const read = async (id: string) => {
    const r = Rec.safeParse(await kv.get(`r:${id}`));
    return r.success ? r.data : undefined;
  };
  return {
    async create(a) {
      const ttl = Math.max(1, a.keepUntil - Date.now());
      await kv.set(`r:${a.id}`, a.request, ttl);
      for (const t of a.tokens) await kv.set(`t:${t.token}`, { requestId: a.id, choice: t.choice }, ttl);
      await kv.set(`p:${a.conversation}`, [...(await ids(a.conversation)), a.id], ttl);
    },
    async get(id) {
      const r = await read(id);
      if (!r) return undefined;
      const { decision, ...request } = r;
      return { id, conversation: r.conversationKey, request, ...(decision !== undefined ? { decision } : {}), createdAt: r.createdAt };
    },
    async byToken(token) {
      const t = TokenEntry.safeParse(await kv.get(`t:${token}`));
      return t.success ? t.data : undefined;
    },
    async pending(conv) {
      return ids(conv);
    },
    async allPending() {
      const out: Array<{ id: string; conversation: string; createdAt: number }> = [];
      if (!kv.iterator) throw new Error('this store cannot list its entries');
      for await (const [key, value] of kv.iterator.call(kv)) {
        const r = Rec.safeParse(value);
        if (key.startsWith('r:') && r.success && r.data.decision === undefined) out.push({ id: r.data.id, conversation: r.data.conversationKey, createdAt: r.data.createdAt });
      }
      return out.sort((a, b) => a.createdAt - b.createdAt).map(({ id, conversation }) => ({ id, conversation }));
    },
    async update(id, request, keepUntil) {
      const r = await read(id);
      if (!r) return false;
      await kv.set(`r:${id}`, { ...(request as object), ...(r.decision !== undefined ? { decision: r.decision } : {}) }, Math.max(1, keepUntil - Date.now()));
      return true;
    },
    async decideOnce(id, decision, now, keepUntil) {
      const r = await read(id);
      if (!r) return false;
      if (!(await storage.decideOnce(`r:${id}`, { ...r, decision }, Math.max(1, keepUntil - now)))) return false;
      const rest = (await ids(r.conversationKey)).filter((x) => x !== id);
      if (rest.length) await kv.set(`p:${r.conversationKey}`, rest);
      else await kv.delete(`p:${r.conversationKey}`);
      return true;
    },
  };
}
