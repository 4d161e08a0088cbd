/**
 * Discord conversation keys: `discord:dm:<channel>` for a DM, `discord:<guild>:<channel>` for a
 * server channel, `discord:<guild>:<channel>:<thread>` for a thread (a mention in a text channel is
 * answered in a thread started from that message; the thread is the conversation).
 *
 * Contract: `decodeKey(refFor(guild, channel, thread).key)` deep-equals `refFor(guild, channel,
 * thread)`. Ids are snowflakes (digits); a DM has no thread. A malformed key throws.
 */
import type { ConversationRef } from '../types.js';
import { AdapterError } from '../kit/errors.js';

const KEY_RE = /^discord:(dm|\d+):(\d+)(?::(\d+))?$/;

export function refFor(guildId: string, channelId: string, threadId?: string): ConversationRef {
  const key = `discord:${guildId}:${channelId}${threadId === undefined ? '' : `:${threadId}`}`;
  const m = KEY_RE.exec(key);
  if (!m || (guildId === 'dm' && threadId !== undefined)) {
    throw new AdapterError(
      'bad_input',
      `invalid Discord guild/channel/thread: ${guildId} ${channelId} ${threadId ?? '-'} (expected "dm" or a server id, then snowflake ids)`,
    );
  }
  const ref: ConversationRef = { platform: 'discord', key, channelId, spaceId: guildId };
  if (threadId !== undefined) ref.threadId = threadId;
  return ref;
}

export function decodeKey(key: string): ConversationRef {
  const m = KEY_RE.exec(key);
  if (!m || m[1] === undefined || m[2] === undefined) {
    throw new AdapterError('bad_input', `not a Discord conversation key: "${key}" (expected discord:<guild|dm>:<channel>[:<thread>])`);
  }
  return refFor(m[1], m[2], m[3]);
}

/** The channel a message goes to: the thread when there is one (threads are channels on Discord). */
export function targetChannel(ref: ConversationRef): string {
  return ref.threadId ?? ref.channelId;
}
