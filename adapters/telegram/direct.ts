/**
 * A user's direct messages with the bot on Telegram (`openDirect`): the private chat whose id is the
 * user's id.
 *
 * Contract: resolves the ref of that chat without a call (Telegram has no "open" step). Whether the
 * bot may write there shows when the card is posted: a user who never started the bot makes
 * sendMessage fail with 403 "bot can't initiate conversation with a user", which postCard reports.
 * `telegramUserLabel` is getChat on that private chat: `@username`, else the first and last name;
 * undefined when Telegram will not say (a user who never wrote to the bot: "chat not found").
 */
import type { Api } from 'grammy';
import type { ConversationRef } from '../types.js';
import { refFor } from './keys.js';
import { AdapterError } from '../kit/errors.js';

export async function openTelegramDirect(userId: string): Promise<ConversationRef> {
  if (!/^[1-9]\d*$/.test(userId))
    throw new AdapterError('bad_input', `not a Telegram user id: ${JSON.stringify(userId)} (a private chat needs a positive integer)`);
  return refFor(userId);
}

export async function telegramUserLabel(api: Pick<Api, 'getChat'>, userId: string): Promise<string | undefined> {
  if (!/^[1-9]\d*$/.test(userId)) return undefined;
  try {
    const chat = (await api.getChat(Number(userId))) as { type?: string; username?: string; first_name?: string; last_name?: string };
    if (chat.type !== 'private') return undefined;
    if (chat.username) return `@${chat.username}`;
    const name = [chat.first_name, chat.last_name].filter(Boolean).join(' ').trim();
    return name === '' ? undefined : name;
  } catch {
    return undefined;
  }
}
