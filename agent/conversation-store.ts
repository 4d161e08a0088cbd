/**
 * Conversation store: transcripts by conversation key, with small per-conversation state (todos),
 * bounded per agent by least-recent use.
 *
 * Contract:
 * - `load` returns a transcript that always satisfies the tool_use/tool_result invariant: a transcript
 *   left with unanswered tool_use blocks (a crash, a /stop) is repaired with error results, unless the
 *   caller resumes it (`load(key, { raw: true })`, used by the runner to continue a durable wait).
 * - At most `maxConversations` per agent; saving a new one evicts the least recently used. The LRU
 *   index is persisted, so a restart keeps every conversation and the order.
 * - `reset` starts a new conversation in that place (the old transcript is deleted).
 * - Big tool results moved out of a transcript (agent/context-keeper.ts) are stored per conversation
 *   under an unguessable id: `getToolResult(key, id)` finds only that conversation's own. They are
 *   deleted with the conversation (reset or LRU eviction).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { KV } from './kv.js';
import { Transcript, type Message, type ContentBlock } from './messages.js';

const Stored = z.object({
  agent: z.string(),
  messages: Transcript,
  state: z.record(z.string(), z.unknown()).default({}),
  updatedAt: z.number(),
});
export type StoredConversation = { agent: string; messages: Message[]; state: Record<string, unknown>; updatedAt: number };

const LruIndex = z.array(z.string());

export class ConversationStore {
  /** agent -> keys, least recently used first (a Set keeps insertion order: delete + add = touch). */
  private readonly lru = new Map<string, Set<string>>();
  private readonly lruLoads = new Map<string, Promise<Set<string>>>();
  /** Agents whose index was only reordered since it was last written (see touch). */
  private readonly reordered = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly kv: KV,
    private readonly maxConversations: (agent: string) => number,
    /** How long a mere reordering of the LRU index may wait before it is written. */
    private readonly reorderWriteDelayMs = 1000,
  ) {}

  async load(key: string, opts: { raw?: boolean } = {}): Promise<StoredConversation | undefined> {
    const raw = await this.kv.get(`c:${key}`);
    if (raw === undefined || raw === null) return undefined;
    const parsed = Stored.safeParse(raw);
    if (!parsed.success) {
      // A corrupt entry must not wedge the conversation forever: start over, and say so in logs.
      console.warn(`[store] transcript for ${key} is unreadable; starting a new conversation`);
      return undefined;
    }
    const conv = parsed.data as StoredConversation;
    if (!opts.raw) conv.messages = repairTranscript(conv.messages);
    return conv;
  }

  async save(key: string, conv: StoredConversation): Promise<void> {
    conv.updatedAt = Date.now();
    await this.kv.set(`c:${key}`, conv);
    await this.touch(conv.agent, key);
  }

  async reset(key: string, agent: string): Promise<void> {
    await this.kv.delete(`c:${key}`);
    await this.dropToolResults(key);
    const keys = await this.index(agent);
    if (keys.delete(key)) await this.writeIndex(agent);
  }

  /** Stores a big tool result for this conversation; returns its id (`tr_...`). */
  async putToolResult(key: string, content: string): Promise<string> {
    const id = `tr_${randomBytes(12).toString('base64url')}`;
    await this.kv.set(`tr:${key}:${id}`, content);
    const ids = await this.toolResultIds(key);
    ids.push(id);
    await this.kv.set(`tri:${key}`, ids);
    return id;
  }

  /** A stored result of THIS conversation, or undefined (another conversation's id included). */
  async getToolResult(key: string, id: string): Promise<string | undefined> {
    const v = await this.kv.get(`tr:${key}:${id}`);
    return typeof v === 'string' ? v : undefined;
  }

  private async toolResultIds(key: string): Promise<string[]> {
    const parsed = z.array(z.string()).safeParse(await this.kv.get(`tri:${key}`));
    return parsed.success ? parsed.data : [];
  }

  private async dropToolResults(key: string): Promise<void> {
    const ids = await this.toolResultIds(key);
    if (ids.length === 0) return;
    await Promise.all(ids.map((id) => this.kv.delete(`tr:${key}:${id}`)));
    await this.kv.delete(`tri:${key}`);
  }

  /** Keys of an agent's conversations, least recently used first. */
  async keys(agent: string): Promise<string[]> {
    return [...(await this.index(agent))];
  }

  /** Writes index reorderings still waiting (call before closing the store). */
  async flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const agents = [...this.reordered];
    this.reordered.clear();
    await Promise.all(agents.map((a) => this.writeIndex(a)));
  }

  private async index(agent: string): Promise<Set<string>> {
    const cached = this.lru.get(agent);
    if (cached) return cached;
    let loading = this.lruLoads.get(agent);
    if (!loading) {
      loading = (async () => {
        const parsed = LruIndex.safeParse(await this.kv.get(`lru:${agent}`));
        const keys = new Set(parsed.success ? parsed.data : []);
        this.lru.set(agent, keys);
        return keys;
      })();
      this.lruLoads.set(agent, loading);
    }
    return loading;
  }

  /**
   * A new conversation or an eviction changes which transcripts exist: written at once, so a crash
   * never leaves a transcript the index does not know (it would never be evicted). A mere
   * reordering only changes who is evicted next: written within reorderWriteDelayMs.
   */
  private async touch(agent: string, key: string): Promise<void> {
    const keys = await this.index(agent);
    const known = keys.delete(key);
    keys.add(key);
    if (known) {
      this.reordered.add(agent);
      // A failed write only leaves the stored order a little stale: logged, retried with the next one.
      this.flushTimer ??= setTimeout(() => this.flush().catch((err: unknown) => console.warn(`[store] could not write the LRU index: ${(err as Error).message}`)), this.reorderWriteDelayMs);
      this.flushTimer.unref();
      return;
    }
    const max = Math.max(1, this.maxConversations(agent));
    const evicted: string[] = [];
    for (const k of keys) {
      if (keys.size - evicted.length <= max) break;
      evicted.push(k);
    }
    for (const k of evicted) keys.delete(k);
    await Promise.all(evicted.map(async (k) => {
      await this.kv.delete(`c:${k}`);
      await this.dropToolResults(k);
    }));
    await this.writeIndex(agent);
  }

  private async writeIndex(agent: string): Promise<void> {
    this.reordered.delete(agent);
    await this.kv.set(`lru:${agent}`, [...(await this.index(agent))]);
  }
}

