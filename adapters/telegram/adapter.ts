/**
 * The Telegram adapter (grammy). adapters/telegram/ is the only folder that imports grammy. This file
 * builds the bot and owns its lifecycle; the work is split by responsibility, as Slack's is:
 * context.ts (the bot, its API clients and retries, the token scrubber), inbound.ts (messages, files,
 * order per chat), interactivity.ts (button presses), output.ts (answers, progress, cards),
 * startup.ts (start-up calls, the webhook, long polling, start errors), keys.ts, cards.ts, format.ts.
 *
 * Contract (beyond adapters/types.ts):
 * - start(): getMe (unless `botInfo`), setMyCommands (the / menu: /stop, /reset, /id, /help; a refusal is
 *   a warning), then either long polling (deleteWebhook, a quick getUpdates
 *   probe so a 409 fails start(), then @grammyjs/runner) or webhook mode (setWebhook with the
 *   secret; `httpRoutes()` gives the handler the bot's HTTP server mounts; a wrong secret gets 401).
 *   Start-up errors say what to do and never contain the token. A 401/409 while polling later is
 *   logged as an error and polling stops (visible, not a silent retry loop).
 * - Long polling is the adapter's `held` connection (adapters/types.ts): `start(sink, { holdConnection:
 *   false })` readies sending only, `held.open()` / `held.close()` poll and stop (a close confirms the
 *   offset of what was handled). Webhook mode has none: every replica takes its webhook requests.
 * - Inbound messages are handled in order per chat (and topic), concurrently across chats; button
 *   presses never queue behind messages. Every callback query is answered.
 * - Outbound calls retry a 429 after its retry_after (up to 3 times) and a network error twice,
 *   then log and throw. The run's status message has its own throttle (status.ts).
 * - Attachments: photos -> image (the largest size within `maxAttachmentBytes`), documents -> text
 *   or image by MIME type/extension. One that cannot be read is not downloaded; the message text
 *   tells the model so, and the sender is told (only if the core accepted the message, so a
 *   stranger gets no extra reply).
 * - Not from a person, so never a user, a sender or an approver: linked-channel forwards
 *   (`is_automatic_forward`), messages sent on behalf of a chat (`sender_chat`: channel posts,
 *   anonymous admins) and Telegram's service account (id 777000). Such messages and presses are dropped.
 * - A command addressed to another bot (`/stop@OtherBot`, at the start of the message) is not ours: the
 *   whole message is ignored, in groups and in private chats. Only `/cmd` and `/cmd@<this bot>` count.
 */
import type { Context } from 'grammy';
import { heldConnection } from '../kit/held.js';
import { fallbackLog, prefixedLog, type Adapter, type AdapterSink, type AdapterStartOptions, type HttpRoute, type Log } from '../types.js';
import { createContext } from './context.js';
import { inOrder, registerInbound, trackUpdates } from './inbound.js';
import { registerInteractivity } from './interactivity.js';
import { decodeKey } from './keys.js';
import { createOutput } from './output.js';
import { CHAT_COMMANDS, longPolling, startUp, type WebhookHandler } from './startup.js';
import { openTelegramDirect, telegramUserLabel } from './direct.js';
import { AdapterError } from '../kit/errors.js';

type UserFromGetMe = Context['me'];

export interface TelegramAdapterOptions {
  token: string;
  /** TELEGRAM_API_ROOT; default https://api.telegram.org (no trailing slash needed). */
  apiRoot?: string;
  /** Webhook mode when set: setWebhook(url, secret) at start; mount `httpRoutes()`. */
  webhook?: { url: string; secret: string; path?: string };
  /** Skips getMe at start. */
  botInfo?: UserFromGetMe;
  /** Minimum time between edits of a run's status message; default 1500 ms. */
  statusEditIntervalMs?: number;
  /** Default 5 MB. */
  maxAttachmentBytes?: number;
  /** How often the typing action is repeated while a run works; default 4000 ms. */
  typingIntervalMs?: number;
  /** Waits before the network retries of an outbound call; default [300, 1000]. */
  networkRetryDelaysMs?: number[];
  /** Long-poll timeout in seconds; default 30. */
  pollTimeoutSeconds?: number;
  log?: Log;
  /** The / menu registered with setMyCommands at start; default CHAT_COMMANDS. */
  commands?: ReadonlyArray<{ command: string; description: string }>;
}

