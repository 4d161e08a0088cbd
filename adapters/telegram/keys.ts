/**
 * Telegram conversation keys: `telegram:<chatId>` for a chat, `telegram:<chatId>:<topicId>` for a
 * forum topic (a topic is its own conversation, with its own transcript and run lane).
 *
 * Contract: `decodeKey(refFor(chat, topic).key)` deep-equals `refFor(chat, topic)`. Chat ids are
 * integers and may be negative (groups, supergroups: -100…); topic ids are positive integers.
 * `spaceId` is never set for Telegram. A malformed key throws (it never silently maps elsewhere).
 */
import { conversationRef, matchKey } from '../kit/keys.js';
import type { ConversationRef } from '../types.js';
import { AdapterError } from '../kit/errors.js';

const KEY_RE = /^telegram:(-?[1-9]\d*)(?::([1-9]\d*))?$/;

/** The ref for a chat, or for a forum topic inside it. */
export function refFor(chatId: number | string, topicId?: number | string): ConversationRef {
  const channelId = String(chatId);
  const threadId = topicId === undefined ? undefined : String(topicId);
  const key = `telegram:${channelId}${threadId === undefined ? '' : `:${threadId}`}`;
  if (!KEY_RE.test(key)) {
    throw new AdapterError('bad_input', `invalid Telegram chat/topic id: chat ${channelId}, topic ${threadId ?? '-'} (expected integers)`);
  }
  return conversationRef('telegram', key, channelId, { threadId });
}

export function encodeKey(chatId: number | string, topicId?: number | string): string {
  return refFor(chatId, topicId).key;
}

export function decodeKey(key: string): ConversationRef {
  const m = matchKey(KEY_RE, key, 'Telegram', 'telegram:<chatId>[:<topicId>]');
  return refFor(m[1], m[2]);
}
