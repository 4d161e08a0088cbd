/**
 * Button presses on cards (callback queries) -> the core.
 *
 * Contract:
 * - Every callback query is answered (no spinner stays on the button): with the core's notice (cut
 *   to Telegram's 200 characters, not an alert), "no longer valid" for data that is not ours, a press
 *   on a message Telegram no longer gives or one before start, "something went wrong" when the core
 *   failed (logged), or nothing (kit/clicks.ts).
 * - A press not from a person (Telegram's service account, inbound.ts `fromAPerson`) is answered and
 *   dropped: it never approves anything.
 * - The token passed on is the callback data after CALLBACK_PREFIX exactly; the conversation is the
 *   card's chat (and forum topic); the event id is the update's, so a repeated delivery is dropped by
 *   the core.
 */
import type { Bot } from 'grammy';
import { cutText } from '../kit/attachments.js';
import { deliverClick } from '../kit/clicks.js';
import { CALLBACK_PREFIX } from './cards.js';
import type { TelegramContext } from './context.js';
import { fromAPerson, senderOf, topicOf } from './inbound.js';
import { refFor } from './keys.js';

export function registerInteractivity(bot: Bot, ctx: TelegramContext): void {
  const { log, describeError } = ctx;
  const prefix = CALLBACK_PREFIX;
  bot.on('callback_query', async (c) => {
    const q = c.callbackQuery;
    const answer = async (text: string | undefined) => {
      try {
        await c.answerCallbackQuery(text ? { text: cutText(text, 200), show_alert: false } : {});
      } catch (err) {
        log('warn', `answerCallbackQuery failed: ${describeError(err)}`);
      }
    };
    // Only a person can approve: the service account never counts (answered, so no spinner stays).
    if (!fromAPerson({ from: q.from })) {
      await answer(undefined);
      return;
    }
    const data = q.data;
    const msg = q.message;
    await deliverClick({
      sink: ctx.sink,
      event:
        data?.startsWith(prefix) && data.length > prefix.length && msg !== undefined
          ? () => ({
              platform: 'telegram',
              conversation: refFor(msg.chat.id, 'is_topic_message' in msg ? topicOf(msg) : undefined),
              token: data.slice(prefix.length),
              user: senderOf(q.from),
              eventId: `tg:${c.update.update_id}`,
            })
          : undefined,
      notify: answer,
      log,
      describeError,
      what: 'a button press',
    });
  });
}
