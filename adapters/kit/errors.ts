/**
 * The one error class adapters throw, and the one way they read a message out of anything thrown.
 *
 * Contract:
 * - `AdapterError(code, message, { cause })`: an Error whose `code` says which kind of failure it is
 *   (a refused call, a bad handle, a failed start) and whose `cause` is the platform's own error, so a
 *   caller can tell failures apart and a debugger sees the original. The message never holds a token;
 *   a platform whose errors may carry one (Telegram: the token is in every URL) passes a scrubbed cause.
 * - `messageOf(x)`: an Error's message, else `String(x)`.
 * - `scrubbedCause(err, describeError)`: a stand-in for a platform error that may hold a secret (in a URL, in
 *   the request's headers): an Error with only the described (scrubbed) text, the original's name and
 *   its string `code`, so the kind of failure survives and the secret does not.
 */
/**
 * outbound_failed: a platform call failed or answered without what it must return; bad_card_handle: a
 * stored card handle this adapter cannot read; start_failed: bad credentials or settings, or a start
 * that did not complete; not_started: used before start; bad_input: an id, key or token this platform
 * cannot take (a conversation key of another form, a button token too long for the platform).
 */
export type AdapterErrorCode = 'outbound_failed' | 'bad_card_handle' | 'start_failed' | 'not_started' | 'bad_input';

export class AdapterError extends Error {
  readonly code: AdapterErrorCode;
  constructor(code: AdapterErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AdapterError';
    this.code = code;
  }
}

/** The one helper (agent/log.ts), here too so an adapter's error helpers come from one place. */
export { messageOf } from '../../agent/log.js';

export function scrubbedCause(err: unknown, describeError: (err: unknown) => string): Error {
  const out = new Error(describeError(err));
  if (err instanceof Error) out.name = err.name;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') Object.assign(out, { code });
  return out;
}
