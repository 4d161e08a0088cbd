/**
 * Access control: who may talk to the bot, how often, and who may approve. Pure and platform-neutral:
 * plain data in, a decision out; it imports nothing of agent/, adapters/ or bot/.
 *
 * Contract:
 * - `checkAccess` is secure by default: with nothing configured for a platform nobody is served.
 *   A sender is admitted when their user id is listed, or (in a group only) when the chat / channel /
 *   guild is listed. The terminal (`console`) is the machine's owner and is always admitted.
 * - In a group the bot serves only messages that address it (mention, reply to the bot, or one of its
 *   commands); anything else is refused silently, admitted or not. Messages from bots are refused
 *   silently (two bots must not talk each other into a loop).
 * - A refusal that is not silent carries a reply naming the sender's id (DM) or the chat's id (group)
 *   and the exact config key that would admit them, plus `onceKey`: post the reply only when
 *   `OnceNotifier.first(onceKey)` is true, so a stranger is told once, not on every message.
 * - `createRateLimiter` is a per-user token bucket: a burst of `messages`, then one more every
 *   `perSeconds / messages` seconds. Integer arithmetic (no float drift); memory bounded by `maxKeys`
 *   (the least recently seen user is forgotten first, which only ever gives that user a fresh bucket).
 * - `isApprover`: an exact id match, or `role:<id>` (Discord) / `group:<id>` (Slack user group) against
 *   the user's roles, which the adapter fills in. An empty or
 *   missing list approves nobody. The person who asked for a run is NOT an approver unless their id is
 *   bound: on a chat surface the asker may be anyone the access rules admit.
 */

export type AccessPlatform = 'console' | 'telegram' | 'slack' | 'discord';

/** Who is admitted on one platform. Telegram uses `chats`, Slack and Discord `channels`, Discord `guilds`. */
export interface PlatformAccess {
  users?: readonly string[];
  chats?: readonly string[];
  channels?: readonly string[];
  guilds?: readonly string[];
}

export interface AccessInput {
  platform: AccessPlatform;
  senderId: string;
  /** The chat (Telegram) or channel (Slack, Discord) id. */
  channelId: string;
  /** Slack team or Discord guild id. */
  spaceId?: string;
  isDirect: boolean;
  /** The bot was mentioned, replied to, or given one of its commands. */
  addressed: boolean;
  senderIsBot?: boolean;
}

export type AccessDecision =
  | { allowed: true }
  | {
      allowed: false;
      silent: boolean;
      /** What to tell the sender (not silent only). */
      reply?: string;
      /** Key for OnceNotifier: the reply is posted once per key. Set when `reply` is. */
      onceKey?: string;
    };

export interface AccessOptions {
  /** The config file's name as the operator knows it, for the reply text. */
  configName?: string;
}

const LABEL: Record<AccessPlatform, string> = {
  console: 'console',
  telegram: 'Telegram',
  slack: 'Slack',
  discord: 'Discord',
};

/** The list of places (groups) that admit everyone in them, by platform. */
function placeLists(platform: AccessPlatform, access: PlatformAccess, input: AccessInput): boolean {
  const has = (list: readonly string[] | undefined, id: string | undefined): boolean =>
    id !== undefined && id !== '' && (list?.includes(id) ?? false);
  switch (platform) {
    case 'telegram':
      return has(access.chats, input.channelId);
    case 'slack':
      return has(access.channels, input.channelId);
    case 'discord':
      return has(access.channels, input.channelId) || has(access.guilds, input.spaceId);
    case 'console':
      return false;
  }
}

/** Whether this message may start or continue a run, and what to tell the sender if not. */
export function checkAccess(
  input: AccessInput,
  access: PlatformAccess | undefined,
  opts: AccessOptions = {},
): AccessDecision {
  if (input.platform === 'console') return { allowed: true };
  if (input.senderIsBot) return { allowed: false, silent: true };
  if (!input.isDirect && !input.addressed) return { allowed: false, silent: true };

  const p = input.platform;
  const userListed = input.senderId !== '' && (access?.users?.includes(input.senderId) ?? false);
  const placeListed = !input.isDirect && access !== undefined && placeLists(p, access, input);
  if (userListed || placeListed) return { allowed: true };

  const file = opts.configName ?? 'gatehouse.yaml';
  const label = LABEL[p];
  if (input.isDirect) {
    return {
      allowed: false,
      silent: false,
      onceKey: `${p}:user:${input.senderId}`,
      reply:
        `Gatehouse doesn't know you yet. Your ${label} user id is ${input.senderId}. ` +
        `To let you in, add it to access.${p}.users in ${file}. ` +
        `To let you approve the agent's actions too, also add it to approvers.${p} under the agent (agents.<name>.approvers.${p}).`,
    };
  }
  let where: string;
  if (p === 'telegram') {
    where =
      `This chat's id is ${input.channelId}. To enable Gatehouse here, add it to access.telegram.chats in ${file}`;
  } else if (p === 'slack') {
    where =
      `This channel's id is ${input.channelId}. To enable Gatehouse here, add it to access.slack.channels in ${file}`;
  } else {
    const guild = input.spaceId !== undefined && input.spaceId !== 'dm' ? input.spaceId : undefined;
    where =
      `This channel's id is ${input.channelId}` +
      (guild ? ` (server id ${guild})` : '') +
      `. To enable Gatehouse here, add it to access.discord.channels` +
      (guild ? ` (or the server id to access.discord.guilds)` : '') +
      ` in ${file}`;
  }
  return {
    allowed: false,
    silent: false,
    onceKey: `${p}:chat:${input.channelId}`,
    reply:
      `Gatehouse isn't enabled here. ${where}, or add your user id ${input.senderId} to access.${p}.users.`,
  };
}

