/**
 * Slack conversation keys: `slack:<teamId>:<channelId>` for a DM or a channel, and
 * `slack:<teamId>:<channelId>:<threadTs>` for a thread (the bot answers a mention in its thread, and
 * the thread is the conversation).
 *
 * Contract: `decodeKey(refFor(team, channel, thread).key)` deep-equals `refFor(team, channel, thread)`.
 * Team and channel ids are Slack's upper-case ids; a thread is a message ts ("1700000000.123456").
 * A malformed key throws (it never silently maps elsewhere).
 */
import type { ConversationRef } from '../types.js';
import { AdapterError } from '../kit/errors.js';

const KEY_RE = /^slack:([A-Z0-9]+):([A-Z0-9]+)(?::(\d+\.\d+))?$/;

export function refFor(teamId: string, channelId: string, threadTs?: string): ConversationRef {
  const key = `slack:${teamId}:${channelId}${threadTs === undefined ? '' : `:${threadTs}`}`;
  if (!KEY_RE.test(key)) {
    throw new AdapterError(
      'bad_input',
      `invalid Slack team/channel/thread: ${teamId} ${channelId} ${threadTs ?? '-'} (expected ids like T0123 C0123 and a ts like 1700000000.000100)`,
    );
  }
  const ref: ConversationRef = { platform: 'slack', key, channelId, spaceId: teamId };
  if (threadTs !== undefined) ref.threadId = threadTs;
  return ref;
}

export function decodeKey(key: string): ConversationRef {
  const m = KEY_RE.exec(key);
  if (!m || m[1] === undefined || m[2] === undefined) {
    throw new AdapterError('bad_input', `not a Slack conversation key: "${key}" (expected slack:<team>:<channel>[:<thread_ts>])`);
  }
  return refFor(m[1], m[2], m[3]);
}
