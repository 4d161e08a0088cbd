/**
 * Clicks on cards (Block Kit buttons and select menus) -> the core, and Slack user groups as approvers.
 *
 * Contract:
 * - One listener matches every card element (action_id `ACTION_PREFIX:*`) and acks first, so no
 *   click goes unacked (Slack wants it within 3 s), a stale or foreign one included.
 * - The token passed on is the button's value (or the selected option's) exactly; the conversation is
 *   the card's: its thread when it was posted in one. A repeated delivery of one click (same trigger_id)
 *   has the same event id, which the core drops.
 * - The result's notice goes to the clicker only (chat.postEphemeral, in the card's thread).
 * - The clicker's `roles` are the bound user groups (`group:<id>` approvers) they belong to, read with
 *   usergroups.users.list and cached for `groupCacheMs`; someone not in the cached list makes the
 *   group be read again (they may have just been added), at most once per `groupMissRereadMs`.
 */
import type { App } from '@slack/bolt';
import { cutText } from '../kit/attachments.js';
import type { SlackContext } from './context.js';
import { ACTION_PREFIX } from './blocks.js';
import { refFor } from './keys.js';
import { escapeMrkdwn } from './mrkdwn.js';

export interface InteractivityOptions {
  /** User group ids (S…) bound as `group:<id>` approvers (read at each click). */
  approverGroups: () => string[];
  /** How long a group's member list is trusted; default 60 s. */
  groupCacheMs: number;
  /** A clicker missing from the cached list re-reads the group, at most this often; default 5 s. */
  groupMissRereadMs: number;
}

/** Members of Slack user groups, cached briefly and re-read on a miss. */
export class UserGroups {
  private readonly cache = new Map<string, { members: Set<string>; at: number }>();
  constructor(
    private readonly ctx: SlackContext,
    private readonly opts: Pick<InteractivityOptions, 'groupCacheMs' | 'groupMissRereadMs'>,
  ) {}

  async isMember(group: string, user: string): Promise<boolean> {
    const cached = this.cache.get(group);
    const age = cached ? Date.now() - cached.at : Infinity;
    if (cached && age < this.opts.groupCacheMs && (cached.members.has(user) || age < this.opts.groupMissRereadMs)) return cached.members.has(user);
    try {
      const r = await this.ctx.web.usergroups.users.list({ usergroup: group });
      const members = new Set(r.users ?? []);
      this.cache.set(group, { members, at: Date.now() });
      return members.has(user);
    } catch (err) {
      this.ctx.log('warn', `could not read user group ${group} (usergroups:read scope?): ${this.ctx.describe(err)}`);
      return cached?.members.has(user) ?? false;
    }
  }

  async groupsOf(user: string, wanted: string[]): Promise<string[]> {
    const out: string[] = [];
    for (const g of wanted) if (await this.isMember(g, user)) out.push(g);
    return out;
  }
}

export function registerInteractivity(app: App, ctx: SlackContext, opts: InteractivityOptions): void {
  const groups = new UserGroups(ctx, opts);

  app.action(new RegExp(`^${ACTION_PREFIX}:`), async ({ ack, body, action }) => {
    await ack();
    const b = body as {
      user: { id: string; name?: string; username?: string };
      team?: { id: string } | null;
      channel?: { id: string };
      container?: { thread_ts?: string; channel_id?: string };
      message?: { ts: string; thread_ts?: string };
      trigger_id?: string;
    };
    const a = action as { value?: string; selected_option?: { value?: string }; action_ts?: string };
    const token = a.selected_option?.value ?? a.value ?? '';
    const channel = b.channel?.id ?? b.container?.channel_id;
    const thread = b.message?.thread_ts ?? b.container?.thread_ts;
    const notify = async (text: string) => {
      if (!channel) return;
      try {
        await ctx.web.chat.postEphemeral({ channel, user: b.user.id, text: escapeMrkdwn(cutText(text, 3000)), ...(thread ? { thread_ts: thread } : {}) });
      } catch (err) {
        ctx.log('warn', `could not tell ${b.user.id} privately: ${ctx.describe(err)}`);
      }
    };
    const sink = ctx.sink;
    if (!sink || !channel || token === '') {
      await notify('This button is no longer valid.');
      return;
    }
    try {
      const name = b.user.name ?? b.user.username;
      const roles = await groups.groupsOf(b.user.id, opts.approverGroups());
      const r = await sink.action({
        platform: 'slack',
        conversation: refFor(b.team?.id ?? ctx.identity.teamId, channel, thread),
        token,
        user: { id: b.user.id, ...(name ? { name } : {}), ...(roles.length > 0 ? { roles } : {}) },
        eventId: `slack:action:${b.trigger_id ?? `${channel}:${a.action_ts ?? ''}`}`,
      });
      if (r.notice) await notify(r.notice);
    } catch (err) {
      ctx.log('error', `handling a click failed: ${ctx.describe(err)}`);
      await notify('Something went wrong; please try again.');
    }
  });
}
