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
 *   usergroups.users.list. It fails closed: a lookup error (a deleted group, a missing scope, Slack
 *   down or rate limiting) counts as NOT a member, drops the cached list, and the clicker's notice says
 *   the approver group could not be checked. A member list is trusted for `groupCacheMs` (default
 *   15 s: how long someone removed from the group can still approve); someone not in the cached list
 *   makes the group be read again before being refused (they may have just been added), at most once
 *   per `groupMissRereadMs` (default 0: every miss). Reads of one group in flight are shared.
 */
import type { App } from '@slack/bolt';
import { cutText } from '../kit/attachments.js';
import { deliverClick } from '../kit/clicks.js';
import type { SlackContext } from './context.js';
import { ACTION_PREFIX } from './blocks.js';
import { refFor } from './keys.js';
import { escapeMrkdwn } from './mrkdwn.js';

export interface InteractivityOptions {
  /** User group ids (S…) bound as `group:<id>` approvers (read at each click). */
  approverGroups: () => string[];
  /** How long a group's member list is trusted; default 15 s. */
  groupCacheMs: number;
  /** A clicker missing from the cached list re-reads the group, at most this often; default 0 (always). */
  groupMissRereadMs: number;
  /** The clock (tests inject one). */
  now?: () => number;
  /** A click on an ephemeral message, before the core hears of it (./direct.ts replaces the card through `respond`). */
  ephemeralClicked?: (messageTs: string, responseUrl: string) => void;
}

/** A user's membership of the wanted groups; `unchecked`: groups whose lookup failed (counted as not a member). */
interface GroupMembership {
  groups: string[];
  unchecked: string[];
}

/** Members of Slack user groups, cached briefly, re-read on a miss, failing closed. */
class UserGroups {
  private readonly cache = new Map<string, { members: Set<string>; at: number }>();
  private readonly reading = new Map<string, Promise<Set<string> | null>>();
  private readonly now: () => number;
  constructor(
    private readonly ctx: SlackContext,
    private readonly opts: Pick<InteractivityOptions, 'groupCacheMs' | 'groupMissRereadMs' | 'now'>,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /** true / false, or null when Slack could not say (an error: never a stale yes). */
  async isMember(group: string, user: string): Promise<boolean | null> {
    const cached = this.cache.get(group);
    const age = cached ? this.now() - cached.at : Infinity;
    if (cached && age < this.opts.groupCacheMs) {
      if (cached.members.has(user)) return true;
      if (age < this.opts.groupMissRereadMs) return false;
    }
    const members = await this.read(group);
    return members === null ? null : members.has(user);
  }

  private read(group: string): Promise<Set<string> | null> {
    const inFlight = this.reading.get(group);
    if (inFlight) return inFlight;
    const p = (async () => {
      try {
        const r = await this.ctx.web.usergroups.users.list({ usergroup: group });
        const members = new Set(r.users ?? []);
        this.cache.set(group, { members, at: this.now() });
        return members;
      } catch (err) {
        // No stale list survives an error: a deleted group's former members must not keep approving.
        this.cache.delete(group);
        this.ctx.log(
          'warn',
          `could not read user group ${group} (usergroups:read scope? deleted group?); its members count as not approvers: ${this.ctx.describeError(err)}`,
        );
        return null;
      } finally {
        this.reading.delete(group);
      }
    })();
    this.reading.set(group, p);
    return p;
  }

  async groupsOf(user: string, wanted: string[]): Promise<GroupMembership> {
    const out: GroupMembership = { groups: [], unchecked: [] };
    for (const g of wanted) {
      const m = await this.isMember(g, user);
      if (m === true) out.groups.push(g);
      else if (m === null) out.unchecked.push(g);
    }
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
      container?: { thread_ts?: string; channel_id?: string; message_ts?: string; is_ephemeral?: boolean };
      message?: { ts: string; thread_ts?: string };
      trigger_id?: string;
      response_url?: string;
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
        ctx.log('warn', `could not tell ${b.user.id} privately: ${ctx.describeError(err)}`);
      }
    };
    if (b.container?.is_ephemeral && b.container.message_ts && b.response_url) opts.ephemeralClicked?.(b.container.message_ts, b.response_url);
    let unchecked: string[] = [];
    await deliverClick({
      sink: ctx.sink,
      event:
        channel && token !== ''
          ? async () => {
              const name = b.user.name ?? b.user.username;
              const membership = await groups.groupsOf(b.user.id, opts.approverGroups());
              unchecked = membership.unchecked;
              const roles = membership.groups;
              return {
                platform: 'slack',
                conversation: refFor(b.team?.id ?? ctx.identity.teamId, channel, thread),
                token,
                user: { id: b.user.id, ...(name ? { name } : {}), ...(roles.length > 0 ? { roles } : {}) },
                eventId: `slack:action:${b.trigger_id ?? `${channel}:${a.action_ts ?? ''}`}`,
              };
            }
          : undefined,
      notice: (r) => {
        if (r.accepted || unchecked.length === 0) return r.notice;
        const which = unchecked.map((g) => `group:${g}`).join(', ');
        return `${r.notice ? `${r.notice} ` : ''}The approver list could not be checked: Slack did not answer for ${which}, so that membership did not count. Try again in a moment, or ask the operator.`;
      },
      notify: async (text) => {
        if (text) await notify(text);
      },
      log: ctx.log,
      describeError: ctx.describeError,
    });
  });
}
