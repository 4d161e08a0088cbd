/**
 * context_info (read-only) and summarize_context (low-risk): the model sees its context window and
 * compacts its own transcript on purpose.
 *
 * Contract:
 * - Both work through ToolContext.context, the run's context keeper (agent/context/keeper.ts); without
 *   it (outside a run) they refuse with a ToolError.
 * - context_info changes nothing. It reports the window, the tokens the transcript uses (the model's
 *   last count plus an estimate of what came after, or the estimate alone, and says which), the number
 *   of messages and the summaries made so far (how many messages each replaced, when, by whom).
 * - summarize_context uses the keeper's summarizer (one model call, counted in the run's usage) and its
 *   in-place replacement, so the run's checkpoint stores it like the keeper's own summaries. The current
 *   turn stays verbatim. Its propose half changes nothing; the gate decides before the model call.
 */
import { z } from 'zod';
import type { SummaryRecord } from '../../context/keeper.js';
import type { AnyTool, Tool, ToolContext } from '../types.js';
import { ToolError } from '../types.js';

export const ContextInfoInput = z.strictObject({});
export const SummarizeContextInput = z.strictObject({
  focus: z.string().min(1).max(2000).optional().describe('What the summary must keep in full detail (facts, decisions, ids, open tasks).'),
});
export type SummarizeContextInput = z.infer<typeof SummarizeContextInput>;

function keeperOf(ctx: ToolContext): NonNullable<ToolContext['context']> {
  if (!ctx.context) throw new ToolError('The context tools work only inside a conversation run; there is no transcript here.');
  return ctx.context;
}

const when = (at: number) => new Date(at).toISOString();

function summaryLine(s: SummaryRecord): string {
  const by = s.by === 'request' ? 'on request (summarize_context)' : 'automatically (window filling up)';
  return `- ${when(s.at)}: ${s.replaced} earlier messages replaced by a summary ${by}; about ${s.tokensBefore} tokens before, ${s.tokensAfter} after`;
}

export function contextInfoTool(): Tool<z.infer<typeof ContextInfoInput>> {
  return {
    name: 'context_info',
    description:
      'Shows your context window: its size in tokens, how many tokens the conversation uses now (as the model last counted it, ' +
      'or estimated), how many messages it holds, and which earlier parts were already replaced by summaries. Changes nothing.',
    input: ContextInfoInput,
    tier: 'read-only',
    async execute(_input, ctx) {
      const i = keeperOf(ctx).info();
      const pct = i.windowTokens > 0 ? Math.round((i.usedTokens / i.windowTokens) * 100) : 0;
      const source =
        i.source === 'model' && i.reported
          ? `the model's count for the last request (${i.reported.tokens} tokens for the first ${i.reported.messages} messages) plus an estimate of the ${i.messages - i.reported.messages} after it`
          : `an estimate (about 4 characters a token) of the transcript, system prompt and tool specs${i.reported ? `; the model last counted ${i.reported.tokens} tokens for the first ${i.reported.messages} messages` : ''}`;
      const lines = [
        `Context window: ${i.windowTokens} tokens.`,
        `Used: ${i.usedTokens} tokens (${pct}%), from ${source}.`,
        `Messages in the transcript: ${i.messages}.`,
        i.summaries.length === 0
          ? 'Summarized so far: nothing; the transcript is verbatim.'
          : `Summarized so far (${i.summaries.length}; the transcript starts with the latest summary):\n${i.summaries.map(summaryLine).join('\n')}`,
      ];
      return { content: lines.join('\n') };
    },
  };
}

export function summarizeContextTool(): Tool<SummarizeContextInput> {
  return {
    name: 'summarize_context',
    description:
      'Compacts your context on purpose: the older part of this conversation (everything before the current turn) is replaced by a ' +
      'summary written by the model, which frees room in the window. Pass `focus` to name what the summary must keep in full. ' +
      'Reports how many messages were replaced and the tokens before and after.',
    input: SummarizeContextInput,
    tier: 'low-risk',
    async propose(input, ctx) {
      const i = keeperOf(ctx).info();
      return {
        summary: `summarize_context: replace the older part of ${i.messages} messages (about ${i.usedTokens} tokens) by a summary`,
        ...(input.focus ? { preview: `Keep: ${input.focus}` } : {}),
      };
    },
    async execute(input, ctx) {
      const done = await keeperOf(ctx).compact(input.focus);
      if (!done.ok) throw new ToolError(`Nothing was summarized: ${done.reason}. The transcript is unchanged.`);
      const r = done.record;
      return {
        content:
          `Summarized: ${r.replaced} earlier messages were replaced by one summary at ${when(r.at)}. ` +
          `Context: about ${r.tokensBefore} tokens before, ${r.tokensAfter} after.`,
      };
    },
  };
}

/** Both context tools, for the catalog. */
export function contextTools(): AnyTool[] {
  return [contextInfoTool() as unknown as AnyTool, summarizeContextTool() as unknown as AnyTool];
}
