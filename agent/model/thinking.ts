/**
 * Contract: extended thinking on the Messages API, for the request agent/model/request.ts builds (agent/model/anthropic.ts).
 * - `thinkingParam(req)` is the request's `thinking` field, or nothing. It is left out when the
 *   request continues a tool-use turn whose assistant message does not start with a thinking block
 *   (the turn began before thinking was switched on): the API refuses thinking for such a turn.
 * - `messagesFor(req)`: without thinking, the transcript's thinking blocks are not sent (they are
 *   the model's own reasoning of earlier replies and carry no meaning for a request without it).
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { Message } from '../context/messages.js';
import { perStoredMessage } from '../context/transcript-diff.js';
import type { ModelRequest } from './types.js';

/** Whether `thinking` is sent for this request. */
function thinkingOn(req: ModelRequest): boolean {
  if (!req.thinking) return false;
  const last = req.messages.at(-1);
  const continuesToolUse = last?.role === 'user' && last.content.some((b) => b.type === 'tool_result');
  if (!continuesToolUse) return true;
  const assistant = req.messages.at(-2);
  const first = assistant?.content[0]?.type;
  return first === 'thinking' || first === 'redacted_thinking';
}

export function thinkingParam(req: ModelRequest): Pick<Anthropic.MessageCreateParams, 'thinking'> {
  return thinkingOn(req) ? { thinking: { type: 'enabled', budget_tokens: req.thinking!.budgetTokens } } : {};
}

const isThinking = (b: Message['content'][number]) => b.type === 'thinking' || b.type === 'redacted_thinking';

/**
 * Whether a message holds thinking blocks, remembered for stored messages: every call of a chat
 * asks it of the whole transcript, and walking every block of thousands of messages at each call
 * was a fifth of the bot's CPU in a long chat (bench --cpu-prof).
 */
const hasThinking = perStoredMessage((m) => m.content.some(isThinking));

export function messagesFor(req: ModelRequest): Message[] {
  if (thinkingOn(req)) return req.messages;
  if (!req.messages.some(hasThinking)) return req.messages;
  return req.messages.map((m) => (hasThinking(m) ? { ...m, content: m.content.filter((b) => !isThinking(b)) } : m));
}
