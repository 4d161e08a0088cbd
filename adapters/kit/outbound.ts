/**
 * One way every adapter reports a failed platform call (post, edit, delete) for a conversation.
 *
 * Contract: `outboundCaller(log, describeError)` gives `outbound(what, ref, call)`, which returns what
 * `call` returns; when it throws, the error is logged once as "<what> in <key> failed: <why>" (the
 * platform's own describer says why, never echoing a token) and rethrown with that message, so the
 * runner reports it instead of dropping it, as an AdapterError ('outbound_failed') whose cause is
 * `causeOf(err)` (the error itself unless the platform's errors can hold a token).
 */
import type { ConversationRef, Log } from '../types.js';
import { AdapterError } from './errors.js';

export type Outbound = <T>(what: string, ref: ConversationRef, call: () => Promise<T>) => Promise<T>;

export function outboundCaller(log: Log, describeError: (err: unknown) => string, causeOf: (err: unknown) => unknown = (err) => err): Outbound {
  return async (what, ref, call) => {
    try {
      return await call();
    } catch (err) {
      const msg = `${what} in ${ref.key} failed: ${describeError(err)}`;
      log('error', msg);
      throw new AdapterError('outbound_failed', msg, { cause: causeOf(err) });
    }
  };
}
