/**
 * session/load's replay: a stored transcript (Anthropic Messages API messages) as the ACP
 * `session/update`s an editor shows for a conversation, so a loaded session looks as it did.
 *
 * Contract:
 * - `replayUpdates(messages)` maps, in order: a user's text -> user_message_chunk; an assistant's
 *   text -> agent_message_chunk, its thinking -> agent_thought_chunk, its tool_use -> tool_call
 *   (completed, or failed when its tool_result says is_error, with that result's text cut to
 *   REPLAY_RESULT_CHARS); tool_result blocks are shown on their call, never as user text.
 * - Messages or blocks of a shape it does not know are skipped (transcripts outlive versions);
 *   redacted thinking and images are not replayed.
 */
import type { SessionUpdate, ToolKind } from '@agentclientprotocol/sdk';
import { z } from 'zod';

const REPLAY_RESULT_CHARS = 2_000;

const Block = z
  .object({
    type: z.string(),
    text: z.string().optional(),
    thinking: z.string().optional(),
    id: z.string().optional(),
    name: z.string().optional(),
    tool_use_id: z.string().optional(),
    content: z.unknown().optional(),
    is_error: z.boolean().optional(),
  })
  .passthrough();
const Message = z.object({ role: z.enum(['user', 'assistant']), content: z.union([z.string(), z.array(z.unknown())]) });

function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b) => Block.safeParse(b))
    .filter((r) => r.success && r.data.type === 'text')
    .map((r) => r.data?.text ?? '')
    .join('\n');
}

const cut = (s: string) => (s.length > REPLAY_RESULT_CHARS ? `${s.slice(0, REPLAY_RESULT_CHARS)}…` : s);

export function replayUpdates(messages: readonly unknown[], kindOf: (tool: string) => ToolKind): SessionUpdate[] {
  const blocksOf = (m: z.infer<typeof Message>) =>
    (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content).flatMap((b) => {
      const r = Block.safeParse(b);
      return r.success ? [r.data] : [];
    });
  const parsed = messages.flatMap((m) => {
    const r = Message.safeParse(m);
    return r.success ? [{ role: r.data.role, blocks: blocksOf(r.data) }] : [];
  });
  // A call's outcome is in the next user message: read them first, so each call is shown once, done.
  const results = new Map<string, { text: string; failed: boolean }>();
  for (const m of parsed)
    for (const b of m.blocks)
      if (b.type === 'tool_result' && b.tool_use_id) results.set(b.tool_use_id, { text: resultText(b.content), failed: b.is_error === true });

  const updates: SessionUpdate[] = [];
  const text = (t: string) => ({ type: 'text' as const, text: t });
  for (const m of parsed) {
    for (const b of m.blocks) {
      if (b.type === 'text' && b.text) updates.push({ sessionUpdate: m.role === 'user' ? 'user_message_chunk' : 'agent_message_chunk', content: text(b.text) });
      else if (m.role === 'assistant' && b.type === 'thinking' && b.thinking) updates.push({ sessionUpdate: 'agent_thought_chunk', content: text(b.thinking) });
      else if (m.role === 'assistant' && b.type === 'tool_use' && b.id && b.name) {
        const result = results.get(b.id);
        updates.push({
          sessionUpdate: 'tool_call',
          toolCallId: b.id,
          title: b.name,
          kind: kindOf(b.name),
          status: result?.failed ? 'failed' : 'completed',
          ...(result?.text ? { content: [{ type: 'content' as const, content: text(cut(result.text)) }] } : {}),
        });
      }
    }
  }
  return updates;
}
