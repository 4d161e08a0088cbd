/**
 * What the parts of the Discord adapter (inbound messages and slash commands, interactivity, output,
 * start-up) share: the outbound REST client, the bot's identity once known, the core's sink, the
 * threads it answers in, an error describer that never prints the token.
 *
 * Contract:
 * - `rest` outlives stop(): a run finishing during the shutdown grace period still delivers its
 *   answer (only the gateway, the input, is closed).
 * - `describeError(err)` is one line (a DiscordAPIError as "<status> <code>: <message>") with the token
 *   replaced by `<token>`; `scrub` does that to any text.
 * - `pendingThreads`: a thread being started from a message; output to it waits until it exists.
 * - `refOfInteraction` / `senderOfInteraction`: the conversation and the clicker of an interaction
 *   (a slash command or a click), keyed like messages (keys.ts); roles never include @everyone.
 */
import { DiscordAPIError, type Interaction, type REST } from 'discord.js';
import type { Recent } from '../kit/inbound.js';
import type { AdapterSink, ConversationRef, Log, Sender } from '../types.js';
import { refFor } from './keys.js';

export interface DiscordContext {
  /** Outbound REST calls (discord.js's queue waits out a 429). */
  readonly rest: REST;
  readonly log: Log;
  /** An error as one line, never the token. */
  readonly describeError: (err: unknown) => string;
  /** Removes the token from a text. */
  readonly scrub: (s: string) => string;
  /** Set when the gateway is READY: the bot's user id and its application's id. */
  identity: { botUserId: string; applicationId: string };
  /** The core; undefined before start and after stop. */
  sink: AdapterSink | undefined;
  /** Threads the bot answers in: follow-ups there are addressed to it. */
  readonly threads: Recent;
  /** Threads being started: output to them waits until they exist. */
  readonly pendingThreads: Map<string, Promise<void>>;
}

/** Every message is sent with these: model text cannot ping @everyone, a role or a user. */
export const NO_MENTIONS: { parse: [] } = { parse: [] };

export function tokenScrubber(token: string): Pick<DiscordContext, 'scrub' | 'describeError'> {
  const scrub = (s: string): string => s.split(token).join('<token>');
  const describeError = (err: unknown): string => {
    if (err instanceof DiscordAPIError) return scrub(`${err.status} ${err.code}: ${err.message}`);
    return scrub((err as { message?: string }).message ?? String(err));
  };
  return { scrub, describeError };
}

/** A member's role ids: a plain list (no Guilds intent) or the role cache; never @everyone. */
export function rolesOf(member: unknown, guildId: string | null): string[] {
  if (!guildId || !member) return [];
  const m = member as { roles?: unknown };
  let ids: string[] = [];
  if (Array.isArray(m.roles)) ids = m.roles.map(String);
  else {
    const cache = (m.roles as { cache?: Map<string, unknown> } | undefined)?.cache;
    if (cache) ids = [...cache.keys()];
  }
  // @everyone's id is the guild's id: it is not a role anyone was given
  return ids.filter((r) => r !== guildId);
}

/** The conversation an interaction happened in. */
export function refOfInteraction(i: Interaction): ConversationRef | undefined {
  if (!i.channelId) return undefined;
  if (!i.guildId) return refFor('dm', i.channelId);
  const ch = i.channel;
  if (ch?.isThread() && ch.parentId) return refFor(i.guildId, ch.parentId, ch.id);
  return refFor(i.guildId, i.channelId);
}

export function senderOfInteraction(i: Interaction): Sender {
  const member = i.member as { displayName?: string; nick?: string | null } | null;
  const name = member?.displayName ?? member?.nick ?? i.user.globalName ?? i.user.username;
  const roles = rolesOf(i.member, i.guildId);
  return { id: i.user.id, ...(name ? { name } : {}), ...(roles.length > 0 ? { roles } : {}) };
}
