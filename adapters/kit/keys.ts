/**
 * The pieces every adapter's conversation-key codec (adapters/<platform>/keys.ts) is made of.
 *
 * Contract:
 * - `conversationRef(platform, key, channelId, { spaceId, threadId })`: the ref with `spaceId` and
 *   `threadId` present only when given, so a decoded key deep-equals the ref it was made from.
 * - `matchKey(pattern, key, name, form)`: the pattern's captures, the first one always set; a key
 *   that does not match throws `not a <name> conversation key: "<key>" (expected <form>)` (a
 *   malformed key never silently maps to another conversation).
 */
import type { ConversationRef, Platform } from '../types.js';
import { AdapterError } from './errors.js';

export function conversationRef(
  platform: Platform,
  key: string,
  channelId: string,
  ids: { spaceId?: string | undefined; threadId?: string | undefined } = {},
): ConversationRef {
  const ref: ConversationRef = { platform, key, channelId };
  if (ids.spaceId !== undefined) ref.spaceId = ids.spaceId;
  if (ids.threadId !== undefined) ref.threadId = ids.threadId;
  return ref;
}

export function matchKey(pattern: RegExp, key: string, name: string, form: string): RegExpExecArray & { 1: string } {
  const m = pattern.exec(key);
  if (!m || m[1] === undefined) throw new AdapterError('bad_input', `not a ${name} conversation key: "${key}" (expected ${form})`);
  return m as RegExpExecArray & { 1: string };
}
