/**
 * The per-agent `approvalDelivery` key (issue 24): where approval cards go. Kept out of
 * bot/config/schema.ts so that file only names it; the delivery itself is agent/approvals/delivery.ts.
 *
 *   approvalDelivery: here          # the conversation (default)
 *   approvalDelivery: dm            # each bound approver's direct messages; a status line here
 *   approvalDelivery: both          # the conversation and the direct messages; either decides
 *   approvalDelivery: ephemeral     # Slack: only the requester sees it, when they are an approver
 *   approvalDelivery: { dm: telegram }    # the agent's Telegram approvers' DMs, from any platform
 *   approvalDelivery: { both: telegram }  # the same, and the card in the conversation too
 *
 * Also: the start-log line saying what each agent's setting does per platform, and the port
 * (DirectCards) bot/service/app.ts hands the broker, built from the adapters' optional capabilities.
 */
import { z } from 'zod';
import type { ApprovalDelivery, DirectCards } from '../../agent/approvals/delivery.js';
import { platformName } from '../../agent/approvals/delivery.js';
import type { Adapter, Platform } from '../../adapters/types.js';
import { quoteValue } from './problems.js';

const CHAT_PLATFORMS = ['telegram', 'slack', 'discord'] as const;
const MODES = ['here', 'dm', 'both', 'ephemeral'] as const;
const hint = `expected one of ${MODES.join(', ')}, or { dm: <platform> } / { both: <platform> } with a platform of ${CHAT_PLATFORMS.join(', ')}`;

const target = z.enum(CHAT_PLATFORMS, { message: `expected a platform whose direct messages take the cards: ${CHAT_PLATFORMS.join(', ')}` });

export const approvalDeliverySchema = z
  .union([z.enum(MODES), z.strictObject({ dm: target }), z.strictObject({ both: target })], {
    error: (issue) => `${hint}, got ${quoteValue(issue.input)}`,
  })
  .transform((v): ApprovalDelivery => {
    if (typeof v === 'string') return { mode: v };
    return 'dm' in v ? { mode: 'dm', platform: v.dm } : { mode: 'both', platform: v.both };
  });

type AgentLike = { approvalDelivery?: ApprovalDelivery | undefined; approvers: Partial<Record<string, string[] | undefined>> };

/** Config problems: a cross-platform target with nobody bound there. */
export function approvalDeliveryProblems(name: string, agent: AgentLike): Array<{ path: string; message: string }> {
  const d = agent.approvalDelivery;
  if (!d || (d.mode !== 'dm' && d.mode !== 'both') || d.platform === undefined) return [];
  const bound = (agent.approvers[d.platform] ?? []).filter((a) => !a.startsWith('group:') && !a.startsWith('role:'));
  if (bound.length > 0) return [];
  return [
    {
      path: `agents.${name}.approvalDelivery`,
      message: `sends cards to ${d.platform} direct messages, but agents.${name}.approvers.${d.platform} names no user to message (group:/role: entries are not messaged): add their ids there`,
    },
  ];
}

/** The start-log lines: what each agent's non-default setting does on each enabled platform. */
export function approvalDeliveryLines(agents: Record<string, AgentLike>, platforms: readonly string[]): string[] {
  const out: string[] = [];
  const enabled = new Set(platforms);
  for (const [name, a] of Object.entries(agents)) {
    const d = a.approvalDelivery;
    if (!d || d.mode === 'here') continue;
    const per = platforms
      .filter((p) => p !== 'console')
      .map((p) => {
        if (d.mode === 'ephemeral') {
          return p === 'slack' ? 'slack: ephemeral to the requester when they are an approver, else here' : `${p}: here (ephemeral is Slack only)`;
        }
        const t = d.platform ?? p;
        if (!enabled.has(t)) return `${p}: here (${t} is not enabled, so no direct messages)`;
        return `${p}: ${platformName(t)} direct messages${d.mode === 'both' ? ' and here' : ''}`;
      });
    if (per.length > 0) out.push(`agent ${name}: approvalDelivery: ${per.join('; ')}`);
  }
  return out;
}

/** The broker's port to direct messages and ephemeral cards, over the enabled adapters. */
export function directCards(adapterOf: (platform: string) => Adapter | undefined): DirectCards {
  return {
    async openDirect(platform, userId) {
      const a = adapterOf(platform);
      if (!a) throw new Error(`${platformName(platform)} is not enabled here`);
      if (!a.openDirect) throw new Error(`${platformName(platform)} has no direct messages in Gatehouse`);
      return (await a.openDirect(userId)).key;
    },
    async userLabel(platform, userId) {
      return adapterOf(platform)?.userLabel?.(userId);
    },
    postEphemeral(conversationKey, userId, card) {
      const a = adapterOf(conversationKey.slice(0, conversationKey.indexOf(':')) as Platform);
      if (!a?.postEphemeralCard) return undefined;
      return a.postEphemeralCard(a.decodeKey(conversationKey), userId, card);
    },
  };
}
