/**
 * retrieve_tool_result: reads back a big tool result that was moved out of the transcript to keep the
 * context small (agent/context/keeper.ts), a page at a time.
 *
 * Contract:
 * - Read-only. Looks the id up under the CALLING conversation's key only: an id from another
 *   conversation is "not found", exactly like a made-up one (nothing says it exists elsewhere).
 * - `offset` (characters, default 0) and `length` (default 8,000, at most 16,000: below the size at
 *   which results are moved out, so a page is never moved out again). The reply starts with one line
 *   saying which characters of how many it holds and where the next page starts.
 */
import { z } from 'zod';
import { ToolError, type Tool } from '../types.js';

const RETRIEVE_DEFAULT_LENGTH = 8_000;
const RETRIEVE_MAX_LENGTH = 16_000;

export interface ToolResultReader {
  getToolResult(conversationKey: string, id: string): Promise<string | undefined>;
}

const RetrieveInput = z.strictObject({
  id: z
    .string()
    .regex(/^tr_[A-Za-z0-9_-]{6,40}$/, 'expected a stored result id like tr_AbC123...')
    .describe('The id from a "[Stored result ...]" reference.'),
  offset: z.number().int().min(0).optional().describe('First character to return (default 0).'),
  length: z.number().int().min(1).max(RETRIEVE_MAX_LENGTH).optional().describe(`How many characters (default ${RETRIEVE_DEFAULT_LENGTH}).`),
});
type RetrieveInput = z.infer<typeof RetrieveInput>;

export function retrieveToolResultTool(reader?: ToolResultReader): Tool<RetrieveInput> {
  return {
    name: 'retrieve_tool_result',
    description:
      'Read a stored tool result again. Big results of earlier tool calls are replaced in the conversation by a reference ' +
      '"[Stored result tr_...]" with their beginning; pass that id (and offset/length to page) to read the rest.',
    input: RetrieveInput,
    tier: 'read-only',
    async execute(input, ctx) {
      if (!reader) throw new ToolError('stored results are not available in this build.');
      const content = await reader.getToolResult(ctx.conversationKey, input.id);
      if (content === undefined) {
        throw new ToolError(`there is no stored result ${input.id} in this conversation. Use an id from a "[Stored result ...]" reference shown here.`);
      }
      const total = content.length;
      const offset = Math.min(input.offset ?? 0, total);
      let end = Math.min(total, offset + (input.length ?? RETRIEVE_DEFAULT_LENGTH));
      // Never half a surrogate pair at the end of a page.
      if (end < total && end > offset && /[\uD800-\uDBFF]/.test(content.charAt(end - 1))) end--;
      const next = end < total ? `; the next page starts at offset ${end}` : '; this is the end';
      return { content: `[Stored result ${input.id}: characters ${offset}-${end} of ${total}${next}]\n${content.slice(offset, end)}` };
    },
  };
}
