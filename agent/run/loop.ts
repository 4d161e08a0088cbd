/**
 * The agent loop: a plain function over a run's context. Model call -> tool batch -> model call ...
 * until the model answers without tools, `maxIterations` model calls were made, or the run is aborted.
 *
 * Contract:
 * - `messages` (the array) is changed in place, its messages never are (stored ones are frozen: a
 *   changed message is a new object, agent/context/transcript-diff.ts); it is valid (every tool_use answered) whenever the loop returns
 *   or throws, except while it is parked in a durable wait, when `checkpoint` has saved it together
 *   with the call states that complete it.
 * - A transcript whose last message is an assistant turn with unanswered tool_use blocks is resumed:
 *   the batch runs first (a restart while waiting for an approval continues here).
 * - Before each model call `keeper` (when given) may summarize older turns and move big tool results
 *   out of `messages` (in place, always leaving it valid); fitToContext then trims the request only.
 * - Text deltas are emitted as they stream (when `streamText`), tagged with their segment: the number
 *   of the model call they come from (1-based). The final reply's text is returned, not emitted.
 * - Tools the API runs itself (server_tool_use, e.g. web search) are not run here: each is reported
 *   as tool_started/tool_finished and to `onServerTool`. A paused reply (pause_turn) is sent back as
 *   the unfinished assistant message and joined with its continuation into one transcript message.
 */
import { fitToContext, contextWindow } from '../context/fit.js';
import type { ContextKeeper } from '../context/keeper.js';
import type { AgentEvent, Usage } from '../events.js';
import type { ContentBlock, Message, ServerToolUseBlock, ToolResultBlock, ToolUseBlock } from '../context/messages.js';
import type { ModelClient, ModelToolSpec } from '../model/types.js';
import type { RunTelemetry } from '../telemetry/types.js';

export interface LoopContext {
  runId: string;
  model: ModelClient;
  modelName: string;
  system: string;
  tools: ModelToolSpec[];
  maxTokens: number;
  maxIterations: number;
  messages: Message[];
  signal: AbortSignal;
  emit(event: AgentEvent): Promise<void>;
  /** Emit `text` events as the reply streams; false asks the model for whole replies instead. */
  streamText: boolean;
  /** Extended thinking for every model call (the agent's `thinking`). */
  thinking?: { budgetTokens: number };
  /** Emit `thinking` events: as they stream with streamText, else one per thinking block after the reply. */
  emitThinking?: boolean;
  /** Runs the calls of one assistant turn; returns their results in order. */
  runBatch(calls: ToolUseBlock[]): Promise<ToolResultBlock[]>;
  /** Saves the transcript as it is (called before a batch and after it). */
  checkpoint(): Promise<void>;
  addUsage(u: Usage): void;
  /** Summarizes and moves big results out as the transcript nears the window (agent/context/keeper.ts). */
  keeper?: ContextKeeper;
  /** The run's trace: one `chat` per model call. */
  telemetry?: RunTelemetry;
  /** A tool the API ran inside the reply (server-side web search), for the audit. */
  onServerTool?(use: ServerToolUseBlock, ok: boolean): void;
}

export type LoopOutcome = { kind: 'answer'; text: string } | { kind: 'max_iterations' } | { kind: 'stopped' };

