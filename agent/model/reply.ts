/**
 * Reading the model's reply, streamed or whole, into a ModelResponse (for agent/model/anthropic.ts).
 *
 * Contract:
 * - Both give the content blocks in index order: text (with citations), tool_use and
 *   server_tool_use with their input parsed (empty input: `{}`), web_search_tool_result, thinking
 *   (with its signature) and redacted_thinking; other block kinds are not requested and skipped.
 *   Then the stop reason (default end_turn) and the usage priced by agent/model/pricing.ts.
 * - Stream (`Accumulator`): `add` takes each raw event and returns the delta to forward, if any
 *   (the reply's text, or a thinking block's); `stopped` says whether message_stop came (a stream
 *   without it was cut short). Usage counts from message_delta are cumulative and replace earlier
 *   ones. A tool_use whose JSON input does not parse is a `server` failure.
 * - Whole (`wholeReply`): validated with zod (outside data); a reply that is not a Messages API
 *   message is a `server` failure.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import type { ContentBlock } from '../context/messages.js';
import { AttemptFailure, USER_MESSAGES } from './errors.js';
import { ModelError } from './types.js';
import type { ModelResponse } from './types.js';
import { priceUsage } from './pricing.js';

const count = z.number().int().nonnegative().nullish();
/** A whole reply as the Messages API sends it (what Gatehouse reads of it). */
const WholeReply = z.object({
  content: z.array(
    z.union([
      z.object({ type: z.literal('text'), text: z.string(), citations: z.array(z.unknown()).nullish() }),
      z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() }),
      z.object({ type: z.literal('server_tool_use'), id: z.string(), name: z.string(), input: z.unknown() }),
      z.object({ type: z.literal('web_search_tool_result'), tool_use_id: z.string(), content: z.unknown() }),
      z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
      z.object({ type: z.literal('redacted_thinking'), data: z.string() }),
      // Other block kinds (server tools) are not requested by Gatehouse; skipped.
      z.object({ type: z.string() }),
    ]),
  ),
  stop_reason: z.string().nullish(),
  usage: z.object({ input_tokens: count, output_tokens: count, cache_read_input_tokens: count, cache_creation_input_tokens: count }),
});

/** A whole (non-streamed) reply in the shape the stream accumulator gives. */
export function wholeReply(raw: unknown, model: string): ModelResponse {
  const parsed = WholeReply.safeParse(raw);
  if (!parsed.success) {
    throw new AttemptFailure(
      new ModelError('server', USER_MESSAGES.server, `The model's reply is not a Messages API message: ${parsed.error.issues[0]?.message ?? ''}`),
    );
  }
  const content: ContentBlock[] = [];
  for (const b of parsed.data.content) {
    if (b.type === 'text' && 'text' in b) content.push({ type: 'text', text: b.text, ...(b.citations ? { citations: b.citations } : {}) });
    else if (b.type === 'server_tool_use' && 'id' in b) content.push({ type: 'server_tool_use', id: b.id, name: b.name, input: b.input ?? {} });
    else if (b.type === 'web_search_tool_result' && 'tool_use_id' in b)
      content.push({ type: 'web_search_tool_result', tool_use_id: b.tool_use_id, content: b.content });
    else if (b.type === 'tool_use' && 'id' in b) content.push({ type: 'tool_use', id: b.id, name: b.name, input: b.input ?? {} });
    else if (b.type === 'thinking' && 'signature' in b) content.push({ type: 'thinking', thinking: b.thinking, signature: b.signature });
    else if (b.type === 'redacted_thinking' && 'data' in b) content.push({ type: 'redacted_thinking', data: b.data });
  }
  const u = parsed.data.usage;
  const tokens = {
    inputTokens: u.input_tokens ?? 0,
    outputTokens: u.output_tokens ?? 0,
    cacheReadTokens: u.cache_read_input_tokens ?? 0,
    cacheWriteTokens: u.cache_creation_input_tokens ?? 0,
  };
  return { content, stopReason: parsed.data.stop_reason ?? 'end_turn', usage: priceUsage(model, tokens) };
}

type Building =
  | { type: 'text'; text: string; citations?: unknown[] }
  | { type: 'tool_use'; id: string; name: string; json: string; input?: unknown }
  | { type: 'server_tool_use'; id: string; name: string; json: string; input?: unknown }
  | { type: 'web_search_tool_result'; tool_use_id: string; content: unknown }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

/** A delta to forward as it streams: the reply's text, or the text of a thinking block. */
type Delta = { kind: 'text' | 'thinking'; text: string };

