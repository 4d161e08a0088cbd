/**
 * The Discord adapter (discord.js 14). adapters/discord/ is the only folder that imports discord.js.
 * This file assembles the adapter and owns its lifecycle; the work is split by responsibility:
 * startup.ts (the gateway: login, intents, READY, slash command registration, start errors),
 * inbound.ts (messageCreate and slash commands -> the core), interactivity.ts (clicks), output.ts
 * (answers, progress, cards), context.ts (what they share), keys.ts (conversation keys).
 *
 * Contract (beyond adapters/types.ts):
 * - Gateway with the intents Guilds, GuildMessages, MessageContent, DirectMessages and
 *   Partials.Channel (DMs). REST at `apiUrl` (DISCORD_API_URL, default https://discord.com/api;
 *   v10 appended); the gateway URL comes from GET /gateway/bot there.
 * - start(): login; a disallowed privileged intent (close 4014) fails with a message naming the
 *   Message Content Intent switch in the Developer Portal, a rejected token (401, close 4004) with
 *   one saying where to get a new one; the token never appears in a message or log line. Then the
 *   slash commands /stop /reset /help are registered (per guild in `commandGuilds()`, else global)
 *   and the invite URL (bot + applications.commands, `INVITE_PERMISSIONS`) is logged.
 * - Conversations: a DM is `discord:dm:<channel>`; in a server text channel a mention (or a reply
 *   to the bot) is answered in a thread started from that message (`discord:<guild>:<channel>:<thread>`,
 *   the thread's id is the message's id), or in place (`discord:<guild>:<channel>`) where
 *   `replyInThread(guild, channel)` says false. Messages in a thread the bot owns or answered in are
 *   addressed to it without a mention. Bots, system messages and edits are ignored; a message seen
 *   twice (a re-sent dispatch after a resume) is handled once.
 * - Slash commands and clicks are acknowledged first (within Discord's 3 s), then handled. A click
 *   passes the component's token exactly; the result's notice goes to the clicker as an ephemeral
 *   follow-up. The clicker's roles come from the interaction's member (none in a DM).
 * - stop() closes the gateway (no new input); output still goes out (runs finishing during shutdown).
 * - The gateway is the adapter's `held` connection (adapters/types.ts): with `holdConnection: false`
 *   start() readies REST output only; `held.open()` logs in (the elected replica), `held.close()`
 *   destroys the client. Slash commands are registered by whoever opens it.
 * - Output: answers as Discord markdown cut at 2,000 characters on the markdown tree; progress as
 *   typing (refreshed every 8 s; it lasts 10) and one throttled status message; discord.js's REST
 *   queue waits out 429s, so an edit is delayed, never lost. Every message is sent with no allowed
 *   mentions (model text cannot ping @everyone or a role).
 */
import { REST } from 'discord.js';
import { heldConnection } from '../kit/held.js';
import { Recent } from '../kit/inbound.js';
import { type Adapter, type AdapterSink, type AdapterStartOptions, fallbackLog, type Log, prefixedLog } from '../types.js';
import { type DiscordContext, tokenScrubber } from './context.js';
import { discordUserLabel, openDiscordDirect } from './direct.js';
import { DEFAULT_DISCORD_API_URL } from './descriptor.js';
import { createInbound } from './inbound.js';
import { createInteractivity } from './interactivity.js';
import { decodeKey } from './keys.js';
import { createOutput } from './output.js';
import { createGateway } from './startup.js';
import { AdapterError } from '../kit/errors.js';

export interface DiscordAdapterOptions {
  token: string;
  /** DISCORD_API_URL; default https://discord.com/api */
  apiUrl?: string;
  /** Whether a mention in this guild channel is answered in a new thread (default) or in place. */
  replyInThread?: (guildId: string, channelId: string) => boolean;
  /** Guilds to register the slash commands in (empty: globally). */
  commandGuilds?: () => string[];
  /** Minimum time between edits of a run's status message; default 1200 ms. */
  statusEditIntervalMs?: number;
  /** Default 5 MB. */
  maxAttachmentBytes?: number;
  /** REST requests a second (discord.js's global limiter); default 50, Discord's limit per bot. */
  requestsPerSecond?: number;
  /** How long start() waits for the gateway's READY; default 30 s. */
  readyTimeoutMs?: number;
  log?: Log;
}

const THREADS_MAX = 20000;

export function createDiscordAdapter(opts: DiscordAdapterOptions): Adapter {
  const token = opts.token.trim().replace(/^Bot\s+/i, '');
  if (token === '') throw new AdapterError('start_failed', 'DISCORD_TOKEN is empty');
  const apiUrl = (opts.apiUrl ?? DEFAULT_DISCORD_API_URL).replace(/\/+$/, '');
  const requestsPerSecond = opts.requestsPerSecond ?? 50;

  const ctx: DiscordContext = {
    // its own REST client, not the gateway client's: it outlives stop() (see context.ts)
    rest: new REST({ api: apiUrl, retries: 2, timeout: 15_000, globalRequestsPerSecond: requestsPerSecond }).setToken(token),
    log: opts.log ?? prefixedLog(fallbackLog, '[discord] '),
    ...tokenScrubber(token),
    identity: { botUserId: '', applicationId: '' },
    sink: undefined,
    threads: new Recent(THREADS_MAX),
    pendingThreads: new Map(),
  };

  const output = createOutput(ctx, { statusEditIntervalMs: opts.statusEditIntervalMs ?? 1200 });
  const inbound = createInbound(ctx, {
    maxAttachmentBytes: opts.maxAttachmentBytes ?? 5 * 1024 * 1024,
    replyInThread: opts.replyInThread ?? (() => true),
    postPlain: output.postPlain,
  });
  const interactivity = createInteractivity(ctx);
  const gateway = createGateway(ctx, {
    token,
    apiUrl,
    requestsPerSecond,
    readyTimeoutMs: opts.readyTimeoutMs ?? 30_000,
    commandGuilds: opts.commandGuilds ?? (() => []),
    onMessage: inbound.onMessage,
    onInteraction: (i) => {
      if (i.isChatInputCommand()) void inbound.onCommand(i);
      else if (i.isButton() || i.isStringSelectMenu()) void interactivity.onComponent(i);
    },
  });
  const held = heldConnection('Discord gateway', gateway);

  let started = false;

  async function start(s: AdapterSink, startOpts: AdapterStartOptions = {}): Promise<void> {
    if (started) throw new AdapterError('start_failed', 'the Discord adapter is already started');
    ctx.sink = s;
    if (startOpts.holdConnection !== false) {
      try {
        await held.open();
      } catch (err) {
        ctx.sink = undefined;
        throw err;
      }
    } else {
      ctx.log('info', 'the Discord gateway is held by another replica; sending only');
    }
    started = true;
  }

  async function stop(): Promise<void> {
    if (!started) return;
    started = false;
    await held.close();
    ctx.sink = undefined;
    await output.stop();
  }

  return {
    platform: 'discord',
    streamsText: false,
    start,
    stop,
    held,
    render: output.render,
    postCard: output.postCard,
    openDirect: (userId) => openDiscordDirect(ctx.rest, userId),
    userLabel: (userId) => discordUserLabel(ctx.rest, userId),
    updateCard: output.updateCard,
    postText: output.postPlain,
    decodeKey,
  };
}
