/**
 * Context that lasts: keeps a conversation's transcript inside the model's context window without
 * losing what was said or found.
 *
 * Contract (the loop calls `beforeCall` before every model call and `noteUsage` after it):
 * - Big tool results: a tool_result whose text is over `bigResultChars` (default 16,384 characters),
 *   in any message but the newest (the model has seen it whole once), is written to the store under
 *   an id of this conversation and replaced in the transcript by a reference line plus its first
 *   `headChars` characters. `retrieve_tool_result` reads it back by id. Results holding images are
 *   left alone. A store failure leaves the result where it was (logged). Only for agents that have
 *   retrieve_tool_result: without it nothing could read a stored result back, so none is moved.
 * - Size: the larger of the API's own count for the last request (input + cache tokens, kept in the
 *   conversation's state across runs, plus an estimate of what was appended since) and an estimate of the whole transcript plus system prompt
 *   and tool specs (agent/context/fit.ts, ~4 characters a token).
 * - Summarizing: at `summarizeAt` (default 0.8) of the window (or earlier, when the reply's max_tokens
 *   would not fit beside it), the older part is replaced by a summary
 *   the agent's model writes (one Messages API call, no tools; its usage counts for the run). The cut
 *   is made only before an assistant message or before a user message that starts a turn, so a
 *   tool_use is never separated from its tool_result; the last `keepTurns` (default 4) turns stay
 *   verbatim, or, when they alone are too big, as many of the newest messages as fit half the window.
 *   The summary is a user message (or the head of the kept first user message) marked as a summary.
 * - A failed summary call changes nothing: the transcript is kept as it is, the failure logged, and the
 *   next model call tries again (at most twice per run; the next run tries afresh). Meanwhile
 *   agent/context/fit.ts's fitToContext still keeps the request itself under the window.
 * - When the transcript is still over the threshold after that, big results in the newest message are
 *   moved out as well.
 * - On purpose (`compact`, the summarize_context tool): the same summarizer and the same in-place
 *   replacement, at any size, keeping only the current turn verbatim, with optional `focus` text the
 *   summary must keep. Every summary (either way) is recorded in `history` (what `info` reports).
 */
import { contextWindow, estimateTokens } from './fit.js';
import type { StoredConversation } from './conversation-store.js';
import type { AgentSettings } from '../settings.js';
import type { Usage } from '../events.js';
import type { ContentBlock, Message, TextBlock, ToolResultBlock } from './messages.js';
import type { ModelClient } from '../model/types.js';
import type { Log } from '../log.js';
import { messageOf } from '../log.js';

export const SUMMARY_SYSTEM =
  'You write the running summary of a conversation between people and an assistant that uses tools, so the ' +
  'assistant can carry on after the older part is removed from its context. Keep: what the people asked for and ' +
  'decided (and why), facts found (names, paths, numbers, results), what was done with which tools and how it ' +
  'turned out, open questions and next steps, and every stored result id (tr_...) with what it holds. Drop ' +
  'pleasantries. Plain prose and short lists, at most about 800 words. Reply with the summary only.';

export const SUMMARY_MARKER = '[Summary of the earlier part of this conversation';
const SUMMARY_MAX_TOKENS = 4096;
const MAX_FAILURES_PER_RUN = 2;

export interface ContextKeeperOptions {
  model: ModelClient;
  /** The model that answers (its window) and writes the summaries. */
  modelName: string;
  /** The window in tokens (agent's contextWindowTokens); default: agent/context/fit.ts's table. */
  windowTokens?: number;
  /**
   * Stores a big result for this conversation; returns its id. Absent (the agent lacks
   * retrieve_tool_result, so nothing could read it back): big results stay in the transcript.
   */
  storeResult?: (content: string) => Promise<string>;
  log?: Log;
  /**
   * Where the API's last count lives between runs (the conversation's state): read once, written on
   * every change, so the next turn starts from what the API counted, not from an estimate alone.
   */
  memory?: { get(): unknown; set(value: Reported | undefined): void };
  /** The summaries made so far (the conversation's state), newest last; `info` reports them. */
  history?: { get(): unknown; set(value: SummaryRecord[]): void };
  now?: () => number;
  summarizeAt?: number;
  keepTurns?: number;
  bigResultChars?: number;
  headChars?: number;
}

export interface BeforeCall {
  /** Tokens of the request outside the messages: system prompt and tool specs. */
  fixedTokens: number;
  /** Tokens the window must keep free for the reply (max_tokens and a margin). */
  reserveTokens: number;
  signal: AbortSignal;
  addUsage(u: Usage): void;
}

/** The API's token count for a request that held the first `messages` messages of the transcript. */
export type Reported = { tokens: number; messages: number };

