/**
 * The core -> Telegram: answers, replies, the progress status message and typing, cards.
 *
 * Contract:
 * - Answers: Telegram HTML cut on the markdown tree (format.ts) into messages of at most 4,096
 *   visible characters, sent whole (no streamed text), in the conversation's forum topic when it has
 *   one. If Telegram refuses the formatting ("can't parse entities"), the same text goes out plain.
 * - Replies and errors (`postPlain`): plain text in pieces of at most 4,096 characters; the first
 *   piece replies to `replyTo` when given (and is sent even when that message is gone).
 * - Progress: one status message per run (kit StatusMessage, sent silently), edits throttled to
 *   `statusEditIntervalMs`; a 429 is not replayed but coalesced (the next edit after retry_after),
 *   "message is not modified" is no failure. Typing is repeated every `typingIntervalMs`.
 * - Cards: HTML with an inline keyboard (cards.ts), an over-long body's head first as lead messages;
 *   updateCard edits the card in place by its message id (a decided card loses its keyboard), plain
 *   if the formatting is refused; "not modified" is success.
 * - Every failed call is an AdapterError naming the call and the conversation; its cause is the
 *   scrubbed text of a network error (whose cause holds the URL, with the token in it).
 */
import { GrammyError, HttpError } from 'grammy';
import type { AgentEvent, Card } from '../../agent/events.js';
import { composeOutput } from '../kit/compose.js';
import { outboundCaller } from '../kit/outbound.js';
import { ProgressView } from '../kit/progress.js';
import { StatusMessage, type StatusFailure } from '../kit/status.js';
import type { ConversationRef } from '../types.js';
import { CALLBACK_PREFIX, renderCard } from './cards.js';
import { chunkPlain } from './chunk.js';
import type { TelegramContext } from './context.js';
import { htmlToPlain, telegramAnswer } from './format.js';
import { AdapterError } from '../kit/errors.js';

export interface TelegramOutput {
  render(ref: ConversationRef, event: AgentEvent): Promise<void>;
  postPlain(ref: ConversationRef, text: string, replyTo?: number): Promise<void>;
  postCard(ref: ConversationRef, card: Card): Promise<string>;
  updateCard(ref: ConversationRef, handle: string, card: Card): Promise<void>;
  stop(): Promise<void>;
}

export interface OutputOptions {
  statusEditIntervalMs: number;
  typingIntervalMs: number;
}

const chatOf = (ref: ConversationRef): number => {
  const id = Number(ref.channelId);
  if (!Number.isSafeInteger(id)) throw new AdapterError('bad_input', `not a Telegram chat id: "${ref.channelId}" (conversation ${ref.key})`);
  return id;
};
const threadOpts = (ref: ConversationRef) => (ref.threadId !== undefined ? { message_thread_id: Number(ref.threadId) } : {});
const replyOpts = (replyTo: number | undefined) =>
  replyTo !== undefined ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {};

const isParseError = (err: unknown) => err instanceof GrammyError && err.error_code === 400 && /can't parse entities/i.test(err.description);
const isNotModified = (err: unknown) => err instanceof GrammyError && err.error_code === 400 && /message is not modified/i.test(err.description);

export function createOutput(ctx: TelegramContext, opts: OutputOptions): TelegramOutput {
  const { bot, statusApi, log, describeError } = ctx;

  // A network error's cause can hold the request URL, and the token is in it: keep only the scrubbed text.
  const outbound = outboundCaller(log, describeError, (err) => (err instanceof HttpError ? new Error(describeError(err)) : err));

  async function postPlain(ref: ConversationRef, text: string, replyTo?: number): Promise<void> {
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
      log('warn', `Telegram refused the formatting (${describeError(err)}); sending it as plain text`);
      return await bot.api.sendMessage(chatOf(ref), htmlToPlain(html), { ...threadOpts(ref), ...extra });
    }
  }

  const classify = (err: unknown): StatusFailure => {
    if (err instanceof GrammyError && err.error_code === 429) {
      return { kind: 'retry', afterMs: (err.parameters.retry_after ?? 1) * 1000 };
    }
    if (err instanceof HttpError) return { kind: 'retry', afterMs: opts.statusEditIntervalMs };
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
        { intervalMs: opts.statusEditIntervalMs, classify, log, describeError, platformName: 'Telegram' },
      ),
    typing: (ref) => {
      bot.api.sendChatAction(chatOf(ref), 'typing', threadOpts(ref)).catch((err: unknown) => {
        log('warn', `sendChatAction in ${ref.key} failed: ${describeError(err)}`);
      });
    },
    typingIntervalMs: opts.typingIntervalMs,
  });

  const { render, postCard, updateCard } = composeOutput({
    platformName: 'Telegram',
    outbound,
    progress,
    answerPieces: telegramAnswer,
    sendAnswer: (ref, piece) => sendHtml(ref, piece),
    postPlain,
    renderCard: (card) => renderCard(card, { prefix: CALLBACK_PREFIX }),
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

  return { render, postPlain, postCard, updateCard, stop: () => progress.stopAll() };
}
