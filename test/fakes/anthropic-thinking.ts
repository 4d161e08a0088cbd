/**
 * Contract: extended thinking in the fake Messages API (test/fakes/anthropic.ts), as the API does it.
 * - `validateThinking(body, bad)`: a request's `thinking` is `{type: 'enabled', budget_tokens >= 1024}`
 *   (or `{type: 'disabled'}`), with the budget below max_tokens; the API's wording on failure.
 * - `validateThinkingBlock(blk, where, role, bad)`: a thinking block in a request must carry the
 *   signature this fake gave it (a changed thinking text is refused); only in assistant messages.
 * - `validateThinkingTurn(body, bad)`: with thinking on, a request that continues a tool-use turn
 *   must hand back that turn's thinking first (the assistant message starts with a thinking block).
 * - `thinkingBlock(text)`: the stream pieces of a thinking block (thinking_delta chunks, then one
 *   signature_delta), and its final form, signed.
 */
import { createHash } from 'node:crypto';

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export const signatureOf = (thinking: string): string => createHash('sha256').update(`fake-thinking\0${thinking}`).digest('base64');

export function thinkingEnabled(body: Json): boolean {
  return isObj(body.thinking) && body.thinking.type === 'enabled';
}

export function validateThinking(body: Json, bad: (m: string) => never): void {
  const t = body.thinking;
  if (t === undefined) return;
  if (!isObj(t)) bad('thinking: Input should be an object');
  const o = t as Json;
  if (o.type === 'disabled') return;
  if (o.type !== 'enabled') bad(`thinking: Input tag '${String(o.type)}' found using 'type' does not match any of the expected tags: 'enabled', 'disabled'`);
  if (typeof o.budget_tokens !== 'number' || !Number.isInteger(o.budget_tokens)) bad('thinking.enabled.budget_tokens: Field required');
  if ((o.budget_tokens as number) < 1024) bad('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
  if ((o.budget_tokens as number) >= (body.max_tokens as number)) bad('`max_tokens` must be greater than `thinking.budget_tokens`.');
}

export function validateThinkingBlock(blk: Json, where: string, role: unknown, bad: (m: string) => never): void {
  if (role !== 'assistant') bad(`${where}: ${String(blk.type)} blocks are only allowed in assistant messages`);
  if (blk.type === 'redacted_thinking') {
    if (typeof blk.data !== 'string') bad(`${where}.data: Field required`);
    return;
  }
  if (typeof blk.thinking !== 'string') bad(`${where}.thinking: Field required`);
  if (typeof blk.signature !== 'string') bad(`${where}.signature: Field required`);
  if (blk.signature !== signatureOf(blk.thinking as string)) bad(`${where}: Invalid \`signature\` in \`thinking\` block`);
}

export function validateThinkingTurn(body: Json, bad: (m: string) => never): void {
  if (!thinkingEnabled(body) || !Array.isArray(body.messages)) return;
  const list = body.messages as Json[];
  const last = list.at(-1);
  const continues = last?.role === 'user' && Array.isArray(last.content) && (last.content as Json[]).some((b) => isObj(b) && b.type === 'tool_result');
  if (!continues) return;
  const i = list.length - 2;
  const first = Array.isArray(list[i]?.content) ? (list[i]!.content as Json[])[0] : undefined;
  if (first?.type === 'thinking' || first?.type === 'redacted_thinking') return;
  bad(
    `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first?.type ?? 'text')}\`. ` +
      'When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). ' +
      'We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.',
  );
}

export function thinkingBlock(text: string, split: (s: string, parts: number) => string[]): { start: Json; deltas: Json[]; final: Json } {
  const signature = signatureOf(text);
  return {
    start: { type: 'thinking', thinking: '', signature: '' },
    deltas: [...split(text, 3).map((thinking) => ({ type: 'thinking_delta', thinking })), { type: 'signature_delta', signature }],
    final: { type: 'thinking', thinking: text, signature },
  };
}