/** Builds the final message from raw stream events; returns a delta to forward, if any. */
export class Accumulator {
  private blocks: Array<Building | undefined> = [];
  private stopReason: string | null = null;
  private tokens = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  stopped = false;

  add(event: Anthropic.RawMessageStreamEvent): Delta | undefined {
    switch (event.type) {
      case 'message_start': {
        const u = event.message.usage;
        this.tokens = {
          inputTokens: u.input_tokens ?? 0,
          outputTokens: u.output_tokens ?? 0,
          cacheReadTokens: u.cache_read_input_tokens ?? 0,
          cacheWriteTokens: u.cache_creation_input_tokens ?? 0,
        };
        return undefined;
      }
      case 'content_block_start': {
        const b = event.content_block;
        // Other block kinds (server tools) are not requested by Gatehouse; skip them.
        if (b.type === 'text') this.blocks[event.index] = { type: 'text', text: b.text };
        else if (b.type === 'tool_use') this.blocks[event.index] = { type: 'tool_use', id: b.id, name: b.name, json: '' };
        else if (b.type === 'server_tool_use') this.blocks[event.index] = { type: 'server_tool_use', id: b.id, name: b.name, json: '' };
        // A server tool's result arrives whole in its start event.
        else if (b.type === 'web_search_tool_result') this.blocks[event.index] = { type: b.type, tool_use_id: b.tool_use_id, content: b.content };
        else if (b.type === 'thinking') this.blocks[event.index] = { type: 'thinking', thinking: b.thinking, signature: b.signature };
        else if (b.type === 'redacted_thinking') this.blocks[event.index] = { type: 'redacted_thinking', data: b.data };
        return undefined;
      }
      case 'content_block_delta': {
        const b = this.blocks[event.index];
        if (event.delta.type === 'text_delta' && b?.type === 'text') {
          b.text += event.delta.text;
          return event.delta.text === '' ? undefined : { kind: 'text', text: event.delta.text };
        }
        if (event.delta.type === 'thinking_delta' && b?.type === 'thinking') {
          b.thinking += event.delta.thinking;
          return event.delta.thinking === '' ? undefined : { kind: 'thinking', text: event.delta.thinking };
        }
        if (event.delta.type === 'signature_delta' && b?.type === 'thinking') b.signature += event.delta.signature;
        if (event.delta.type === 'input_json_delta' && (b?.type === 'tool_use' || b?.type === 'server_tool_use')) b.json += event.delta.partial_json;
        if (event.delta.type === 'citations_delta' && b?.type === 'text') (b.citations ??= []).push(event.delta.citation);
        return undefined;
      }
      case 'content_block_stop': {
        const b = this.blocks[event.index];
        if (b?.type === 'tool_use' || b?.type === 'server_tool_use') {
          try {
            b.input = b.json.trim() === '' ? {} : (JSON.parse(b.json) as unknown);
          } catch {
            throw new AttemptFailure(new ModelError('server', USER_MESSAGES.server, `The model sent tool_use ${b.name} with malformed JSON input.`));
          }
        }
        return undefined;
      }
      case 'message_delta': {
        this.stopReason = event.delta.stop_reason ?? this.stopReason;
        // Cumulative counts; input fields appear here only on some servers.
        const u = event.usage as Partial<Anthropic.MessageDeltaUsage> | undefined;
        if (typeof u?.output_tokens === 'number') this.tokens.outputTokens = u.output_tokens;
        if (typeof u?.input_tokens === 'number') this.tokens.inputTokens = u.input_tokens;
        if (typeof u?.cache_read_input_tokens === 'number') this.tokens.cacheReadTokens = u.cache_read_input_tokens;
        if (typeof u?.cache_creation_input_tokens === 'number') this.tokens.cacheWriteTokens = u.cache_creation_input_tokens;
        return undefined;
      }
      case 'message_stop':
        this.stopped = true;
        return undefined;
      default:
        return undefined;
    }
  }

  result(model: string): ModelResponse {
    const content: ContentBlock[] = [];
    for (const b of this.blocks) {
      if (!b) continue;
      if (b.type === 'text') content.push({ type: 'text', text: b.text, ...(b.citations ? { citations: b.citations } : {}) });
      else if (b.type === 'tool_use') content.push({ type: 'tool_use', id: b.id, name: b.name, input: b.input ?? {} });
      else if (b.type === 'server_tool_use') content.push({ type: 'server_tool_use', id: b.id, name: b.name, input: b.input ?? {} });
      else content.push(b);
    }
    return { content, stopReason: this.stopReason ?? 'end_turn', usage: priceUsage(model, this.tokens) };
  }
}
