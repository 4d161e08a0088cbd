/**
 * Clicks on cards (buttons and string selects) -> the core.
 *
 * Contract:
 * - Every click is acknowledged first with deferUpdate (Discord wants it within 3 s); the card itself
 *   is edited later through the broker (updateCard). A click whose ack fails is dropped (logged).
 * - The token passed on is the component's (components.ts `tokenOf`: the custom_id's or the selected
 *   option's) exactly; a click with no token or outside a conversation reaches the kit as not valid.
 *   The conversation is the card's (its thread when in one); the event id `discord:action:<id>`.
 * - The clicker's roles come from the interaction's member (none in a DM). The result's notice goes
 *   to the clicker only, as an ephemeral follow-up with no allowed mentions.
 */
import { type ButtonInteraction, MessageFlags, type StringSelectMenuInteraction } from 'discord.js';
import { cutText } from '../kit/attachments.js';
import { deliverClick } from '../kit/clicks.js';
import { tokenOf } from './components.js';
import { type DiscordContext, NO_MENTIONS, refOfInteraction, senderOfInteraction } from './context.js';
import { DISCORD_TEXT_LIMIT, escapeDiscord } from './markdown.js';

export function createInteractivity(ctx: DiscordContext): { onComponent(i: ButtonInteraction | StringSelectMenuInteraction): Promise<void> } {
  const { log, describeError } = ctx;

  async function onComponent(i: ButtonInteraction | StringSelectMenuInteraction): Promise<void> {
    const values = i.isStringSelectMenu() ? i.values : undefined;
    const tok = tokenOf(i.customId, values);
    const notify = async (text: string) => {
      try {
        await i.followUp({ content: cutText(escapeDiscord(text), DISCORD_TEXT_LIMIT), flags: MessageFlags.Ephemeral, allowedMentions: NO_MENTIONS });
      } catch (err) {
        log('warn', `could not tell ${i.user.id} privately: ${describeError(err)}`);
      }
    };
    try {
      // ack first: Discord wants it within 3 s; the card itself is edited through the broker
      await i.deferUpdate();
    } catch (err) {
      log('warn', `could not acknowledge a click: ${describeError(err)}`);
      return;
    }
    const ref = refOfInteraction(i);
    await deliverClick({
      sink: ctx.sink,
      event:
        ref && tok !== undefined && tok !== ''
          ? () => ({ platform: 'discord', conversation: ref, token: tok, user: senderOfInteraction(i), eventId: `discord:action:${i.id}` })
          : undefined,
      notify: async (text) => {
        if (text) await notify(text);
      },
      log,
      describeError,
    });
  }

  return { onComponent };
}
