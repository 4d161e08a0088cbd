/**
 * Why a Telegram start failed, said so the operator knows what to do.
 *
 * Contract: `telegramStartError` is an AdapterError('start_failed') whose message names the fix (a
 * rejected token, a second poller, an unreachable API root) and never holds the token; its cause is
 * scrubbed (scrubbedCause), because grammy's errors carry the request URL and the token is in it.
 */
import { GrammyError, HttpError } from 'grammy';
import { AdapterError, messageOf, scrubbedCause } from '../kit/errors.js';

export const CONFLICT_MESSAGE = 'another process is polling with this token (409 Conflict): stop it or use webhook mode (TELEGRAM_WEBHOOK_URL)';

export interface StartErrorTools {
  apiRoot: string;
  scrub: (s: string) => string;
  describe: (err: unknown) => string;
}

export function telegramStartError(err: unknown, t: StartErrorTools): AdapterError {
  if (err instanceof GrammyError) {
    if (err.error_code === 401 || err.error_code === 404) {
      const what = err.error_code === 401 ? '401 Unauthorized' : '404 Not Found';
      return new AdapterError('start_failed', `TELEGRAM_BOT_TOKEN was rejected by Telegram (${what}): check the token from @BotFather`, {
        cause: scrubbedCause(err, t.describe),
      });
    }
    if (err.error_code === 409) return new AdapterError('start_failed', CONFLICT_MESSAGE, { cause: scrubbedCause(err, t.describe) });
    return new AdapterError('start_failed', `Telegram refused ${err.method} at start (${err.error_code}: ${t.scrub(err.description)})`, {
      cause: scrubbedCause(err, t.describe),
    });
  }
  if (err instanceof HttpError) {
    const inner = messageOf(err.error);
    return new AdapterError('start_failed', t.scrub(`cannot reach the Telegram Bot API at ${t.apiRoot}: ${inner} (check TELEGRAM_API_ROOT and the network)`), {
      cause: scrubbedCause(err, t.describe),
    });
  }
  return new AdapterError('start_failed', `Telegram start failed: ${t.describe(err)}`, { cause: scrubbedCause(err, t.describe) });
}
