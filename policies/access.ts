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
 * - `createRefusalThrottle` bounds what a flood of strangers costs (issue 18: 3,000 unknown ids got
 *   2,982 replies): per platform, a refusal is told at most once per stranger (its onceKey) per
 *   `strangerIntervalSeconds`, and all strangers together get at most `repliesPerMinute` replies (a
 *   token bucket). While refusals go untold it returns one flood line per platform at most once a
 *   minute (the first at once) with the counts since the last line. The clock is injected.
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

/** The platform's name as people write it ("Telegram"). */
export function platformLabel(p: AccessPlatform): string {
  return LABEL[p];
}

/** The config key listing the places (groups, channels) that admit everyone in them. */
export const PLACE_LIST_KEY: Record<Exclude<AccessPlatform, 'console'>, string> = {
  telegram: 'access.telegram.chats',
  slack: 'access.slack.channels',
  discord: 'access.discord.channels',
};

/** Whether the place (group, channel, server) is on the platform's list that admits everyone in it. */
export function placeLists(platform: AccessPlatform, access: PlatformAccess, input: AccessInput): boolean {
  const has = (list: readonly string[] | undefined, id: string | undefined): boolean => id !== undefined && id !== '' && (list?.includes(id) ?? false);
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
export function checkAccess(input: AccessInput, access: PlatformAccess | undefined, opts: AccessOptions = {}): AccessDecision {
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
    where = `This chat's id is ${input.channelId}. To enable Gatehouse here, add it to access.telegram.chats in ${file}`;
  } else if (p === 'slack') {
    where = `This channel's id is ${input.channelId}. To enable Gatehouse here, add it to access.slack.channels in ${file}`;
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
    reply: `Gatehouse isn't enabled here. ${where}, or add your user id ${input.senderId} to access.${p}.users.`,
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

type RateDecision = { ok: true } | { ok: false; retryAfterSec: number };

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
export function createRateLimiter(limit: RateLimit, now: () => number = Date.now, maxKeys = 10_000): RateLimiter {
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

export interface RefusalLimits {
  /** Refusal replies per platform per minute, all strangers together; 0: never reply. */
  repliesPerMinute: number;
  /** A stranger (or a group) is told at most once in this many seconds. */
  strangerIntervalSeconds: number;
}

export const DEFAULT_REFUSAL_LIMITS: RefusalLimits = { repliesPerMinute: 10, strangerIntervalSeconds: 86_400 };

export interface FloodReport {
  platform: string;
  /** Refusals (not silent) since the last report. */
  refused: number;
  /** Of those, told (a reply posted). */
  told: number;
  /** Distinct senders among them (counted up to 10,000). */
  senders: number;
  /** Milliseconds the report covers. */
  windowMs: number;
}

interface RefusalVerdict {
  /** Post the refusal reply now. */
  reply: boolean;
  /** Set when a flood line is due (log it once). */
  flood?: FloodReport;
}

export interface RefusalThrottle {
  /** One refusal that would carry a reply: whether to post it, and a flood report when one is due. */
  refuse(platform: string, onceKey: string, senderKey: string): RefusalVerdict;
  /** Forget that `onceKey` was told (the access list changed), so the next refusal is told again. */
  forget(onceKey: string): void;
}

const FLOOD_REPORT_MS = 60_000;
const MAX_SENDERS_COUNTED = 10_000;

export function createRefusalThrottle(limits: RefusalLimits = DEFAULT_REFUSAL_LIMITS, now: () => number = Date.now, maxKeys = 10_000): RefusalThrottle {
  const intervalMs = limits.strangerIntervalSeconds * 1000;
  // onceKey -> when it was last told; Map order is recency (the oldest forgotten first).
  const told = new Map<string, number>();
  const buckets = limits.repliesPerMinute > 0 ? new Map<string, RateLimiter>() : undefined;
  const windows = new Map<string, { start: number; refused: number; told: number; dropped: number; senders: Set<string>; lastReport: number }>();
  const bucketOf = (platform: string): RateLimiter => {
    let b = buckets!.get(platform);
    if (!b) {
      b = createRateLimiter({ messages: limits.repliesPerMinute, perSeconds: 60 }, now, 1);
      buckets!.set(platform, b);
    }
    return b;
  };
  return {
    refuse(platform, onceKey, senderKey) {
      const t = now();
      let w = windows.get(platform);
      // A quiet minute (every refusal told) starts a new window: a report covers the flood, not the day.
      if (!w || (w.dropped === 0 && t - w.start >= FLOOD_REPORT_MS)) {
        w = { start: t, refused: 0, told: 0, dropped: 0, senders: new Set(), lastReport: w?.lastReport ?? -Infinity };
        windows.set(platform, w);
      }
      w.refused++;
      if (w.senders.size < MAX_SENDERS_COUNTED) w.senders.add(senderKey);
      const key = `${platform}\u0000${onceKey}`;
      const last = told.get(key);
      let reply = false;
      let dropped = false;
      if (last !== undefined && t - last < intervalMs) {
        told.delete(key);
        told.set(key, last); // refresh recency: an active stranger stays remembered
      } else if (buckets && bucketOf(platform).take('all').ok) {
        reply = true;
        told.delete(key);
        told.set(key, t);
        if (told.size > maxKeys) told.delete(told.keys().next().value as string);
      } else {
        dropped = true; // the platform's reply budget is spent: a flood
      }
      if (reply) w.told++;
      if (dropped) w.dropped++;
      if (!dropped || t - w.lastReport < FLOOD_REPORT_MS) return { reply };
      const flood: FloodReport = { platform, refused: w.refused, told: w.told, senders: w.senders.size, windowMs: t - w.start };
      windows.set(platform, { start: t, refused: 0, told: 0, dropped: 0, senders: new Set(), lastReport: t });
      return { reply, flood };
    },
    forget(onceKey) {
      for (const k of [...told.keys()]) if (k.endsWith(`\u0000${onceKey}`)) told.delete(k);
    },
  };
}

/** The flood line for the log. */
export function floodLine(r: FloodReport, limits: RefusalLimits): string {
  const secs = Math.max(1, Math.round(r.windowMs / 1000));
  return (
    `stranger flood on ${r.platform}: ${r.refused} refused messages from ${r.senders >= MAX_SENDERS_COUNTED ? `${MAX_SENDERS_COUNTED}+` : r.senders} senders in the last ${secs} s, ` +
    `${r.told} told, ${r.refused - r.told} not answered (access.refusals.repliesPerMinute: ${limits.repliesPerMinute}, one per stranger every ${limits.strangerIntervalSeconds} s)`
  );
}

/** The message for a rate-limited sender. */
export function rateLimitReply(limit: RateLimit, retryAfterSec: number): string {
  return `Slow down: Gatehouse takes at most ${limit.messages} messages per ${limit.perSeconds} s from one person. ` + `Try again in ${retryAfterSec} s.`;
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