/**
 * Answers every unanswered tool_use with an error result, so the transcript is valid for the API.
 * Also merges consecutive user messages (a user turn after a trailing tool_result message).
 */
export function repairTranscript(input: readonly Message[]): Message[] {
  const messages = [...input]; // the caller's array is left as it was
  const out: Message[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    out.push(m);
    if (m.role !== 'assistant') continue;
    const uses = m.content.filter((b) => b.type === 'tool_use');
    if (uses.length === 0) continue;
    const next = messages[i + 1];
    const answered = new Set(
      next?.role === 'user'
        ? next.content.flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : []))
        : [],
    );
    const missing: ContentBlock[] = uses
      .filter((u) => u.type === 'tool_use' && !answered.has(u.id))
      .map((u) => ({
        type: 'tool_result' as const,
        tool_use_id: (u as { id: string }).id,
        content: 'This call was interrupted (the run was stopped or the bot restarted) and did not complete.',
        is_error: true,
      }));
    if (missing.length === 0) continue;
    if (next?.role === 'user') {
      messages[i + 1] = { role: 'user', content: [...missing, ...next.content] };
    } else {
      out.push({ role: 'user', content: missing });
    }
  }
  return mergeConsecutive(out);
}

function mergeConsecutive(messages: Message[]): Message[] {
  const out: Message[] = [];
  for (const m of messages) {
    const last = out[out.length - 1];
    if (last && last.role === m.role) {
      // tool_results must come first in a user message.
      const content = [...last.content, ...m.content];
      content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
      out[out.length - 1] = { role: m.role, content };
    } else out.push({ role: m.role, content: [...m.content] });
  }
  return out;
}

/** Appends a user turn, merging into a trailing user message (tool results) so roles alternate. */
export function appendUserTurn(messages: Message[], content: ContentBlock[]): void {
  const last = messages[messages.length - 1];
  if (last && last.role === 'user') last.content.push(...content);
  else messages.push({ role: 'user', content });
}
