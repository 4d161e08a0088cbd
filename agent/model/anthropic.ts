/**
 * The ModelClient on @anthropic-ai/sdk (see agent/model/types.ts for the seam's contract): one
 * attempt of a call, and the client around it. Its parts: agent/model/request.ts (the request),
 * agent/model/reply.ts (reading the reply, streamed or whole), agent/model/retry.ts (the retry loop),
 * agent/model/errors.ts (failures as ModelError, the key scrubbed).
 *
 * Contract of this implementation:
 * - Streams a call that has an `onText` (or `onThinking`) listener (`messages.create({ stream: true })`):
 *   deltas go to it in order. A call without one (the classifier; a platform that shows only whole
 *   answers) asks for the whole reply at once, which costs less CPU on both ends, as long as its
 *   max_tokens is at most WHOLE_REPLY_MAX_TOKENS (longer replies stream: the API wants long requests
 *   streamed). Either way the result holds the content blocks in index order, the stop reason and
 *   the priced usage (agent/model/reply.ts).
 * - The SDK's own retries are off (`maxRetries: 0`); agent/model/retry.ts retries, so every retry is
 *   observable (`onRetry`) and testable. An attempt marks when it forwarded a delta: no retry after
 *   that. A stream cut short (a broken connection, or no message_stop) is a `network` failure.
 * - HTTP goes through agent/model/http-fetch.ts (node:http keep-alive), not the built-in fetch: cheaper.
 * - `timeoutMs` (or the request's own) bounds one attempt end to end, stream included; a timed-out
 *   attempt is a `timeout` failure, a caller's abort an `aborted` one. A listener that throws
 *   surfaces its own error, unmapped.
 * - Failures are ModelError (agent/model/errors.ts): `userMessage` is short and chat-safe, `message`
 *   has the detail for the log. Neither ever contains the API key.
 * - The SDK is imported on the first call (or by `loadModelSdk()`, which the bot calls once it is
 *   up): creating the client loads nothing, so a start is not held up by the SDK's ~300 modules.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { ClassifierCompletion } from '../../policies/classifier.js';
import { createNodeFetch } from './http-fetch.js';
import { abortedError, AttemptFailure, makeScrubber, safeUrl, toFailure, USER_MESSAGES, type Sdk } from './errors.js';
import { Accumulator, wholeReply } from './reply.js';
import { encoded, toParams } from './request.js';
import { withRetries, type RetryInfo } from './retry.js';
import { ModelError } from './types.js';
import type { ModelClient, ModelRequest, ModelResponse } from './types.js';
import { messageOf } from '../log.js';

export { USER_MESSAGES } from './errors.js';
export type { RetryInfo };

export interface AnthropicModelOptions {
  apiKey: string;
  /** Any server speaking the Messages API; default https://api.anthropic.com (or ANTHROPIC_BASE_URL). */
  baseURL?: string;
  /** Retries after the first attempt (default 3). */
  maxRetries?: number;
  /** One attempt's budget, stream included (default 10 minutes). */
  timeoutMs?: number;
  /** First backoff step (default 1000 ms); doubles per retry. */
  retryBaseMs?: number;
  /** The longest single wait (default 30 s). */
  maxRetryWaitMs?: number;
  onRetry?: (info: RetryInfo) => void;
  /** The HTTP client (default: agent/model/http-fetch.ts on node:http). Tests may pass the built-in fetch. */
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
}

/** The largest max_tokens asked for as a whole reply; the SDK insists on streaming for some models above 8,192. */
export const WHOLE_REPLY_MAX_TOKENS = 8192;

let sdkLoading: Promise<Sdk> | undefined;

/** The Anthropic SDK, imported once (the first model call waits for it; a started bot warms it). */
export function loadModelSdk(): Promise<Sdk> {
  return (sdkLoading ??= import('@anthropic-ai/sdk'));
}

