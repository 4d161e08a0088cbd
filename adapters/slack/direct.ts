/**
 * Slack cards outside the conversation's shared view (issue 24's approvalDelivery): a user's direct
 * messages (`openDirect`: conversations.open) and ephemeral cards only one user sees
 * (`postEphemeralCard`: chat.postEphemeral).
 *
 * Contract:
 * - openDirect: the ref of the bot's DM channel with the user (conversations.open, `im:write`); a
 *   Slack error (user_not_found, missing scope) rejects with its code.
 * - An ephemeral card's handle is `eph:<message_ts>`. Slack lets no API call edit an ephemeral
 *   message; only a click's response_url (Bolt's `respond`) may replace it. So the interactivity
 *   handler hands each click on an ephemeral card to `clicked` before the core hears of it, and
 *   `update` replaces the card through that click's `respond` (replace_original). Without one (an
 *   expiry, a decision made elsewhere) `update` rejects (the broker logs it): the card keeps its
 *   buttons, and a later click on it gets the "already decided" or "expired" notice privately.
 */
import type { Card } from '../../agent/events.js';
import type { ConversationRef } from '../types.js';
import { renderSlackCard } from './blocks.js';
import { RecentMap, type SlackContext } from './context.js';
import { refFor } from './keys.js';

const EPHEMERAL = 'eph:';

/** Bolt's `respond` for one click: posts to the click's response_url. */
export type Respond = (message: { replace_original: boolean; text: string; blocks: unknown[] }) => Promise<unknown>;

export class SlackDirect {
  private readonly responders = new RecentMap<Respond>(1000);

  constructor(private readonly ctx: SlackContext) {}

  async openDirect(userId: string): Promise<ConversationRef> {
    const r = await this.ctx.web.conversations.open({ users: userId });
    const channel = r.channel?.id;
    if (!channel) throw new Error(`conversations.open for ${userId} returned no channel`);
    return refFor(this.ctx.identity.teamId, channel);
  }

  async postEphemeralCard(ref: ConversationRef, userId: string, card: Card): Promise<string> {
    const m = renderSlackCard(card);
    const thread = ref.threadId !== undefined ? { thread_ts: ref.threadId } : {};
    for (const lead of m.lead) await this.ctx.web.chat.postEphemeral({ channel: ref.channelId, user: userId, text: lead, ...thread });
    const r = await this.ctx.web.chat.postEphemeral({ channel: ref.channelId, user: userId, text: m.text, blocks: m.blocks as never, ...thread });
    if (!r.message_ts) throw new Error('chat.postEphemeral returned no message_ts');
    return `${EPHEMERAL}${r.message_ts}`;
  }

  isEphemeral(handle: string): boolean {
    return handle.startsWith(EPHEMERAL);
  }

  /** A click on an ephemeral message: its `respond` may replace it while the click is handled. */
  clicked(messageTs: string, respond: Respond): void {
    this.responders.set(messageTs, respond);
  }

  async update(handle: string, card: Card): Promise<void> {
    const ts = handle.slice(EPHEMERAL.length);
    const respond = this.responders.get(ts);
    if (!respond) throw new Error(`ephemeral card ${ts} can only be replaced through a click on it (Slack has no edit for ephemeral messages)`);
    const m = renderSlackCard(card);
    await respond({ replace_original: true, text: m.text, blocks: m.blocks });
  }
}