/** One summary: how many messages it replaced, when, why, and the estimated size before and after. */
export type SummaryRecord = { at: number; replaced: number; by: 'keeper' | 'request'; tokensBefore: number; tokensAfter: number };

/** What `compact` did: a summary made (its record), or why none was. */
export type CompactResult = { ok: true; record: SummaryRecord } | { ok: false; reason: string };

/** The window and the transcript's size as the keeper sees them (`info`). */
export interface ContextInfo {
  windowTokens: number;
  usedTokens: number;
  /** 'model': the API's count for the last request plus an estimate of what came after; 'estimate': the estimate alone. */
  source: 'model' | 'estimate';
  /** The API's count as reported for the first `messages` messages, when known. */
  reported?: Reported;
  estimatedTokens: number;
  messages: number;
  summaries: SummaryRecord[];
}

function isReported(v: unknown): v is Reported {
  const r = v as Reported | undefined;
  return typeof r === 'object' && r !== null && Number.isInteger(r.tokens) && r.tokens >= 0 && Number.isInteger(r.messages) && r.messages >= 0;
}

export class ContextKeeper {
  readonly windowTokens: number;
  private readonly summarizeAt: number;
  private readonly keepTurns: number;
  private readonly bigResultChars: number;
  private readonly headChars: number;
  private reportedCount: Reported | undefined;
  private failures = 0;
  /** The last call's system prompt and tool specs (set by beforeCall): what `compact` and `info` count beside the messages. */
  private fixedTokens = 0;

  constructor(private readonly opts: ContextKeeperOptions) {
    this.windowTokens = opts.windowTokens ?? contextWindow(opts.modelName);
    this.summarizeAt = opts.summarizeAt ?? 0.8;
    this.keepTurns = opts.keepTurns ?? 4;
    this.bigResultChars = opts.bigResultChars ?? 16 * 1024;
    this.headChars = opts.headChars ?? 2000;
    const remembered = opts.memory?.get();
    this.reportedCount = isReported(remembered) ? remembered : undefined;
  }

  private get reported(): Reported | undefined {
    return this.reportedCount;
  }

  private set reported(value: Reported | undefined) {
    this.reportedCount = value;
    this.opts.memory?.set(value);
  }

  /** After a model call: what the API counted for the request of `sentMessages` messages. */
  noteUsage(usage: Usage, sentMessages: number): void {
    this.reported = { tokens: usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens, messages: sentMessages };
  }

  /** The transcript's size as the model would count it (see the contract). */
  measure(messages: readonly Message[], fixedTokens: number): number {
    const estimate = estimateTokens(messages) + fixedTokens;
    const r = this.reported;
    if (!r || r.messages > messages.length) return estimate;
    return Math.max(estimate, r.tokens + estimateTokens(messages.slice(r.messages)));
  }

  /**
   * Makes `messages` (the stored transcript's array, changed in place) fit before the next model call.
   * Messages themselves are never changed: a changed one is a new object (stored ones are frozen).
   */
  async beforeCall(messages: Message[], call: BeforeCall): Promise<void> {
    this.fixedTokens = call.fixedTokens;
    await this.offload(messages, messages.length - 1);
    // Before the request itself would have to be trimmed (the reply needs room too).
    const threshold = Math.min(this.summarizeAt * this.windowTokens, this.windowTokens - call.reserveTokens);
    if (this.measure(messages, call.fixedTokens) < threshold) return;
    if (this.failures < MAX_FAILURES_PER_RUN && !call.signal.aborted) await this.summarize(messages, call, threshold);
    if (this.measure(messages, call.fixedTokens) >= threshold) await this.offload(messages, messages.length);
  }

  /** The window, the transcript's size and the summaries so far (context_info). */
  info(messages: readonly Message[]): ContextInfo {
    const estimatedTokens = estimateTokens(messages) + this.fixedTokens;
    const r = this.reported;
    const usable = r !== undefined && r.messages <= messages.length;
    return {
      windowTokens: this.windowTokens,
      usedTokens: this.measure(messages, this.fixedTokens),
      source: usable && r.tokens + estimateTokens(messages.slice(r.messages)) >= estimatedTokens ? 'model' : 'estimate',
      ...(usable ? { reported: { ...r } } : {}),
      estimatedTokens,
      messages: messages.length,
      summaries: this.summaries(),
    };
  }

  /** Summarizes the older part now, whatever the size, keeping the current turn verbatim (summarize_context). */
  async compact(messages: Message[], call: { signal: AbortSignal; addUsage(u: Usage): void; focus?: string }): Promise<CompactResult> {
    const cut = chooseCut(messages, 1, Math.max(0, this.windowTokens / 2 - this.fixedTokens));
    // A cut inside the first turn would summarize only the request being answered.
    if (cut < 2) return { ok: false, reason: 'nothing older than the current turn to summarize' };
    return this.replaceWithSummary(messages, cut, { ...call, fixedTokens: this.fixedTokens, reserveTokens: 0 }, 'request', call.focus);
  }

