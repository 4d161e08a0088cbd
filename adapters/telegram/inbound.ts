/**
 * Telegram -> the core: messages, their photos and documents, in order per chat.
 *
 * Contract:
 * - `trackUpdates(ctx)` and `inOrder()` go first on the bot: the one records the highest update id (for
 *   the offset confirmed when polling closes), the other makes messages of one chat (and forum
 *   topic) run one after another while chats run concurrently; callback queries are not queued, so
 *   a button press never waits behind a message.
 * - `registerInbound`: a message reaches the core when it is from a person and addressed to us (see
 *   below), with its text (or caption) and attachments; an empty one (a sticker, a service message)
 *   is dropped. In a forum topic the reply to the topic's root is not a reply to the bot.
 * - Attachments: a photo -> image (the largest size within `maxAttachmentBytes`), a document -> text
 *   or image by MIME type/extension (kit readFiles). One that cannot be read is not downloaded; the
 *   text tells the model, and the sender hears it only if the core accepted the message (kit
 *   deliverMessage). A download goes through `<apiRoot>/file/bot<token>/…`, stops at the limit and
 *   never logs the token.
 * - `fromAPerson`: false for linked-channel forwards (`is_automatic_forward`), posts on behalf of a
 *   chat (`sender_chat`) and Telegram's service account (777000): never a user, sender or approver.
 * - `topicOf`: the forum topic of a topic message, else undefined (a plain reply is not a topic).
 * - `addressing(m, me)`: undefined when a leading command is for another bot (`/stop@OtherBot`: the
 *   whole message is not ours); else the text with our own `@name` taken off a leading command, and
 *   whether the bot is mentioned (`@name`, a text mention of it, `/cmd@name`, or any `/cmd` in a DM).
 */
import { sequentialize } from '@grammyjs/runner';
import type { Bot, Context, MiddlewareFn } from 'grammy';
import { humanSize, overLimit } from '../kit/attachments.js';
import { deliverMessage, readBody, readFiles, withUnreadNotes } from '../kit/inbound.js';
import type { Attachment, ConversationRef, InboundMessage, Sender } from '../types.js';
import type { TelegramContext } from './context.js';
import { refFor } from './keys.js';

type Message = NonNullable<Context['message']>;
type User = NonNullable<Message['from']>;

/** "Telegram": the service account linked-channel forwards and notifications arrive from. */
const TELEGRAM_SERVICE_USER_ID = 777000;

export const topicOf = (msg: Pick<Message, 'is_topic_message' | 'message_thread_id'>): number | undefined =>
  msg.is_topic_message === true && msg.message_thread_id !== undefined ? msg.message_thread_id : undefined;

/** Channel forwards, posts on behalf of a chat and Telegram's service account are not people. */
export const fromAPerson = (m: Partial<Pick<Message, 'from' | 'sender_chat' | 'is_automatic_forward'>>): boolean =>
  m.from !== undefined && m.from.id !== TELEGRAM_SERVICE_USER_ID && m.sender_chat === undefined && m.is_automatic_forward !== true;

export const senderOf = (u: User): Sender => {
  const name = [u.first_name, u.last_name].filter(Boolean).join(' ') || (u.username ? `@${u.username}` : undefined);
  const s: Sender = { id: String(u.id), isBot: u.is_bot };
  if (name) s.name = name;
  return s;
};

function addressing(m: Message, me: Context['me']): { text: string; mentionsBot: boolean; isDirect: boolean } | undefined {
  const rawText = m.text ?? m.caption ?? '';
  const entities = m.entities ?? m.caption_entities ?? [];
  const isDirect = m.chat.type === 'private';
  const myName = `@${me.username}`.toLowerCase();

  let mentionsBot = false;
  let text = rawText;
  for (const e of entities) {
    const part = rawText.slice(e.offset, e.offset + e.length);
    if (e.type === 'mention' && part.toLowerCase() === myName) mentionsBot = true;
    if (e.type === 'text_mention' && e.user?.id === me.id) mentionsBot = true;
    if (e.type === 'bot_command') {
      const at = part.indexOf('@');
      if (at >= 0 && part.slice(at).toLowerCase() === myName) mentionsBot = true;
      if (at < 0 && isDirect) mentionsBot = true;
    }
  }
  // "/stop@MyBot x" -> "/stop x" (only our own name; a command for another bot stays as is).
  const first = entities.find((e) => e.type === 'bot_command' && e.offset === 0);
  if (first) {
    const cmd = rawText.slice(0, first.length);
    const at = cmd.indexOf('@');
    if (at >= 0) {
      // Addressed to another bot: not a message for us at all.
      if (cmd.slice(at).toLowerCase() !== myName) return undefined;
      text = cmd.slice(0, at) + rawText.slice(first.length);
    }
  }
  return { text, mentionsBot, isDirect };
}

/** Records the highest update id seen (confirmed to Telegram when polling closes). */
export const trackUpdates =
  (ctx: TelegramContext): MiddlewareFn<Context> =>
  (c, next) => {
    ctx.lastUpdateId = Math.max(ctx.lastUpdateId ?? 0, c.update.update_id);
    return next();
  };

/** In order per chat/topic; callback queries are not constrained, so they never wait behind a message. */
export const inOrder = (): MiddlewareFn<Context> =>
  sequentialize((c: Context) => {
    const m = c.message;
    if (!m) return undefined;
    const topic = topicOf(m);
    return topic === undefined ? String(m.chat.id) : `${m.chat.id}:${topic}`;
  });

export interface InboundOptions {
  maxAttachmentBytes: number;
  /** Plain text to a conversation, the first piece replying to `replyTo` (output.ts). */
  postPlain: (ref: ConversationRef, text: string, replyTo?: number) => Promise<void>;
}

export function registerInbound(bot: Bot, ctx: TelegramContext, opts: InboundOptions): void {
  const { log, describeError } = ctx;
  const maxBytes = opts.maxAttachmentBytes;

  bot.on('message', async (c) => {
    const m = c.message;
    const me = c.me;
    if (!m.from || !ctx.sink) return;
    if (!fromAPerson(m)) return;
    const addressed = addressing(m, c.me);
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
      eventId: `tg:${c.update.update_id}`,
    };
    // Read again: the adapter may have stopped while the files were downloading.
    const sink = ctx.sink;
    if (!sink) return;
    await deliverMessage({ sink, msg, refused, reply: (t) => opts.postPlain(ref, t, m.message_id), log, describeError });
  });

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
      const res = await fetch(`${ctx.apiRoot}/file/bot${ctx.token}/${file.file_path}`, { signal: AbortSignal.timeout(60_000) });
      if (!res.ok || !res.body) {
        await res.body?.cancel();
        log('warn', `file download for ${name} failed: HTTP ${res.status}`);
        return `${name} could not be downloaded from Telegram`;
      }
      const got = await readBody(res.body as AsyncIterable<Uint8Array>, maxBytes);
      return Buffer.isBuffer(got) ? got : `${name} is over the limit of ${humanSize(maxBytes)}`;
    } catch (err) {
      log('warn', `file download for ${name} failed: ${describeError(err)}`);
      return `${name} could not be downloaded from Telegram`;
    }
  }
}
