/**
 * The transcript shape: the Messages API's content blocks, as plain JSON (what the store saves).
 * Invariant the runner keeps: every assistant `tool_use` is answered by a `tool_result` with the same
 * id in the next user message, before any other message is appended.
 */
import { z } from 'zod';

/** `citations`: where a server tool's result backs the text (web search); handed back as sent. */
export const TextBlock = z.object({ type: z.literal('text'), text: z.string(), citations: z.array(z.unknown()).optional() });
export const ImageBlock = z.object({
  type: z.literal('image'),
  source: z.object({ type: z.literal('base64'), media_type: z.string(), data: z.string() }),
});
export const ToolUseBlock = z.object({
  type: z.literal('tool_use'),
  id: z.string(),
  name: z.string(),
  input: z.unknown(),
});
export const ToolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: z.union([z.string(), z.array(z.union([TextBlock, ImageBlock]))]),
  is_error: z.boolean().optional(),
});
/**
 * Extended thinking (agents with `thinking`): kept in the transcript as the API sent it, because a
 * tool-use turn must hand its thinking back, signature and all. Never shown on a chat surface.
 */
export const ThinkingBlock = z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() });
export const RedactedThinkingBlock = z.object({ type: z.literal('redacted_thinking'), data: z.string() });
/**
 * A tool the Messages API ran itself (server-side web search), and its result, both inside the
 * assistant's reply: kept as sent, since a later request must hand them back unchanged.
 */
export const ServerToolUseBlock = z.object({ type: z.literal('server_tool_use'), id: z.string(), name: z.string(), input: z.unknown() });
export const WebSearchToolResultBlock = z.object({ type: z.literal('web_search_tool_result'), tool_use_id: z.string(), content: z.unknown() });
export const ContentBlock = z.union([
  TextBlock,
  ImageBlock,
  ToolUseBlock,
  ToolResultBlock,
  ThinkingBlock,
  RedactedThinkingBlock,
  ServerToolUseBlock,
  WebSearchToolResultBlock,
]);
export const Message = z.object({ role: z.enum(['user', 'assistant']), content: z.array(ContentBlock) });
export const Transcript = z.array(Message);

export type TextBlock = z.infer<typeof TextBlock>;
export type ImageBlock = z.infer<typeof ImageBlock>;
export type ToolUseBlock = z.infer<typeof ToolUseBlock> & { input: unknown };
export type ToolResultBlock = z.infer<typeof ToolResultBlock>;
export type ThinkingBlock = z.infer<typeof ThinkingBlock>;
export type RedactedThinkingBlock = z.infer<typeof RedactedThinkingBlock>;
export type ServerToolUseBlock = z.infer<typeof ServerToolUseBlock> & { input: unknown };
export type WebSearchToolResultBlock = z.infer<typeof WebSearchToolResultBlock> & { content: unknown };
export type ContentBlock =
  | TextBlock
  | ImageBlock
  | ToolUseBlock
  | ToolResultBlock
  | ThinkingBlock
  | RedactedThinkingBlock
  | ServerToolUseBlock
  | WebSearchToolResultBlock;
export type Message = { role: 'user' | 'assistant'; content: ContentBlock[] };
