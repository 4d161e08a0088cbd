/**
 * The Telegram adapter (grammy). The only module in the project that imports grammy.
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
import { outboundCaller } from '../kit/outbound.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Api, Bot, GrammyError, HttpError, webhookCallback } from 'grammy';
import type { Context, Transformer } from 'grammy';
import { run, sequentialize } from '@grammyjs/runner';
import type { RunnerHandle } from '@grammyjs/runner';
import type { AgentEvent, Card } from '../../agent/events.js';
import { heldConnection } from '../kit/held.js';
import {
  fallbackLog,
  prefixedLog,
  type Adapter,
  type AdapterSink,
  type AdapterStartOptions,
  type Attachment,
  type ConversationRef,
  type HttpRoute,
  type InboundMessage,
  type Log,
} from '../types.js';
import { cutText, humanSize, overLimit } from '../kit/attachments.js';
import { deliverMessage, readBody, readFiles, withUnreadNotes } from '../kit/inbound.js';
import { deliverClick } from '../kit/clicks.js';
import { composeOutput } from '../kit/compose.js';
import { messageOf } from '../kit/errors.js';
import { ProgressView } from '../kit/progress.js';
import { StatusMessage } from '../kit/status.js';
import type { StatusFailure } from '../kit/status.js';
import { CALLBACK_PREFIX, renderCard } from './cards.js';
import { chunkPlain } from './chunk.js';
import { htmlToPlain, telegramAnswer } from './format.js';
import { addressing, fromAPerson, senderOf, topicOf } from './inbound.js';
import { decodeKey, refFor } from './keys.js';
import { openTelegramDirect } from './direct.js';
import { CONFLICT_MESSAGE, telegramStartError } from './startup.js';

type UserFromGetMe = Context['me'];
type Message = NonNullable<Context['message']>;
type Chat = Message['chat'];

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
export type TelegramHttpRoute = HttpRoute & { method: 'POST' };

/** The chat commands the router understands (bot/router.ts), for Telegram's / menu. */
const CHAT_COMMANDS: ReadonlyArray<{ command: string; description: string }> = [
  { command: 'stop', description: 'Cancel the current run' },
  { command: 'reset', description: 'Start a new conversation' },
  { command: 'id', description: "Show this chat's id and yours" },
  { command: 'help', description: 'What this bot can do and its commands' },
];

export type TelegramAdapter = Adapter & {
  /** Webhook mode: the routes the bot's HTTP server mounts. Empty in polling mode. */
  httpRoutes(): TelegramHttpRoute[];
};

const DEFAULT_API_ROOT = 'https://api.telegram.org';
const MAX_429_RETRIES = 3;
const MAX_RETRY_AFTER_S = 60;

