/**
 * The ModelClient on @anthropic-ai/sdk (see agent/model-types.ts for the seam's contract).
 *
 * Contract of this implementation:
 * - Streams a call that has an `onText` listener (`messages.create({ stream: true })`): text deltas go
 *   to it in order. A call without one (the classifier; a platform that shows only whole answers)
 *   asks for the whole reply at once, which costs less CPU on both ends, as long as its max_tokens
 *   is at most WHOLE_REPLY_MAX_TOKENS (longer replies stream: the API wants long requests streamed).
 *   Either way the result holds the content blocks in index order (text, tool_use with its input
 *   parsed), the stop reason and the usage priced by agent/pricing.ts.
 * - The SDK's own retries are off (`maxRetries: 0`); this module retries, so every retry is
 *   observable (`onRetry`) and testable. Retried: 429, 5xx, 529 / overloaded_error, connection
 *   failures, a stream cut short (a broken connection, or no message_stop). Not retried: 4xx (auth,
 *   bad request), timeouts (the attempt already used its whole budget), aborts.
 * - HTTP goes through agent/http-fetch.ts (node:http keep-alive), not the built-in fetch: cheaper.
 * - A retry happens ONLY while no text delta has been forwarded: once the user has seen part of an
 *   answer, a retry would show it twice, so the failure surfaces instead.
 * - The wait honours `retry-after-ms`, then `retry-after` (seconds or an HTTP date); without one it
 *   is exponential backoff from `retryBaseMs` with jitter (50-100 %), capped at `maxRetryWaitMs`.
 *   When the server asks for more than `maxRetryWaitMs`, we fail now rather than hold the run.
 * - `timeoutMs` (or the request's own) bounds one attempt end to end, stream included.
 * - Failures are ModelError: `userMessage` is short and chat-safe, `message` has the detail for the
 *   log. Neither ever contains the API key (it is scrubbed from anything the server echoes).
 * - The SDK is imported on the first call (or by `loadModelSdk()`, which the bot calls once it is
 *   up): creating the client loads nothing, so a start is not held up by the SDK's ~300 modules.
 */
import { messagesFor, thinkingParam } from './model-thinking.js';
import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import type { ClassifierCompletion } from '../policies/classifier.js';
import type { Usage } from './events.js';
import type { ContentBlock } from './messages.js';
import { createNodeFetch } from './http-fetch.js';
import { ModelError } from './model-types.js';
import type { ModelClient, ModelErrorCode, ModelRequest, ModelResponse } from './model-types.js';
import { priceUsage } from './pricing.js';
import { requestBody } from './request-body.js';

export interface RetryInfo {
  /** 1 for the first retry. */
  attempt: number;
  delayMs: number;
  code: ModelErrorCode;
  /** The failure being retried (already scrubbed of the key). */
  detail: string;
}

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
  /** The HTTP client (default: agent/http-fetch.ts on node:http). Tests may pass the built-in fetch. */
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
}

export const USER_MESSAGES: Record<ModelErrorCode, string> = {
  rate_limited: 'The model is rate-limited right now; try again in a minute.',
  overloaded: 'The model is overloaded right now; try again in a minute.',
  server: 'The model service had an error; try again in a moment.',
  auth: "The model service rejected the bot's credentials; the operator needs to check the API key.",
  bad_request: 'The model service refused this request; the operator can find the reason in the log.',
  timeout: 'The model took too long to answer; try again, or ask for something smaller.',
  network: 'Could not reach the model service; try again in a moment.',
  aborted: 'Stopped.',
};
const TOO_LONG_MESSAGE = 'This conversation is too long for the model; send /reset to start a new one.';
const BILLING_MESSAGE = 'The model account has a billing problem; the operator needs to check it.';

/** The largest max_tokens asked for as a whole reply; the SDK insists on streaming for some models above 8,192. */
export const WHOLE_REPLY_MAX_TOKENS = 8192;

