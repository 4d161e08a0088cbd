/**
 * The retry loop of a model call, for agent/model/anthropic.ts (the SDK's own retries are off, so every retry
 * is observable through `onRetry` and testable).
 *
 * Contract:
 * - Retried: an AttemptFailure whose code is rate_limited, overloaded, server or network (429,
 *   5xx, 529 / overloaded_error, connection failures, a stream cut short). Not retried: auth,
 *   bad_request, timeout (the attempt already used its whole budget), aborted, and anything that
 *   is not an AttemptFailure (thrown as it is).
 * - A retry happens ONLY while no delta has been forwarded in that attempt (`seen.text`): once
 *   someone has seen part of an answer, a retry would show it twice, so the failure surfaces.
 * - The wait is the server's (`retryAfterMs`), else exponential backoff from `retryBaseMs` with
 *   jitter (50-100 %), capped at `maxRetryWaitMs`. When the server asks for more than
 *   `maxRetryWaitMs`, the call fails now rather than hold the run.
 * - An abort before an attempt, or while waiting to retry, is an `aborted` ModelError.
 */
import { abortedError, AttemptFailure, USER_MESSAGES } from './errors.js';
import { ModelError } from './types.js';
import type { ModelErrorCode } from './types.js';

export interface RetryInfo {
  /** 1 for the first retry. */
  attempt: number;
  delayMs: number;
  code: ModelErrorCode;
  /** The failure being retried (already scrubbed of the key). */
  detail: string;
}

export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  retryBaseMs: number;
  maxRetryWaitMs: number;
  onRetry?: ((info: RetryInfo) => void) | undefined;
}

const RETRYABLE: ReadonlySet<ModelErrorCode> = new Set(['rate_limited', 'overloaded', 'server', 'network']);

/** Runs `attempt` until it succeeds or fails for good; `seen.text` is set by an attempt that forwarded a delta. */
export async function withRetries<T>(policy: RetryPolicy, signal: AbortSignal | undefined, attempt: (seen: { text: boolean }) => Promise<T>): Promise<T> {
  for (let retry = 0; ; retry++) {
    if (signal?.aborted) throw abortedError();
    const seen = { text: false };
    try {
      return await attempt(seen);
    } catch (err) {
      if (!(err instanceof AttemptFailure)) throw err;
      const { error } = err;
      if (!RETRYABLE.has(error.code) || seen.text || retry >= policy.maxRetries) throw error;
      const backoff = Math.min(policy.maxRetryWaitMs, policy.retryBaseMs * 2 ** retry) * (0.5 + Math.random() / 2);
      const delayMs = err.retryAfterMs ?? backoff;
      if (delayMs > policy.maxRetryWaitMs) throw error;
      policy.onRetry?.({ attempt: retry + 1, delayMs, code: error.code, detail: error.message });
      await sleep(delayMs, signal);
    }
  }
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