/** Telegram only ever contributes its webhook (POST). */
type TelegramHttpRoute = HttpRoute & { method: 'POST' };

export type TelegramAdapter = Adapter & {
  /** Webhook mode: the routes the bot's HTTP server mounts. Empty in polling mode. */
  httpRoutes(): TelegramHttpRoute[];
};

const DEFAULT_API_ROOT = 'https://api.telegram.org';

export function createTelegramAdapter(opts: TelegramAdapterOptions): TelegramAdapter {
  const token = opts.token.trim();
  if (token === '') throw new AdapterError('start_failed', 'TELEGRAM_BOT_TOKEN is empty: set it to the token from @BotFather');
  if (opts.webhook && !/^[A-Za-z0-9_-]{1,256}$/.test(opts.webhook.secret)) {
    throw new AdapterError('start_failed', 'TELEGRAM_WEBHOOK_SECRET must be 1-256 characters of A-Z a-z 0-9 _ - (Telegram rejects others)');
  }
  const log = opts.log ?? prefixedLog(fallbackLog, '[telegram] ');
  const ctx = createContext({
    token,
    apiRoot: (opts.apiRoot ?? DEFAULT_API_ROOT).replace(/\/+$/, ''),
    log,
    botInfo: opts.botInfo,
    networkRetryDelaysMs: opts.networkRetryDelaysMs ?? [300, 1000],
  });
  const { bot, describeError } = ctx;

  // Order matters: every update is counted, then messages queue per chat; presses never queue.
  bot.use(trackUpdates(ctx));
  bot.use(inOrder());
  const output = createOutput(ctx, { statusEditIntervalMs: opts.statusEditIntervalMs ?? 1500, typingIntervalMs: opts.typingIntervalMs ?? 4000 });
  registerInteractivity(bot, ctx);
  registerInbound(bot, ctx, { maxAttachmentBytes: opts.maxAttachmentBytes ?? 5 * 1024 * 1024, postPlain: output.postPlain });
  bot.catch((err) => log('error', `update ${err.ctx.update.update_id} failed: ${describeError(err.error)}`));

  let webhookHandler: WebhookHandler | undefined;
  let started = false;

  const held = opts.webhook ? undefined : heldConnection('Telegram long polling', longPolling(ctx, { pollTimeoutSeconds: opts.pollTimeoutSeconds ?? 30 }));

  async function start(s: AdapterSink, startOpts: AdapterStartOptions = {}): Promise<void> {
    if (started) throw new AdapterError('start_failed', 'the Telegram adapter is already started');
    ctx.sink = s;
    try {
      webhookHandler = await startUp(ctx, { knowsItself: opts.botInfo !== undefined, commands: opts.commands ?? CHAT_COMMANDS, webhook: opts.webhook });
      if (held && startOpts.holdConnection !== false) await held.open();
    } catch (err) {
      ctx.sink = undefined;
      throw err;
    }
    started = true;
    const mode = opts.webhook ? 'webhook' : held?.up ? 'long polling' : 'long polling held by another replica; sending only';
    log('info', `connected as @${bot.botInfo.username} (${mode})`);
  }

  async function stop(): Promise<void> {
    if (!started) return;
    started = false;
    webhookHandler = undefined;
    await held?.close();
    await output.stop();
    ctx.sink = undefined;
  }

  const webhookPath = opts.webhook ? (opts.webhook.path ?? (new URL(opts.webhook.url).pathname || '/telegram')) : '';

  return {
    platform: 'telegram',
    // Answers are sent whole (one message, split only at 4,096 characters); `text` events are ignored.
    streamsText: false,
    start,
    stop,
    ...(held ? { held } : {}),
    render: output.render,
    postCard: output.postCard,
    updateCard: output.updateCard,
    postText: (ref, text) => output.postPlain(ref, text),
    decodeKey,
    openDirect: openTelegramDirect,
    userLabel: (userId) => telegramUserLabel(bot.api, userId),
    httpRoutes(): TelegramHttpRoute[] {
      if (!opts.webhook) return [];
      return [
        {
          method: 'POST',
          path: webhookPath,
          handler: (req, res) => {
            const h = webhookHandler;
            if (!h) {
              res.writeHead(503).end('telegram adapter not started');
              return;
            }
            h(req, res).catch((err: unknown) => {
              log('error', `webhook update failed: ${describeError(err)}`);
              if (!res.headersSent) res.writeHead(500).end();
            });
          },
        },
      ];
    },
  };
}