export function createTelegramAdapter(opts: TelegramAdapterOptions): TelegramAdapter {
  const token = opts.token.trim();
  if (token === '') throw new Error('TELEGRAM_BOT_TOKEN is empty: set it to the token from @BotFather');
  const apiRoot = (opts.apiRoot ?? DEFAULT_API_ROOT).replace(/\/+$/, '');
  const log = opts.log ?? prefixedLog(fallbackLog, '[telegram] ');
  const statusInterval = opts.statusEditIntervalMs ?? 1500;
  const maxBytes = opts.maxAttachmentBytes ?? 5 * 1024 * 1024;
  const typingInterval = opts.typingIntervalMs ?? 4000;
  const netDelays = opts.networkRetryDelaysMs ?? [300, 1000];
  const prefix = CALLBACK_PREFIX;
  if (opts.webhook && !/^[A-Za-z0-9_-]{1,256}$/.test(opts.webhook.secret)) {
    throw new Error('TELEGRAM_WEBHOOK_SECRET must be 1-256 characters of A-Z a-z 0-9 _ - (Telegram rejects others)');
  }

  /** The token is in every API URL: keep it out of anything we log or throw. */
  const scrub = (s: string): string => s.split(token).join('<token>');
  const describe = (err: unknown): string => {
    if (err instanceof GrammyError) return scrub(`${err.method}: ${err.error_code} ${err.description}`);
    if (err instanceof HttpError) {
      const inner = messageOf(err.error);
      return scrub(`${err.message} ${inner}`);
    }
    return scrub(messageOf(err));
  };

  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

  let pollFailing = false;
  const retry: Transformer = async (prev, method, payload, signal) => {
    if (method === 'getUpdates') {
      // The runner retries polling itself; we only make failures visible.
      try {
        const res = await prev(method, payload, signal);
        if (res.ok && pollFailing) {
          pollFailing = false;
          log('info', 'polling Telegram again');
        }
        return res;
      } catch (err) {
        if (!signal?.aborted && !pollFailing) {
          pollFailing = true;
          log('warn', `polling Telegram failed, retrying: ${describe(err)}`);
        }
        throw err;
      }
    }
    let limited = 0;
    let failed = 0;
    for (;;) {
      let res;
      try {
        res = await prev(method, payload, signal);
      } catch (err) {
        const wait = netDelays[failed++];
        if (wait === undefined || signal?.aborted) throw err;
        log('warn', `${method} failed (${describe(err)}); retrying in ${wait} ms`);
        await sleep(wait);
        continue;
      }
      if (!res.ok && res.error_code === 429 && limited < MAX_429_RETRIES) {
        const after = res.parameters?.retry_after ?? 1;
        if (after <= MAX_RETRY_AFTER_S) {
          limited++;
          log('warn', `${method} rate-limited by Telegram; retrying after ${after} s`);
          await sleep(after * 1000);
          continue;
        }
      }
      return res;
    }
  };

  const clientOpts = { apiRoot };
  const bot = new Bot(token, { client: clientOpts, ...(opts.botInfo ? { botInfo: opts.botInfo } : {}) });
  bot.api.config.use(retry);
  /** No automatic retries: the status message handles 429 by coalescing, not by replaying. */
  const statusApi = new Api(token, clientOpts);

  let sink: AdapterSink | undefined;
  let runner: RunnerHandle | undefined;
  let webhookHandler: ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | undefined;
  let started = false;
  let lastUpdateId: number | undefined;

  // ---- inbound ------------------------------------------------------------------------------

  bot.use((ctx, next) => {
    lastUpdateId = Math.max(lastUpdateId ?? 0, ctx.update.update_id);
    return next();
  });

  // In order per chat/topic; callback queries are not constrained, so they never wait behind a message.
  bot.use(
    sequentialize((ctx: Context) => {
      const m = ctx.message;
      if (!m) return undefined;
      const topic = topicOf(m);
      return topic === undefined ? String(m.chat.id) : `${m.chat.id}:${topic}`;
    }),
  );

  bot.on('callback_query', async (ctx) => {
    const q = ctx.callbackQuery;
    const answer = async (text: string | undefined) => {
      try {
        await ctx.answerCallbackQuery(text ? { text: cutText(text, 200), show_alert: false } : {});
      } catch (err) {
        log('warn', `answerCallbackQuery failed: ${describe(err)}`);
      }
    };
    // Only a person can approve: the service account never counts (answered, so no spinner stays).
    if (!fromAPerson({ from: q.from })) {
      await answer(undefined);
      return;
    }
    const data = q.data;
    const msg = q.message;
    await deliverClick({
      sink,
      event:
        data?.startsWith(prefix) && data.length > prefix.length && msg !== undefined
          ? () => ({
              platform: 'telegram',
              conversation: refFor(msg.chat.id, 'is_topic_message' in msg ? topicOf(msg) : undefined),
              token: data.slice(prefix.length),
              user: senderOf(q.from),
              eventId: `tg:${ctx.update.update_id}`,
            })
          : undefined,
      notify: answer,
      log,
      describe,
      what: 'a button press',
    });
  });

  bot.on('message', async (ctx) => {
    const m = ctx.message;
    const me = ctx.me;
    if (!m.from || !sink) return;
    if (!fromAPerson(m)) return;
    const addressed = addressing(m, ctx.me);
    if (!addressed) return;
    const { text, mentionsBot, isDirect } = addressed;

    const topic = topicOf(m);
    const reply = m.reply_to_message;
    // In a forum topic every message "replies" to the topic's root message: that is not a reply.
    const repliesToBot = reply !== undefined && reply.from?.id === me.id && !(topic !== undefined && reply.message_id === topic);

    const ref = refFor(m.chat.id, topic);
    const { attachments, refused } = await readAttachments(m);
    if (text.trim() === '' && attachments.length === 0 && refused.length === 0) return; // service message, sticker, …

    const msg: InboundMessage = {
      platform: 'telegram',
      conversation: ref,
      sender: senderOf(m.from),
      text: withUnreadNotes(text, refused),
      attachments,
      isDirect,
      mentionsBot,
      repliesToBot,
      eventId: `tg:${ctx.update.update_id}`,
    };
    await deliverMessage({ sink, msg, refused, reply: (t) => sendPlain(ref, t, m.message_id), log, describe });
  });

  bot.catch((err) => log('error', `update ${err.ctx.update.update_id} failed: ${describe(err.error)}`));

  async function readAttachments(m: Message): Promise<{ attachments: Attachment[]; refused: string[] }> {
    const attachments: Attachment[] = [];
    const refused: string[] = [];
    if (m.photo && m.photo.length > 0) {
      const sizes = [...m.photo].sort((a, b) => a.width * a.height - b.width * b.height);
      const fit = sizes.filter((p) => (p.file_size ?? 0) <= maxBytes).pop();
      const name = `photo_${m.message_id}.jpg`;
      if (!fit) {
        refused.push(overLimit(name, sizes[0]?.file_size ?? 0, maxBytes));
      } else {
        const got = await download(fit.file_id, name);
        if (typeof got === 'string') refused.push(got);
        else attachments.push({ kind: 'image', name, mimeType: 'image/jpeg', data: got.toString('base64') });
      }
    }
    const doc = m.document;
    if (doc) {
      const got = await readFiles(
        [doc],
        maxBytes,
        (d) => ({ name: d.file_name ?? 'document', mimeType: d.mime_type, size: d.file_size }),
        (d, name) => download(d.file_id, name),
      );
      attachments.push(...got.attachments);
      refused.push(...got.refused);
    }
    return { attachments, refused };
  }

  /** The file's bytes, or why it could not be read (for the user and the model). */
  async function download(fileId: string, name: string): Promise<Buffer | string> {
    try {
      const file = await bot.api.getFile(fileId);
      if (!file.file_path) return `${name} could not be downloaded from Telegram`;
      if (file.file_size !== undefined && file.file_size > maxBytes) {
        return overLimit(name, file.file_size, maxBytes);
      }
      const res = await fetch(`${apiRoot}/file/bot${token}/${file.file_path}`, { signal: AbortSignal.timeout(60_000) });
      if (!res.ok || !res.body) {
        await res.body?.cancel();
        log('warn', `file download for ${name} failed: HTTP ${res.status}`);
        return `${name} could not be downloaded from Telegram`;
      }
      const got = await readBody(res.body as AsyncIterable<Uint8Array>, maxBytes);
      return Buffer.isBuffer(got) ? got : `${name} is over the limit of ${humanSize(maxBytes)}`;
    } catch (err) {
      log('warn', `file download for ${name} failed: ${describe(err)}`);
      return `${name} could not be downloaded from Telegram`;
    }
  }

  // ---- outbound -----------------------------------------------------------------------------

  const chatOf = (ref: ConversationRef): number => {
    const id = Number(ref.channelId);
    if (!Number.isSafeInteger(id)) throw new Error(`not a Telegram chat id: "${ref.channelId}" (conversation ${ref.key})`);
    return id;
  };
  const threadOpts = (ref: ConversationRef) => (ref.threadId !== undefined ? { message_thread_id: Number(ref.threadId) } : {});
  const replyOpts = (replyTo: number | undefined) =>
    replyTo !== undefined ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {};

  const isParseError = (err: unknown) => err instanceof GrammyError && err.error_code === 400 && /can't parse entities/i.test(err.description);
  const isNotModified = (err: unknown) => err instanceof GrammyError && err.error_code === 400 && /message is not modified/i.test(err.description);

  // A network error's cause can hold the request URL, and the token is in it: keep only the scrubbed text.
  const outbound = outboundCaller(log, describe, (err) => (err instanceof HttpError ? new Error(describe(err)) : err));

  async function sendPlain(ref: ConversationRef, text: string, replyTo?: number): Promise<void> {
    let first = true;
    for (const piece of chunkPlain(text)) {
      await outbound('sendMessage', ref, () => bot.api.sendMessage(chatOf(ref), piece, { ...threadOpts(ref), ...(first ? replyOpts(replyTo) : {}) }));
      first = false;
    }
  }

  /** Sends one HTML message; if Telegram refuses the formatting, the same text goes out plain. */
  async function sendHtml(ref: ConversationRef, html: string, extra: Record<string, unknown> = {}): Promise<{ message_id: number }> {
    try {
      return await bot.api.sendMessage(chatOf(ref), html, { parse_mode: 'HTML', ...threadOpts(ref), ...extra });
    } catch (err) {
      if (!isParseError(err)) throw err;
      log('warn', `Telegram refused the formatting (${describe(err)}); sending it as plain text`);
      return await bot.api.sendMessage(chatOf(ref), htmlToPlain(html), { ...threadOpts(ref), ...extra });
    }
  }

  const classify = (err: unknown): StatusFailure => {
    if (err instanceof GrammyError && err.error_code === 429) {
      return { kind: 'retry', afterMs: (err.parameters.retry_after ?? 1) * 1000 };
    }
    if (err instanceof HttpError) return { kind: 'retry', afterMs: statusInterval };
    if (isNotModified(err)) return { kind: 'not_modified' };
    return { kind: 'fatal' };
  };

  const progress = new ProgressView({
    createStatus: (ref) =>
      new StatusMessage(
        {
          send: async (text) => {
            const m = await statusApi.sendMessage(chatOf(ref), text, { ...threadOpts(ref), disable_notification: true });
            return String(m.message_id);
          },
          edit: async (id, text) => {
            await statusApi.editMessageText(chatOf(ref), Number(id), text);
          },
          remove: async (id) => {
            await bot.api.deleteMessage(chatOf(ref), Number(id));
          },
        },
        { intervalMs: statusInterval, classify, log, describe, platformName: 'Telegram' },
      ),
    typing: (ref) => {
      bot.api.sendChatAction(chatOf(ref), 'typing', threadOpts(ref)).catch((err: unknown) => {
        log('warn', `sendChatAction in ${ref.key} failed: ${describe(err)}`);
      });
    },
    typingIntervalMs: typingInterval,
  });

  const { render, postCard, updateCard } = composeOutput({
    platformName: 'Telegram',
    outbound,
    progress,
    answerPieces: telegramAnswer,
    sendAnswer: (ref, piece) => sendHtml(ref, piece),
    postPlain: sendPlain,
    renderCard: (card) => renderCard(card, { prefix }),
    sendLead: (ref, lead) => sendHtml(ref, lead),
    sendCard: async (ref, r) => String((await sendHtml(ref, r.html, r.keyboard ? { reply_markup: r.keyboard } : {})).message_id),
    isHandle: (handle) => Number.isSafeInteger(Number(handle)),
    handleKind: 'a message id',
    editCard: async (ref, handle, r) => {
      const markup = r.keyboard ?? { inline_keyboard: [] };
      const edit = (text: string, html: boolean) =>
        bot.api.editMessageText(chatOf(ref), Number(handle), text, { ...(html ? { parse_mode: 'HTML' as const } : {}), reply_markup: markup });
      try {
        await edit(r.html, true);
      } catch (err) {
        if (isNotModified(err)) return;
        if (!isParseError(err)) throw err;
        try {
          await edit(htmlToPlain(r.html), false);
        } catch (err2) {
          if (!isNotModified(err2)) throw err2;
        }
      }
    },
  });

  // ---- lifecycle ----------------------------------------------------------------------------

  const startError = (err: unknown) => telegramStartError(err, { apiRoot, scrub, describe });

  /** Long polling: the connection only one process may hold per token (a second poller gets 409). */
  async function openPolling(): Promise<void> {
    try {
      await bot.api.deleteWebhook();
      // A quick probe, so a second poller makes the open fail instead of a log line later.
      await bot.api.getUpdates({ timeout: 0, limit: 1 });
    } catch (err) {
      throw startError(err);
    }
    // No offset: Telegram hands out every update not yet confirmed, including those a poller that
    // died had fetched; the router's event ledger (shared by replicas) drops the ones it handled.
    const r = run(bot, {
      runner: {
        fetch: { timeout: opts.pollTimeoutSeconds ?? 30, allowed_updates: ['message', 'callback_query'] },
        silent: true,
      },
    });
    runner = r;
    r.task()?.catch((err: unknown) => {
      const conflict = err instanceof GrammyError && err.error_code === 409;
      log('error', conflict ? `polling stopped: ${CONFLICT_MESSAGE}` : `polling stopped: ${startError(err).message}`);
    });
  }

  async function closePolling(): Promise<void> {
    const r = runner;
    runner = undefined;
    if (!r) return;
    try {
      await r.stop();
    } catch {
      // already logged by the task handler
    }
    // Confirm what was handled, so the next poller (a restart, another replica) does not get it again.
    if (lastUpdateId !== undefined) {
      await bot.api.getUpdates({ offset: lastUpdateId + 1, limit: 1, timeout: 0 }).catch(() => undefined);
    }
  }

  const held = opts.webhook
    ? undefined
    : heldConnection('Telegram long polling', { open: openPolling, close: closePolling, up: () => runner?.isRunning() ?? false });

  async function start(s: AdapterSink, startOpts: AdapterStartOptions = {}): Promise<void> {
    if (started) throw new Error('the Telegram adapter is already started');
    sink = s;
    try {
      if (!opts.botInfo) bot.botInfo = await bot.api.getMe();
      // Fills the / menu. A refusal costs only the menu, so it is a warning, not a failed start.
      try {
        await bot.api.setMyCommands([...(opts.commands ?? CHAT_COMMANDS)]);
      } catch (err) {
        log('warn', `could not register the / menu (setMyCommands): ${describe(err)}`);
      }
      if (opts.webhook) {
        const { url, secret } = opts.webhook;
        await bot.api.setWebhook(url, { secret_token: secret, allowed_updates: ['message', 'callback_query'] });
        webhookHandler = webhookCallback(bot, 'http', {
          secretToken: secret,
          onTimeout: 'return', // answer Telegram; the handler keeps going
          timeoutMilliseconds: 8000,
        });
      }
    } catch (err) {
      sink = undefined;
      throw startError(err);
    }
    if (held && startOpts.holdConnection !== false) {
      try {
        await held.open();
      } catch (err) {
        sink = undefined;
        throw err;
      }
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
    await progress.stopAll();
    sink = undefined;
  }

  const webhookPath = opts.webhook ? (opts.webhook.path ?? (new URL(opts.webhook.url).pathname || '/telegram')) : '';

  return {
    platform: 'telegram',
    // Answers are sent whole (one message, split only at 4,096 characters); `text` events are ignored.
    streamsText: false,
    start,
    stop,
    ...(held ? { held } : {}),
    render,
    postCard,
    updateCard,
    postText: (ref, text) => sendPlain(ref, text),
    decodeKey,
    openDirect: openTelegramDirect,
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
              log('error', `webhook update failed: ${describe(err)}`);
              if (!res.headersSent) res.writeHead(500).end();
            });
          },
        },
      ];
    },
  };
}