/**
 * Remembers which keys were already told (a bounded LRU set), so a refusal is sent once.
 * In memory only: after a restart a stranger may be told once more, which is harmless.
 */
export class OnceNotifier {
  private readonly seen = new Map<string, true>();

  constructor(private readonly maxKeys = 10_000) {
    if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new RangeError(`OnceNotifier maxKeys must be a positive integer, got ${maxKeys}`);
  }

  /** True the first time `key` is seen (and records it); false afterwards while it is remembered. */
  first(key: string): boolean {
    if (this.seen.has(key)) {
      // Refresh recency so an active stranger stays remembered.
      this.seen.delete(key);
      this.seen.set(key, true);
      return false;
    }
    this.seen.set(key, true);
    if (this.seen.size > this.maxKeys) {
      const oldest = this.seen.keys().next();
      if (!oldest.done) this.seen.delete(oldest.value);
    }
    return true;
  }

  /** Forget a key (e.g. after the access list changed), so the next refusal is told again. */
  forget(key: string): void {
    this.seen.delete(key);
  }

  get size(): number {
    return this.seen.size;
  }
}

export interface RateLimit {
  messages: number;
  perSeconds: number;
}

export type RateDecision = { ok: true } | { ok: false; retryAfterSec: number };

export interface RateLimiter {
  take(userKey: string): RateDecision;
  /** Users currently tracked (bounded by maxKeys). */
  readonly size: number;
}

/**
 * A per-user token bucket. Units are integers: one message costs `perSeconds * 1000` units, the
 * bucket holds `messages` of them, and it refills `messages` units per millisecond, so exactly
 * `messages` messages per `perSeconds` are allowed on average with no floating-point drift.
 */
export function createRateLimiter(
  limit: RateLimit,
  now: () => number = Date.now,
  maxKeys = 10_000,
): RateLimiter {
  const { messages, perSeconds } = limit;
  if (!Number.isInteger(messages) || messages < 1) throw new RangeError(`rateLimit.messages must be a positive integer, got ${messages}`);
  if (!Number.isInteger(perSeconds) || perSeconds < 1) throw new RangeError(`rateLimit.perSeconds must be a positive integer, got ${perSeconds}`);
  const cost = perSeconds * 1000;
  const capacity = messages * cost;
  const buckets = new Map<string, { units: number; at: number }>();

  return {
    take(userKey: string): RateDecision {
      const t = Math.floor(now());
      let b = buckets.get(userKey);
      if (b) {
        buckets.delete(userKey); // re-inserted below: Map order is recency
        b.units = Math.min(capacity, b.units + Math.max(0, t - b.at) * messages);
        b.at = Math.max(b.at, t); // a clock stepping back must not earn extra refill later
      } else {
        b = { units: capacity, at: t };
      }
      buckets.set(userKey, b);
      if (buckets.size > maxKeys) {
        const oldest = buckets.keys().next();
        if (!oldest.done) buckets.delete(oldest.value);
      }
      if (b.units >= cost) {
        b.units -= cost;
        return { ok: true };
      }
      const waitMs = Math.ceil((cost - b.units) / messages);
      return { ok: false, retryAfterSec: Math.max(1, Math.ceil(waitMs / 1000)) };
    },
    get size() {
      return buckets.size;
    },
  };
}

/** The message for a rate-limited sender. */
export function rateLimitReply(limit: RateLimit, retryAfterSec: number): string {
  return (
    `Slow down: Gatehouse takes at most ${limit.messages} messages per ${limit.perSeconds} s from one person. ` +
    `Try again in ${retryAfterSec} s.`
  );
}

/**
 * True when `user` is bound as an approver: their id is listed exactly, or an entry `role:<id>`
 * names one of their roles. Entries starting with `role:` never match a user id. An empty or
 * missing list approves nobody; asking for a run does not make anyone an approver.
 */
export function isApprover(user: { id: string; roles?: readonly string[] }, approvers: readonly string[] | undefined): boolean {
  if (!approvers || approvers.length === 0) return false;
  for (const entry of approvers) {
    if (entry.startsWith('role:') || entry.startsWith('group:')) {
      // Discord role ids and Slack user group ids both arrive as the user's roles
      const role = entry.slice(entry.indexOf(':') + 1);
      if (role !== '' && (user.roles?.includes(role) ?? false)) return true;
    } else if (entry !== '' && entry === user.id) {
      return true;
    }
  }
  return false;
}

/** The config key that binds approvers for one agent on one platform (for decline messages). */
export function approverConfigKey(agentName: string, platform: string): string {
  return `agents.${agentName}.approvers.${platform}`;
}