export function createAnthropicModel(opts: AnthropicModelOptions): ModelClient {
  if (!opts.apiKey) throw new Error('createAnthropicModel: apiKey is empty; set ANTHROPIC_API_KEY.');
  let client: Anthropic | undefined;
  // Named in "could not reach" messages; credentials in the URL are never shown.
  let serviceUrl: string | undefined;
  const clientOf = (sdk: Sdk): Anthropic => {
    if (client) return client;
    client = new sdk.default({
      apiKey: opts.apiKey,
      ...(opts.baseURL ? { baseURL: opts.baseURL } : {}),
      maxRetries: 0,
      fetch: opts.fetch ?? createNodeFetch(),
      // Gatehouse registers no OpenTelemetry tracer, so the SDK's spans would go nowhere; building
      // them cost about 2% of the bot's CPU per chat message.
      openTelemetry: false,
    });
    serviceUrl = safeUrl(client.baseURL);
    return client;
  };
  const maxRetries = opts.maxRetries ?? 3;
  const defaultTimeoutMs = opts.timeoutMs ?? 10 * 60_000;
  const retryBaseMs = opts.retryBaseMs ?? 1000;
  const maxRetryWaitMs = opts.maxRetryWaitMs ?? 30_000;
  const scrub = makeScrubber(opts.apiKey);
  const retryPolicy = { maxRetries, retryBaseMs, maxRetryWaitMs, onRetry: opts.onRetry };

  async function attempt(req: ModelRequest, seen: { text: boolean }): Promise<ModelResponse> {
    const sdk = await loadModelSdk();
    const { APIError, APIUserAbortError } = sdk;
    const client = clientOf(sdk);
    // An abort while the SDK loaded came before anyone listened.
    if (req.signal?.aborted) throw abortedError();
    const ac = new AbortController();
    let timedOut = false;
    const onAbort = () => ac.abort();
    req.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, req.timeoutMs ?? defaultTimeoutMs);
    let reading = false;
    let callerError: { err: unknown } | undefined;
    try {
      if (!req.onText && !req.onThinking && req.maxTokens <= WHOLE_REPLY_MAX_TOKENS) {
        reading = true; // a body cut short fails inside create(), as a plain error
        const timeout = req.timeoutMs ?? defaultTimeoutMs;
        const message = await client.messages.create(...encoded({ ...toParams(req), stream: false }, { signal: ac.signal, maxRetries: 0, timeout }));
        if (ac.signal.aborted) throw new APIUserAbortError();
        return wholeReply(message, req.model);
      }
      const stream = await client.messages.create(...encoded(toParams(req), { signal: ac.signal, maxRetries: 0 }));
      const acc = new Accumulator();
      reading = true;
      for await (const event of stream) {
        const delta = acc.add(event);
        const listener = delta && (delta.kind === 'text' ? req.onText : req.onThinking);
        if (delta && listener) {
          // Text someone saw cannot be taken back: no retry after it (thinking included).
          seen.text = true;
          try {
            listener(delta.text);
          } catch (err) {
            callerError = { err };
            throw err;
          }
        }
      }
      // The SDK ends iteration quietly when its signal aborts, so check before trusting the result.
      if (ac.signal.aborted) throw new APIUserAbortError();
      if (!acc.stopped) {
        throw new AttemptFailure(new ModelError('network', USER_MESSAGES.network, 'The model stream ended before message_stop.'));
      }
      return acc.result(req.model);
    } catch (err) {
      if (req.signal?.aborted) throw abortedError();
      if (timedOut) {
        const ms = req.timeoutMs ?? defaultTimeoutMs;
        throw new AttemptFailure(new ModelError('timeout', USER_MESSAGES.timeout, `The model call timed out after ${ms} ms.`));
      }
      if (callerError && callerError.err === err) throw err;
      // The SDK passes a broken body through as it is (a cut connection, a garbled event or JSON).
      if (reading && !(err instanceof APIError) && !(err instanceof AttemptFailure)) {
        const detail = scrub(`The model stream broke off: ${messageOf(err)}`);
        throw new AttemptFailure(new ModelError('network', USER_MESSAGES.network, detail));
      }
      throw toFailure(sdk, err, scrub, serviceUrl);
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
    }
  }

  return {
    complete(req: ModelRequest): Promise<ModelResponse> {
      return withRetries(retryPolicy, req.signal, (seen) => attempt(req, seen));
    },
  };
}

/**
 * A ClassifierCompletion (policies/classifier.ts) on a ModelClient: one user message holding the
 * tagged command, no tools, a tiny max_tokens. The reply's `usage` is a `Usage`: the runner reports
 * it apart from the conversation's.
 */
export function classifierCompletionFrom(model: ModelClient, modelName: string): ClassifierCompletion {
  return async ({ system, user, signal }) => {
    const res = await model.complete({
      model: modelName,
      system,
      messages: [{ role: 'user', content: [{ type: 'text', text: user }] }],
      tools: [],
      maxTokens: 10,
      signal,
    });
    const text = res.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    return { text, usage: res.usage };
  };
}
