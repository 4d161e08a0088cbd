/**
 * A user's direct messages with the bot on Telegram (`openDirect`): the private chat whose id is the
 * user's id.
 *
 * Contract: resolves the ref of that chat without a call (Telegram has no "open" step). Whether the
 * bot may write there shows when the card is posted: a user who never started the bot makes
 * sendMessage fail with 403 "bot can't initiate conversation with a user", which postCard reports.
 */
import type { ConversationRef } from '../types.js';
import { refFor } from './keys.js';

export async function openTelegramDirect(userId: string): Promise<ConversationRef> {
  if (!/^[1-9]\d*$/.test(userId)) throw new Error(`not a Telegram user id: ${JSON.stringify(userId)} (a private chat needs a positive integer)`);
  return refFor(userId);
}
