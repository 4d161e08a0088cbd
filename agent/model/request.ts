/**
 * The Messages API request for a ModelRequest (agent/model/types.ts), for agent/model/anthropic.ts.
 *
 * Contract:
 * - `toParams`: model, max_tokens, the transcript (agent/model/thinking.ts: `messagesFor`, with
 *   thinking blocks as the API wants them), the thinking parameter, the system prompt when there is
 *   one, and the tools when there are any (a server tool's own spec as it is, else name,
 *   description and input schema). Streaming unless the caller sets `stream: false`.
 * - `encoded`: the body is encoded once here (agent/model/request-body.ts) and handed to the SDK as
 *   bytes with their content-type, so the SDK neither encodes the transcript again nor walks its
 *   blocks; the params it still sees carry no messages.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { messagesFor, thinkingParam } from './thinking.js';
import type { ModelRequest } from './types.js';
import { requestBody } from './request-body.js';

/**
 * The call's arguments with the body already encoded (agent/model/request-body.ts): the SDK sends a
 * byte body as it is, so it neither encodes the transcript again nor walks
 * its blocks (the params it still sees carry no messages; it reads only model, max_tokens, stream).
 */
export function encoded<P extends Anthropic.MessageCreateParams, O extends Anthropic.RequestOptions>(params: P, options: O): [P, O] {
  const body = requestBody(params as unknown as { messages: unknown[] } & Record<string, unknown>);
  return [
    { ...params, messages: [] },
    { ...options, body, headers: { 'content-type': 'application/json' } },
  ];
}

export function toParams(req: ModelRequest): Anthropic.MessageCreateParamsStreaming {
  return {
    model: req.model,
    max_tokens: req.maxTokens,
    // The transcript's blocks are the API's own JSON shapes (agent/context/messages.ts), validated on load.
    messages: messagesFor(req) as unknown as Anthropic.MessageParam[],
    stream: true,
    ...thinkingParam(req),
    ...(req.system ? { system: req.system } : {}),
    ...(req.tools.length > 0
      ? {
          tools: req.tools.map(
            (t): Anthropic.ToolUnion =>
              (t.server as unknown as Anthropic.ToolUnion | undefined) ?? {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema as Anthropic.Tool.InputSchema,
              },
          ),
        }
      : {}),
  };
}
