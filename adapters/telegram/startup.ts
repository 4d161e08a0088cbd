/**
 * Start-up and the connection: the checks at start, the webhook, long polling, and why a start failed.
 *
 * Contract:
 * - `startUp(ctx, opts)`: getMe (unless the bot already knows itself), setMyCommands (the / menu; a
 *   refusal is a warning, not a failed start), and in webhook mode setWebhook with the secret; it
 *   gives the webhook's request handler (a wrong secret gets 401; past 8 s Telegram is answered and
 *   the update goes on). Any failure is a `telegramStartError`.
 * - `longPolling(ctx, opts)`: the held connection's open/close/up. open: deleteWebhook, then a quick
 *   getUpdates probe, so a second poller (409) fails the open instead of a log line later, then
 *   @grammyjs/runner polls without an offset (the router's event ledger drops what was handled). A
 *   later 401/409 stops polling with an error in the log. close: stops the runner and confirms the
 *   offset of the last update handled, so the next poller does not get it again.
 * - `telegramStartError` is an AdapterError('start_failed') whose message names the fix (a rejected
 *   token, a second poller, an unreachable API root) and never holds the token; its cause is scrubbed
 *   (scrubbedCause), because grammy's errors carry the request URL and the token is in it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { run } from '@grammyjs/runner';
import type { RunnerHandle } from '@grammyjs/runner';
import { GrammyError, HttpError, webhookCallback } from 'grammy';
import { AdapterError, messageOf, scrubbedCause } from '../kit/errors.js';
import type { TelegramContext } from './context.js';

const CONFLICT_MESSAGE = 'another process is polling with this token (409 Conflict): stop it or use webhook mode (TELEGRAM_WEBHOOK_URL)';

interface StartErrorTools {
  apiRoot: string;
  scrub: (s: string) => string;
  describeError: (err: unknown) => string;
}

function telegramStartError(err: unknown, t: StartErrorTools): AdapterError {
  if (err instanceof GrammyError) {
    if (err.error_code === 401 || err.error_code === 404) {
      const what = err.error_code === 401 ? '401 Unauthorized' : '404 Not Found';
      return new AdapterError('start_failed', `TELEGRAM_BOT_TOKEN was rejected by Telegram (${what}): check the token from @BotFather`, {
        cause: scrubbedCause(err, t.describeError),
      });
    }
    if (err.error_code === 409) return new AdapterError('start_failed', CONFLICT_MESSAGE, { cause: scrubbedCause(err, t.describeError) });
    return new AdapterError('start_failed', `Telegram refused ${err.method} at start (${err.error_code}: ${t.scrub(err.description)})`, {
      cause: scrubbedCause(err, t.describeError),
    });
  }
  if (err instanceof HttpError) {
    const inner = messageOf(err.error);
    return new AdapterError('start_failed', t.scrub(`cannot reach the Telegram Bot API at ${t.apiRoot}: ${inner} (check TELEGRAM_API_ROOT and the network)`), {
      cause: scrubbedCause(err, t.describeError),
    });
  }
  return new AdapterError('start_failed', `Telegram start failed: ${t.describeError(err)}`, { cause: scrubbedCause(err, t.describeError) });
}

/** The chat commands the router understands (bot/service/router.ts), for Telegram's / menu. */
export const CHAT_COMMANDS: ReadonlyArray<{ command: string; description: string }> = [
  { command: 'stop', description: 'Cancel the current run' },
  { command: 'reset', description: 'Start a new conversation' },
  { command: 'id', description: "Show this chat's id and yours" },
  { command: 'help', description: 'What this bot can do and its commands' },
];

const UPDATES = ['message', 'callback_query'] as const;

export type WebhookHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

const startError = (ctx: TelegramContext, err: unknown) => telegramStartError(err, ctx);

/** The start-up calls; the webhook's handler in webhook mode. */
export async function startUp(
  ctx: TelegramContext,
  opts: {
    knowsItself: boolean;
    commands: ReadonlyArray<{ command: string; description: string }>;
    webhook: { url: string; secret: string } | undefined;
  },
): Promise<WebhookHandler | undefined> {
  const { bot } = ctx;
  try {
    if (!opts.knowsItself) bot.botInfo = await bot.api.getMe();
    // Fills the / menu. A refusal costs only the menu, so it is a warning, not a failed start.
    try {
      await bot.api.setMyCommands([...opts.commands]);
    } catch (err) {
      ctx.log('warn', `could not register the / menu (setMyCommands): ${ctx.describeError(err)}`);
    }
    if (!opts.webhook) return undefined;
    const { url, secret } = opts.webhook;
    await bot.api.setWebhook(url, { secret_token: secret, allowed_updates: [...UPDATES] });
    return webhookCallback(bot, 'http', {
      secretToken: secret,
      onTimeout: 'return', // answer Telegram; the handler keeps going
      timeoutMilliseconds: 8000,
    });
  } catch (err) {
    throw startError(ctx, err);
  }
}

/** Long polling: the connection only one process may hold per token (a second poller gets 409). */
export function longPolling(
  ctx: TelegramContext,
  opts: { pollTimeoutSeconds: number },
): { open: () => Promise<void>; close: () => Promise<void>; up: () => boolean } {
  const { bot, log } = ctx;
  let runner: RunnerHandle | undefined;

  async function open(): Promise<void> {
    try {
      await bot.api.deleteWebhook();
      // A quick probe, so a second poller makes the open fail instead of a log line later.
      await bot.api.getUpdates({ timeout: 0, limit: 1 });
    } catch (err) {
      throw startError(ctx, err);
    }
    // No offset: Telegram hands out every update not yet confirmed, including those a poller that
    // died had fetched; the router's event ledger (shared by replicas) drops the ones it handled.
    const r = run(bot, {
      runner: {
        fetch: { timeout: opts.pollTimeoutSeconds, allowed_updates: [...UPDATES] },
        silent: true,
      },
    });
    runner = r;
    r.task()?.catch((err: unknown) => {
      const conflict = err instanceof GrammyError && err.error_code === 409;
      log('error', conflict ? `polling stopped: ${CONFLICT_MESSAGE}` : `polling stopped: ${startError(ctx, err).message}`);
    });
  }

  async function close(): Promise<void> {
    const r = runner;
    runner = undefined;
    if (!r) return;
    try {
      await r.stop();
    } catch {
      // already logged by the task handler
    }
    // Confirm what was handled, so the next poller (a restart, another replica) does not get it again.
    const last = ctx.lastUpdateId;
    if (last !== undefined) {
      await bot.api.getUpdates({ offset: last + 1, limit: 1, timeout: 0 }).catch(() => undefined);
    }
  }

  return { open, close, up: () => runner?.isRunning() ?? false };
}
