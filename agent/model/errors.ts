/**
 * How a failed model call becomes a ModelError (agent/model/types.ts), for agent/model/anthropic.ts.
 *
 * Contract:
 * - `toFailure` maps what the SDK throws: 429 / rate_limit_error -> rate_limited, 529 /
 *   overloaded_error -> overloaded, 401/403 / auth and permission errors -> auth, 402 / billing ->
 *   auth with a billing message, 408/409/5xx / api_error / timeout_error -> server, a prompt too
 *   long -> bad_request asking for /reset, other 4xx -> bad_request, a connection failure ->
 *   network naming the service's URL (credentials removed) and the cause (ECONNREFUSED, ...), a
 *   user abort -> aborted. Anything else (the caller's own throw) passes through unmapped.
 * - An AttemptFailure carries the ModelError and the server's wait (`retry-after-ms`, then
 *   `retry-after` in seconds or as an HTTP date) to the retry loop (agent/model/retry.ts).
 * - `userMessage` is short and chat-safe (USER_MESSAGES); `message` has the detail for the log,
 *   at most 800 characters. Neither ever contains the API key: `makeScrubber` removes it, and any
 *   sk-ant- key, from anything the server echoes.
 */
import { ModelError } from './types.js';
import type { ModelErrorCode } from './types.js';

export type Sdk = typeof import('@anthropic-ai/sdk');

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

/** Thrown inside an attempt; carries what the retry loop needs beyond the ModelError. */
export class AttemptFailure extends Error {
  constructor(
    readonly error: ModelError,
    readonly retryAfterMs?: number,
  ) {
    super(error.message);
  }
}

/** The ModelError of a call aborted by its caller. */
export function abortedError(): ModelError {
  return new ModelError('aborted', USER_MESSAGES.aborted, 'The model call was aborted.');
}

export function makeScrubber(apiKey: string): (s: string) => string {
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

export function safeUrl(raw: string): string {
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
function networkUserMessage(url: string, cause: string): string {
  return `Could not reach the model service at ${url} (${cause}); try again in a moment.`;
}

export function toFailure(sdk: Sdk, err: unknown, scrub: (s: string) => string, serviceUrl = '(the configured model URL)'): unknown {
  const { APIError, APIConnectionError, APIUserAbortError } = sdk;
  if (err instanceof AttemptFailure) return err;
  if (err instanceof APIUserAbortError) {
    return new AttemptFailure(abortedError());
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