const RETRYABLE: ReadonlySet<ModelErrorCode> = new Set(['rate_limited', 'overloaded', 'server', 'network']);

/** Thrown inside an attempt; carries what the retry loop needs beyond the ModelError. */
class AttemptFailure extends Error {
  constructor(
    readonly error: ModelError,
    readonly retryAfterMs?: number,
  ) {
    super(error.message);
  }
}

type Sdk = typeof import('@anthropic-ai/sdk');
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

  async function attempt(req: ModelRequest, seen: { text: boolean }): Promise<ModelResponse> {
    const sdk = await loadModelSdk();
    const { APIError, APIUserAbortError } = sdk;
    const client = clientOf(sdk);
    // An abort while the SDK loaded came before anyone listened.
    if (req.signal?.aborted) throw new ModelError('aborted', USER_MESSAGES.aborted, 'The model call was aborted.');
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
      if (req.signal?.aborted) throw new ModelError('aborted', USER_MESSAGES.aborted, 'The model call was aborted.');
      if (timedOut) {
        const ms = req.timeoutMs ?? defaultTimeoutMs;
        throw new AttemptFailure(new ModelError('timeout', USER_MESSAGES.timeout, `The model call timed out after ${ms} ms.`));
      }
      if (callerError && callerError.err === err) throw err;
      // The SDK passes a broken body through as it is (a cut connection, a garbled event or JSON).
      if (reading && !(err instanceof APIError) && !(err instanceof AttemptFailure)) {
        const detail = scrub(`The model stream broke off: ${err instanceof Error ? err.message : String(err)}`);
        throw new AttemptFailure(new ModelError('network', USER_MESSAGES.network, detail));
      }
      throw toFailure(sdk, err, scrub, serviceUrl);
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
    }
  }

  return {
    async complete(req: ModelRequest): Promise<ModelResponse> {
      for (let retry = 0; ; retry++) {
        if (req.signal?.aborted) throw new ModelError('aborted', USER_MESSAGES.aborted, 'The model call was aborted.');
        const seen = { text: false };
        try {
          return await attempt(req, seen);
        } catch (err) {
          if (!(err instanceof AttemptFailure)) throw err;
          const { error } = err;
          if (!RETRYABLE.has(error.code) || seen.text || retry >= maxRetries) throw error;
          const backoff = Math.min(maxRetryWaitMs, retryBaseMs * 2 ** retry) * (0.5 + Math.random() / 2);
          const delayMs = err.retryAfterMs ?? backoff;
          if (delayMs > maxRetryWaitMs) throw error;
          opts.onRetry?.({ attempt: retry + 1, delayMs, code: error.code, detail: error.message });
          await sleep(delayMs, req.signal);
        }
      }
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

/**
 * The call's arguments with the body already encoded (agent/request-body.ts): the SDK sends a
 * string body with a content-type as it is, so it neither encodes the transcript again nor walks
 * its blocks (the params it still sees carry no messages; it reads only model, max_tokens, stream).
 */
function encoded<P extends Anthropic.MessageCreateParams, O extends Anthropic.RequestOptions>(params: P, options: O): [P, O] {
  const body = requestBody(params as unknown as { messages: unknown[] } & Record<string, unknown>);
  return [
    { ...params, messages: [] },
    { ...options, body, headers: { 'content-type': 'application/json' } },
  ];
}

function toParams(req: ModelRequest): Anthropic.MessageCreateParamsStreaming {
  return {
    model: req.model,
    max_tokens: req.maxTokens,
    // The transcript's blocks are the API's own JSON shapes (agent/messages.ts), validated on load.
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
function wholeReply(raw: unknown, model: string): ModelResponse {
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
class Accumulator {
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

function makeScrubber(apiKey: string): (s: string) => string {
  return (s) =>
    s
      .split(apiKey)
      .join('[redacted]')
      .replace(/sk-ant-[A-Za-z0-9_-]+/g, 'sk-ant-[redacted]');
}

function headerRetryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers?.get('retry-after');
  if (!raw) return undefined;
  const sec = Number.parseFloat(raw);
  if (Number.isFinite(sec) && sec >= 0) return sec * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function safeUrl(raw: string): string {
  try {
    const u = new URL(raw);
    u.username = '';
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '(the configured model URL)';
  }
}

const NETWORK_CAUSES: Record<string, string> = {
  ECONNREFUSED: 'connection refused: is the server running?',
  ENOTFOUND: 'host not found: check the URL',
  EAI_AGAIN: 'name lookup failed: check DNS or the network',
  ETIMEDOUT: 'connection timed out',
  ECONNRESET: 'connection reset by the server',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  CERT_HAS_EXPIRED: "the server's TLS certificate has expired",
  DEPTH_ZERO_SELF_SIGNED_CERT: "the server's TLS certificate is self-signed",
};

/** The first error code (ECONNREFUSED, ...) or message found along an error's cause chain. */
function networkCause(err: unknown): string {
  let message: string | undefined;
  for (let e: unknown = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return NETWORK_CAUSES[code] ?? code;
    const m = (e as { message?: unknown }).message;
    if (typeof m === 'string' && m !== '' && !/^Connection error\.?$/i.test(m)) message = m;
  }
  return message ?? 'no connection';
}

/** "Could not reach the model service at <url> (<cause>)": names where it went and why it failed. */
export function networkUserMessage(url: string, cause: string): string {
  return `Could not reach the model service at ${url} (${cause}); try again in a moment.`;
}

function toFailure(sdk: Sdk, err: unknown, scrub: (s: string) => string, serviceUrl = '(the configured model URL)'): unknown {
  const { APIError, APIConnectionError, APIUserAbortError } = sdk;
  if (err instanceof AttemptFailure) return err;
  if (err instanceof APIUserAbortError) {
    return new AttemptFailure(new ModelError('aborted', USER_MESSAGES.aborted, 'The model call was aborted.'));
  }
  if (err instanceof APIConnectionError) {
    const cause = scrub(networkCause(err));
    return new AttemptFailure(
      new ModelError('network', networkUserMessage(serviceUrl, cause), scrub(`Model connection to ${serviceUrl} failed: ${err.message} (${cause})`)),
    );
  }
  if (!(err instanceof APIError)) return err; // not the SDK's (e.g. onText threw): the caller's bug, not ours to map
  const status = err.status;
  const type = err.type ?? '';
  const rid = err.requestID ? ` (request-id ${err.requestID})` : '';
  const detail = scrub(`Anthropic API ${status ?? 'stream'} ${type || 'error'}: ${err.apiMessage ?? err.message}${rid}`).slice(0, 800);
  const fail = (code: ModelErrorCode, userMessage = USER_MESSAGES[code]) =>
    new AttemptFailure(new ModelError(code, userMessage, detail), headerRetryAfterMs(err.headers));
  if (status === 429 || type === 'rate_limit_error') return fail('rate_limited');
  if (status === 529 || type === 'overloaded_error') return fail('overloaded');
  if (status === 401 || status === 403 || type === 'authentication_error' || type === 'permission_error') return fail('auth');
  if (status === 402 || type === 'billing_error') return fail('auth', BILLING_MESSAGE);
  if (status === 408 || status === 409 || (status !== undefined && status >= 500) || type === 'api_error' || type === 'timeout_error') {
    return fail('server');
  }
  if (status === 413 || /prompt is too long|too many (input )?tokens|context (window|length)/i.test(err.apiMessage ?? '')) {
    return fail('bad_request', TOO_LONG_MESSAGE);
  }
  if (status === undefined) return fail('server'); // an SSE `error` event of an unknown type
  return fail('bad_request');
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const aborted = () => new ModelError('aborted', USER_MESSAGES.aborted, 'The model call was aborted while waiting to retry.');
    if (signal?.aborted) return reject(aborted());
    const onAbort = () => {
      clearTimeout(t);
      reject(aborted());
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
