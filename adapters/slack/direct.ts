/**
 * Slack cards outside the conversation's shared view (issue 24's approvalDelivery): a user's direct
 * messages (`openDirect`: conversations.open) and ephemeral cards only one user sees
 * (`postEphemeralCard`: chat.postEphemeral).
 *
 * Contract:
 * - openDirect: the ref of the bot's DM channel with the user (conversations.open, `im:write`); a
 *   Slack error (user_not_found, missing scope) rejects with its code.
 * - An ephemeral card's handle is `eph:<message_ts>`. Slack lets no API call edit an ephemeral
 *   message; only a click's response_url may replace it. So the interactivity handler hands each
 *   click on an ephemeral card (its response_url, from the signed or socket-delivered payload) to
 *   `clicked` before the core hears of it, and `update` replaces the card by POSTing to that URL
 *   (replace_original, on a connection closed after it: a kept-alive one outlived a stopped app). Without one (an
 *   expiry, a decision made elsewhere) `update` rejects (the broker logs it): the card keeps its
 *   buttons, and a later click on it gets the "already decided" or "expired" notice privately.
 */
import type { WebClient } from '@slack/web-api';
import type { Card } from '../../agent/events.js';
import type { ConversationRef } from '../types.js';
import { renderSlackCard } from './blocks.js';
import { RecentMap, type SlackContext } from './context.js';
import { refFor } from './keys.js';
import { AdapterError } from '../kit/errors.js';

const EPHEMERAL = 'eph:';

const RESPONSE_TIMEOUT_MS = 10_000;

export class SlackDirect {
  private readonly responseUrls = new RecentMap<string>(1000);

  constructor(private readonly ctx: SlackContext) {}

  async openDirect(userId: string): Promise<ConversationRef> {
    let r: Awaited<ReturnType<WebClient['conversations']['open']>>;
    try {
      r = await this.ctx.web.conversations.open({ users: userId });
    } catch (err) {
      // Slack's code and the missing scope (im:write), never a token.
      throw new AdapterError('outbound_failed', `conversations.open: ${this.ctx.describeError(err)}`, { cause: err });
    }
    const channel = r.channel?.id;
    if (!channel) throw new AdapterError('outbound_failed', `conversations.open for ${userId} returned no channel`);
    return refFor(this.ctx.identity.teamId, channel);
  }

  /** users.info: `@display name`, else `@name` (needs users:read; undefined when Slack will not say). */
  async userLabel(userId: string): Promise<string | undefined> {
    try {
      const r = await this.ctx.web.users.info({ user: userId });
      const label = r.user?.profile?.display_name || r.user?.name;
      return label ? `@${label}` : undefined;
    } catch {
      return undefined;
    }
  }

  async postEphemeralCard(ref: ConversationRef, userId: string, card: Card): Promise<string> {
    const m = renderSlackCard(card);
    const thread = ref.threadId !== undefined ? { thread_ts: ref.threadId } : {};
    for (const lead of m.lead) await this.ctx.web.chat.postEphemeral({ channel: ref.channelId, user: userId, text: lead, ...thread });
    const r = await this.ctx.web.chat.postEphemeral({ channel: ref.channelId, user: userId, text: m.text, blocks: m.blocks as never, ...thread });
    if (!r.message_ts) throw new AdapterError('outbound_failed', 'chat.postEphemeral returned no message_ts');
    return `${EPHEMERAL}${r.message_ts}`;
  }

  isEphemeral(handle: string): boolean {
    return handle.startsWith(EPHEMERAL);
  }

  /** A click on an ephemeral message: its response_url may replace it while the click is handled. */
  clicked(messageTs: string, responseUrl: string): void {
    this.responseUrls.set(messageTs, responseUrl);
  }

  async update(handle: string, card: Card): Promise<void> {
    const ts = handle.slice(EPHEMERAL.length);
    const url = this.responseUrls.get(ts);
    if (!url)
      throw new AdapterError('outbound_failed', `ephemeral card ${ts} can only be replaced through a click on it (Slack has no edit for ephemeral messages)`);
    const m = renderSlackCard(card);
    const res = await fetch(url, {
      method: 'POST',
      // One short-lived connection: a kept-alive one to the response_url host outlived the adapter.
      headers: { 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ replace_original: true, text: m.text, blocks: m.blocks }),
      signal: AbortSignal.timeout(RESPONSE_TIMEOUT_MS),
    });
    if (!res.ok)
      throw new AdapterError(
        'outbound_failed',
        `replacing ephemeral card ${ts} through its response_url failed: HTTP ${res.status} ${(await res.text()).slice(0, 200)}`,
      );
    await res.arrayBuffer().catch(() => undefined);
  }
}