export async function runLoop(ctx: LoopContext): Promise<LoopOutcome> {
  let iterations = 0;
  // A reply the API paused (pause_turn, a long server-side tool): sent back as the unfinished
  // assistant message, and joined with what follows into ONE message of the transcript.
  let carried: ContentBlock[] = [];
  for (;;) {
    if (ctx.signal.aborted) return { kind: 'stopped' };
    const pending = unansweredToolUses(ctx.messages);
    if (pending.length > 0) {
      const results = await ctx.runBatch(pending);
      ctx.messages.push({ role: 'user', content: results });
      await ctx.checkpoint();
      continue;
    }
    if (iterations >= ctx.maxIterations) return { kind: 'max_iterations' };
    iterations++;
    const fixedTokens = Math.ceil((ctx.system.length + JSON.stringify(ctx.tools).length) / 4);
    // Summaries and stored results keep the transcript itself small; fitToContext is the last resort.
    await ctx.keeper?.beforeCall(ctx.messages, { fixedTokens, reserveTokens: ctx.maxTokens + 2_000, signal: ctx.signal, addUsage: ctx.addUsage });
    const budget = (ctx.keeper?.windowTokens ?? contextWindow(ctx.modelName)) - ctx.maxTokens - fixedTokens - 2_000;
    const sent = ctx.messages.length;
    const fitted = fitToContext(ctx.messages, budget);
    const messages: Message[] = carried.length > 0 ? [...fitted, { role: 'assistant', content: carried }] : fitted;
    const chat = ctx.telemetry?.chat({ model: ctx.modelName, maxTokens: ctx.maxTokens, system: ctx.system, messages });
    let response: Awaited<ReturnType<ModelClient['complete']>>;
    try {
      response = await ctx.model.complete({
        model: ctx.modelName,
        system: ctx.system,
        messages,
        tools: ctx.tools,
        maxTokens: ctx.maxTokens,
        signal: ctx.signal,
        ...(ctx.streamText ? { onText: (delta: string) => void ctx.emit({ type: 'text', runId: ctx.runId, delta, segment: iterations }) } : {}),
        ...(ctx.thinking ? { thinking: ctx.thinking } : {}),
        ...(ctx.thinking && ctx.emitThinking && ctx.streamText
          ? { onThinking: (delta: string) => void ctx.emit({ type: 'thinking', runId: ctx.runId, delta, segment: iterations }) }
          : {}),
      });
    } catch (err) {
      chat?.end({ error: err });
      throw err;
    }
    chat?.end({ content: response.content, stopReason: response.stopReason, usage: response.usage });
    if (ctx.emitThinking && !ctx.streamText) {
      for (const b of response.content)
        if (b.type === 'thinking') await ctx.emit({ type: 'thinking', runId: ctx.runId, delta: b.thinking, segment: iterations });
    }
    ctx.addUsage(response.usage);
    ctx.keeper?.noteUsage(response.usage, sent);
    await reportServerTools(ctx, response.content);
    if (response.stopReason === 'pause_turn') {
      carried = [...carried, ...response.content];
      continue;
    }
    const replied = [...carried, ...response.content];
    carried = [];
    const content = replied.length > 0 ? replied : [{ type: 'text' as const, text: '' }];
    const uses = content.filter((b): b is ToolUseBlock => b.type === 'tool_use');
    if (uses.length === 0) {
      // The answer is the last reply's text (a paused reply's text went out as its own segment).
      const text = response.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
      const all = content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
      if (all.trim() !== '') ctx.messages.push({ role: 'assistant', content });
      return { kind: 'answer', text };
    }
    ctx.messages.push({ role: 'assistant', content });
    if (response.stopReason !== 'tool_use') {
      // Cut off mid-call (max_tokens): the inputs may be incomplete, so nothing runs.
      ctx.messages.push({
        role: 'user',
        content: uses.map((u) => ({
          type: 'tool_result' as const,
          tool_use_id: u.id,
          content: `Not run: your reply was cut off (${response.stopReason}) so the arguments may be incomplete. Call it again with shorter input.`,
          is_error: true,
        })),
      });
      continue;
    }
    await ctx.checkpoint();
  }
}

/** Progress (and the audit) for the calls the API ran itself in this reply, with their results. */
async function reportServerTools(ctx: LoopContext, content: readonly ContentBlock[]): Promise<void> {
  for (const use of content) {
    if (use.type !== 'server_tool_use') continue;
    const result = content.find((b) => b.type === 'web_search_tool_result' && b.tool_use_id === use.id);
    const failed = (result as { content?: { type?: string } } | undefined)?.content?.type === 'web_search_tool_result_error';
    const query = (use.input as { query?: unknown } | undefined)?.query;
    const summary = typeof query === 'string' ? query : JSON.stringify(use.input ?? {});
    await ctx.emit({ type: 'tool_started', runId: ctx.runId, callId: use.id, tool: use.name, summary });
    await ctx.emit({ type: 'tool_finished', runId: ctx.runId, callId: use.id, tool: use.name, ok: result !== undefined && !failed, summary });
    ctx.onServerTool?.(use, result !== undefined && !failed);
  }
}

export function unansweredToolUses(messages: readonly Message[]): ToolUseBlock[] {
  const last = messages[messages.length - 1];
  if (!last || last.role !== 'assistant') return [];
  return last.content.filter((b): b is ToolUseBlock => b.type === 'tool_use');
}