  private summaries(): SummaryRecord[] {
    const h = this.opts.history?.get();
    return Array.isArray(h) ? (h as SummaryRecord[]) : [];
  }

  /** Moves big tool results of messages[0 .. end) to the store. */
  private async offload(messages: Message[], end: number): Promise<void> {
    if (!this.opts.storeResult) return;
    for (let i = 0; i < end; i++) {
      const m = messages[i]!;
      if (m.role !== 'user') continue;
      for (let j = 0; j < m.content.length; j++) {
        const b = messages[i]!.content[j]!;
        if (b.type !== 'tool_result') continue;
        const text = resultText(b);
        if (text === undefined || text.length <= this.bigResultChars) continue;
        let id: string;
        try {
          id = await this.opts.storeResult(text);
        } catch (err) {
          this.opts.log?.('warn', `could not store a big tool result (kept in the transcript): ${messageOf(err)}`);
          return;
        }
        const replaced: ToolResultBlock = { ...b, content: reference(id, text, this.headChars) };
        // A new message: a stored one is frozen (agent/context/transcript-diff.ts), and the save sees the change.
        const cur = messages[i]!;
        messages[i] = { ...cur, content: cur.content.map((x, n) => (n === j ? replaced : x)) };
        this.reported = undefined; // what the API counted no longer matches the transcript
      }
    }
  }

  private async summarize(messages: Message[], call: BeforeCall, threshold: number): Promise<void> {
    const keepBudget = Math.max(0, this.windowTokens / 2 - call.fixedTokens);
    const cut = chooseCut(messages, this.keepTurns, keepBudget);
    if (cut <= 0) return;
    const done = await this.replaceWithSummary(messages, cut, call, 'keeper');
    if (!done.ok) {
      this.opts.log?.(
        'warn',
        `could not summarize the conversation (${done.reason}); the transcript is kept as it is (about ${this.measure(messages, call.fixedTokens)} tokens, ` +
          `threshold ${Math.round(threshold)}) and summarizing is tried again at the next model call`,
      );
    }
  }

  /** Replaces messages[0 .. cut) by a summary the model writes; a failure changes nothing. */
  private async replaceWithSummary(messages: Message[], cut: number, call: BeforeCall, by: SummaryRecord['by'], focus?: string): Promise<CompactResult> {
    const before = this.measure(messages, call.fixedTokens);
    const maxChars = Math.max(20_000, (this.windowTokens - SUMMARY_MAX_TOKENS - 4_000) * 3);
    let summary: string;
    try {
      const res = await this.opts.model.complete({
        model: this.opts.modelName,
        system: focus ? `${SUMMARY_SYSTEM} Above all keep, in full detail: ${focus}` : SUMMARY_SYSTEM,
        messages: [
          {
            role: 'user',
            content: [{ type: 'text', text: `<transcript>\n${render(messages.slice(0, cut), maxChars)}\n</transcript>\n\nWrite the summary now.` }],
          },
        ],
        tools: [],
        maxTokens: SUMMARY_MAX_TOKENS,
        signal: call.signal,
      });
      call.addUsage(res.usage);
      summary = res.content
        .flatMap((b) => (b.type === 'text' ? [b.text] : []))
        .join('')
        .trim();
      if (summary === '') throw new Error('the model returned an empty summary');
    } catch (err) {
      if (by === 'keeper') this.failures++;
      return { ok: false, reason: messageOf(err) };
    }
    const why = by === 'keeper' ? "when it grew too long for the model's context window" : "at the assistant's request (summarize_context)";
    const block: TextBlock = { type: 'text', text: `${SUMMARY_MARKER}, written ${why}; it replaces ${cut} earlier messages.]\n${summary}` };
    const first = messages[cut]!;
    if (first.role === 'user') {
      messages.splice(0, cut);
      messages[0] = { role: 'user', content: [block, ...first.content] };
    } else {
      messages.splice(0, cut, { role: 'user', content: [block] });
    }
    this.reported = undefined;
    const record: SummaryRecord = {
      at: (this.opts.now ?? Date.now)(),
      replaced: cut,
      by,
      tokensBefore: before,
      tokensAfter: this.measure(messages, call.fixedTokens),
    };
    this.opts.history?.set([...this.summaries(), record].slice(-20));
    this.opts.log?.(
      'info',
      `summarized ${cut} older messages (${by}): about ${before} tokens before, ${record.tokensAfter} after (window ${this.windowTokens})`,
    );
    return { ok: true, record };
  }
}

