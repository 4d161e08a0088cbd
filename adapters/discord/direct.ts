/**
 * A user's direct messages with the bot on Discord (`openDirect`, issue 24's approvalDelivery: dm).
 *
 * Contract: POST /users/@me/channels with the user's id opens (or returns) the bot's DM channel with
 * them; the ref is `discord:dm:<channel id>`, where postCard / updateCard and clicks work as in any
 * DM. A user who shares no server with the bot, or blocks DMs from it, makes Discord refuse (the
 * open, or the post: 50007 "Cannot send messages to this user"); the rejection says which.
 * `discordUserLabel` is GET /users/{id}: `@username` (undefined when Discord will not say).
 */
import { Routes, type REST } from 'discord.js';
import type { ConversationRef } from '../types.js';
import { refFor } from './keys.js';
import { AdapterError } from '../kit/errors.js';

export async function openDiscordDirect(rest: Pick<REST, 'post'>, userId: string): Promise<ConversationRef> {
  if (!/^\d{5,25}$/.test(userId)) throw new AdapterError('bad_input', `not a Discord user id: ${JSON.stringify(userId)}`);
  const channel = (await rest.post(Routes.userChannels(), { body: { recipient_id: userId } })) as { id?: unknown };
  if (typeof channel.id !== 'string') throw new AdapterError('outbound_failed', `Discord opened no DM channel with ${userId}`);
  return refFor('dm', channel.id);
}

export async function discordUserLabel(rest: Pick<REST, 'get'>, userId: string): Promise<string | undefined> {
  if (!/^\d{5,25}$/.test(userId)) return undefined;
  try {
    const user = (await rest.get(Routes.user(userId))) as { username?: unknown };
    return typeof user.username === 'string' && user.username !== '' ? `@${user.username}` : undefined;
  } catch {
    return undefined;
  }
}
