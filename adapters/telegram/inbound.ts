/**
 * Telegram -> the core: who sent an update, where it belongs, and whether it is addressed to the bot.
 * Pure functions over grammy's types; the handlers that call them live in adapter.ts.
 *
 * Contract:
 * - `fromAPerson`: false for linked-channel forwards (`is_automatic_forward`), posts on behalf of a
 *   chat (`sender_chat`) and Telegram's service account (777000): never a user, sender or approver.
 * - `topicOf`: the forum topic of a topic message, else undefined (a plain reply is not a topic).
 * - `addressing(m, me)`: undefined when a leading command is for another bot (`/stop@OtherBot`: the
 *   whole message is not ours); else the text with our own `@name` taken off a leading command, and
 *   whether the bot is mentioned (`@name`, a text mention of it, `/cmd@name`, or any `/cmd` in a DM).
 */
import type { Context } from 'grammy';
import type { Sender } from '../types.js';

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

export function addressing(m: Message, me: Context['me']): { text: string; mentionsBot: boolean; isDirect: boolean } | undefined {
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