function startsTurn(m: Message): boolean {
  return m.role === 'user' && !m.content.some((b) => b.type === 'tool_result');
}

/**
 * Where the summarized prefix ends: an index whose message is an assistant message or a user message
 * starting a turn (so no tool_use/tool_result pair is split), keeping the last `keepTurns` turns when
 * they fit `keepBudget` tokens, else the newest messages that do. 0: nothing to summarize.
 */
export function chooseCut(messages: readonly Message[], keepTurns: number, keepBudget: number): number {
  const valid: number[] = [];
  const turnStarts: number[] = [];
  messages.forEach((m, i) => {
    if (startsTurn(m)) turnStarts.push(i);
    if (i > 0 && (m.role === 'assistant' || startsTurn(m))) valid.push(i);
  });
  if (valid.length === 0) return 0;
  const preferred = turnStarts.length > keepTurns ? turnStarts[turnStarts.length - keepTurns]! : 0;
  if (preferred > 0 && estimateTokens(messages.slice(preferred)) <= keepBudget) return preferred;
  for (const c of valid) if (c >= preferred && estimateTokens(messages.slice(c)) <= keepBudget) return c;
  return valid[valid.length - 1]!;
}

function resultText(b: ToolResultBlock): string | undefined {
  if (typeof b.content === 'string') return b.content;
  if (b.content.some((c) => c.type !== 'text')) return undefined;
  return b.content.map((c) => (c as TextBlock).text).join('\n');
}

function reference(id: string, text: string, headChars: number): string {
  return (
    `[Stored result ${id}: ${text.length} characters, moved out of the conversation to keep it small. Its first ` +
    `${Math.min(headChars, text.length)} characters follow; call retrieve_tool_result with id "${id}" (offset, length) to read more.]\n` +
    text.slice(0, headChars)
  );
}

/** The prefix as plain text for the summarizer; long blocks cut, and the oldest text dropped first when needed. */
function render(messages: readonly Message[], maxChars: number): string {
  for (const blockMax of [4000, 1000, 300]) {
    const text = messages.map((m) => m.content.map((b) => renderBlock(m.role, b, blockMax)).join('\n')).join('\n');
    if (text.length <= maxChars || blockMax === 300) return text.length <= maxChars ? text : `[earlier part omitted]\n${text.slice(text.length - maxChars)}`;
  }
  return '';
}

function renderBlock(role: string, b: ContentBlock, max: number): string {
  const cut = (s: string) => (s.length > max ? `${s.slice(0, max)} [... ${s.length - max} more characters]` : s);
  switch (b.type) {
    case 'text':
      return `[${role}] ${cut(b.text)}`;
    case 'image':
      return `[${role} sent an image]`;
    case 'tool_use':
      return `[assistant called ${b.name} (id ${b.id}) with ${cut(JSON.stringify(b.input ?? {}))}]`;
    case 'tool_result': {
      const text = resultText(b) ?? '(an image)';
      return `[result of ${b.tool_use_id}${b.is_error ? ', an error' : ''}] ${cut(text)}`;
    }
    // The model's private reasoning is not part of what a summary keeps.
    case 'thinking':
    case 'redacted_thinking':
      return '';
    case 'server_tool_use':
      return `[the API ran ${b.name} for the assistant with ${cut(JSON.stringify(b.input ?? {}))}]`;
    case 'web_search_tool_result':
      return `[web search result] ${cut(JSON.stringify(b.content ?? ''))}`;
  }
}

/**
 * The keeper for one run of a conversation: the agent's model and window, results stored under the
 * conversation's key (only when the agent has retrieve_tool_result), the API's count kept in its state.
 */
export function contextKeeperFor(c: {
  model: ModelClient;
  agent: AgentSettings;
  key: string;
  conv: StoredConversation;
  store: { putToolResult(key: string, content: string): Promise<string> };
  tools: ReadonlyMap<string, unknown>;
  log: Log;
}): ContextKeeper {
  return new ContextKeeper({
    model: c.model,
    modelName: c.agent.model,
    ...(c.agent.contextWindowTokens ? { windowTokens: c.agent.contextWindowTokens } : {}),
    ...(c.tools.has('retrieve_tool_result') ? { storeResult: (content: string) => c.store.putToolResult(c.key, content) } : {}),
    log: c.log,
    memory: {
      get: () => c.conv.state['contextReported'],
      set: (v) => {
        c.conv.state['contextReported'] = v;
      },
    },
    history: {
      get: () => c.conv.state['contextSummaries'],
      set: (v) => {
        c.conv.state['contextSummaries'] = v;
      },
    },
  });
}
