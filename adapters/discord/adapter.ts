/**
 * The Discord adapter (discord.js 14). The only module in the project that imports discord.js.
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
import { outboundCaller } from '../kit/outbound.js';
import {
  Client,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  MessageFlags,
  MessageType,
  Partials,
  REST,
  Routes,
  Status,
  type ChatInputCommandInteraction,
  type Interaction,
  type Message,
  type ButtonInteraction,
  type StringSelectMenuInteraction,
} from 'discord.js';
import type { AgentEvent, Card } from '../../agent/events.js';
import { cutText } from '../kit/attachments.js';
import { composeOutput } from '../kit/compose.js';
import { ProgressView } from '../kit/progress.js';
import { StatusMessage } from '../kit/status.js';
import type { StatusFailure } from '../kit/status.js';
import { chunkText } from '../kit/text.js';
import { heldConnection } from '../kit/held.js';
import { openDiscordDirect } from './direct.js';
import { deliverClick, SOMETHING_WENT_WRONG } from '../kit/clicks.js';
import { deliverMessage, Recent, withUnreadNotes } from '../kit/inbound.js';
import {
  fallbackLog,
  prefixedLog,
  type Adapter,
  type AdapterSink,
  type AdapterStartOptions,
  type ConversationRef,
  type InboundMessage,
  type Log,
  type Sender,
} from '../types.js';
import { renderDiscordCard, tokenOf } from './components.js';
import { readAttachments } from './files.js';
import { inviteUrl, SLASH_COMMANDS, startError } from './setup.js';
import { DEFAULT_DISCORD_API_URL } from './descriptor.js';
import { decodeKey, refFor, targetChannel } from './keys.js';
import { discordAnswer, escapeDiscord, DISCORD_TEXT_LIMIT } from './markdown.js';

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

const SEEN_MAX = 5000;
const THREADS_MAX = 20000;
const NO_MENTIONS: { parse: [] } = { parse: [] };

export function createDiscordAdapter(opts: DiscordAdapterOptions): Adapter {
  const token = opts.token.trim().replace(/^Bot\s+/i, '');
  if (token === '') throw new Error('DISCORD_TOKEN is empty');
  const apiUrl = (opts.apiUrl ?? DEFAULT_DISCORD_API_URL).replace(/\/+$/, '');
  const log = opts.log ?? prefixedLog(fallbackLog, '[discord] ');
  const statusInterval = opts.statusEditIntervalMs ?? 1200;
  const maxBytes = opts.maxAttachmentBytes ?? 5 * 1024 * 1024;
  const scrub = (s: string): string => s.split(token).join('<token>');
  const describe = (err: unknown): string => {
    if (err instanceof DiscordAPIError) return scrub(`${err.status} ${err.code}: ${err.message}`);
    return scrub((err as { message?: string }).message ?? String(err));
  };

  let client: Client | undefined;
  let sink: AdapterSink | undefined;
  let started = false;
  let botUserId = '';
  let applicationId = '';
  const seen = new Recent(SEEN_MAX);
  /** Threads the bot answers in: follow-ups there are addressed to it. */
  const threads = new Recent(THREADS_MAX);
  /** Threads being started: output to them waits until they exist. */
  const pendingThreads = new Map<string, Promise<void>>();

  // Outbound calls have their own REST client: it outlives stop(), so a run finishing during the
  // shutdown grace period still delivers its answer (only the gateway, the input, is closed).
  const api = new REST({ api: apiUrl, retries: 2, timeout: 15_000, globalRequestsPerSecond: opts.requestsPerSecond ?? 50 }).setToken(token);
  const rest = () => api;

  // ---- inbound ------------------------------------------------------------------------------

  const normalize = (raw: string): { text: string; mentioned: boolean } => {
    const re = new RegExp(`<@!?${botUserId}>`, 'g');
    const mentioned = botUserId !== '' && re.test(raw);
    let text = raw.replace(re, ' ').replace(/\s+/g, ' ').trim();
    text = text.replace(/^\/([a-z]+)@\S+/i, '/$1');
    return { text, mentioned };
  };

  function threadName(text: string): string {
    const first = text.replace(/\s+/g, ' ').trim();
    return cutText(first === '' ? 'Gatehouse' : first, 90);
  }

  async function onMessage(message: Message): Promise<void> {
    if (!sink) return;
    if (message.author.bot || message.author.id === botUserId || message.system || message.webhookId) return;
    if (message.type !== MessageType.Default && message.type !== MessageType.Reply) return;
    if (seen.has(message.id)) return;
    seen.add(message.id);
    const { text, mentioned } = normalize(message.content);
    let repliesToBot = message.mentions.repliedUser?.id === botUserId && botUserId !== '';
    const guildId = message.guildId;
    let ref: ConversationRef;
    let newThread: { parent: string; id: string; name: string } | undefined;
    if (!guildId) {
      ref = refFor('dm', message.channelId);
    } else if (message.channel.isThread()) {
      const thread = message.channel;
      const parent = thread.parentId;
      if (!parent) return;
      const ours = thread.ownerId === botUserId || threads.has(thread.id);
      if (!mentioned && !repliesToBot && !ours) return; // chatter in a thread the bot is not part of
      threads.add(thread.id);
      repliesToBot ||= ours; // a thread the bot answers in is a conversation with it
      ref = refFor(guildId, parent, thread.id);
    } else {
      if (!mentioned && !repliesToBot) return; // a channel message not for the bot: not even passed on
      const inThread = opts.replyInThread?.(guildId, message.channelId) ?? true;
      if (inThread) {
        // a thread started from a message has that message's id
        newThread = { parent: message.channelId, id: message.id, name: threadName(text) };
        ref = refFor(guildId, message.channelId, message.id);
      } else {
        ref = refFor(guildId, message.channelId);
      }
    }
    const { attachments, refused } = await readFiles(message);
    if (text === '' && attachments.length === 0 && refused.length === 0) return;
    const member = message.member;
    const sender: Sender = {
      id: message.author.id,
      name: member?.displayName ?? message.author.globalName ?? message.author.username,
      ...(member ? { roles: rolesOf(member, guildId) } : {}),
    };
    const msg: InboundMessage = {
      platform: 'discord',
      conversation: ref,
      sender,
      text: withUnreadNotes(text, refused),
      attachments,
      isDirect: !guildId,
      mentionsBot: mentioned,
      repliesToBot,
      eventId: `discord:${message.id}`,
    };
    let release: (() => void) | undefined;
    if (newThread) {
      const t = newThread.id;
      pendingThreads.set(t, new Promise<void>((r) => (release = r)));
    }
    try {
      await deliverMessage({
        sink,
        msg,
        refused,
        reply: (t) => postPlain(ref, t),
        log,
        describe,
        label: message.id,
        afterCore: async (result) => {
          if (newThread && (result.accepted || result.reply)) {
            try {
              await rest().post(Routes.threads(newThread.parent, newThread.id), { body: { name: newThread.name, auto_archive_duration: 1440 } });
              threads.add(newThread.id);
            } catch (err) {
              // Without a thread (no Create Public Threads permission) the answer goes in the channel.
              log('warn', `could not start a thread in ${newThread.parent} (Create Public Threads permission?): ${describe(err)}`);
            }
          }
          if (release) {
            release();
            release = undefined;
          }
        },
      });
    } finally {
      release?.();
      if (newThread) pendingThreads.delete(newThread.id);
    }
  }

  function rolesOf(member: unknown, guildId: string | null): string[] {
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

  const readFiles = (message: Message) => readAttachments(message.attachments.values(), maxBytes, (level, m) => log(level, scrub(m)));

  /** The conversation an interaction happened in. */
  function refOfInteraction(i: Interaction): ConversationRef | undefined {
    if (!i.channelId) return undefined;
    if (!i.guildId) return refFor('dm', i.channelId);
    const ch = i.channel;
    if (ch && ch.isThread() && ch.parentId) return refFor(i.guildId, ch.parentId, ch.id);
    return refFor(i.guildId, i.channelId);
  }

  function senderOf(i: Interaction): Sender {
    const member = i.member as { displayName?: string; nick?: string | null } | null;
    const name = member?.displayName ?? member?.nick ?? i.user.globalName ?? i.user.username;
    const roles = rolesOf(i.member, i.guildId);
    return { id: i.user.id, ...(name ? { name } : {}), ...(roles.length > 0 ? { roles } : {}) };
  }

  async function onCommand(i: ChatInputCommandInteraction): Promise<void> {
    const name = i.commandName.toLowerCase();
    const word = SLASH_COMMANDS.some((c) => c.name === name) ? name : 'help';
    const ephemeral = word === 'help';
    try {
      await i.deferReply(ephemeral ? { flags: MessageFlags.Ephemeral } : {});
    } catch (err) {
      log('warn', `could not acknowledge /${word}: ${describe(err)}`);
      return;
    }
    const ref = refOfInteraction(i);
    let reply = 'Gatehouse is not ready here yet; try again in a moment.';
    if (sink && ref) {
      try {
        const r = await sink.message({
          platform: 'discord',
          conversation: ref,
          sender: senderOf(i),
          text: `/${word}`,
          attachments: [],
          isDirect: !i.guildId,
          mentionsBot: true,
          eventId: `discord:cmd:${i.id}`,
        });
        reply = r.reply ?? (r.accepted ? 'Done.' : 'Nothing to do.');
      } catch (err) {
        log('error', `/${word} failed: ${describe(err)}`);
        reply = SOMETHING_WENT_WRONG;
      }
    }
    try {
      await i.editReply({ content: cutText(escapeDiscord(reply), DISCORD_TEXT_LIMIT), allowedMentions: NO_MENTIONS });
    } catch (err) {
      log('warn', `could not answer /${word}: ${describe(err)}`);
    }
  }

  async function onComponent(i: ButtonInteraction | StringSelectMenuInteraction): Promise<void> {
    const values = i.isStringSelectMenu() ? i.values : undefined;
    const tok = tokenOf(i.customId, values);
    const notify = async (text: string) => {
      try {
        await i.followUp({ content: cutText(escapeDiscord(text), DISCORD_TEXT_LIMIT), flags: MessageFlags.Ephemeral, allowedMentions: NO_MENTIONS });
      } catch (err) {
        log('warn', `could not tell ${i.user.id} privately: ${describe(err)}`);
      }
    };
    try {
      // ack first: Discord wants it within 3 s; the card itself is edited through the broker
      await i.deferUpdate();
    } catch (err) {
      log('warn', `could not acknowledge a click: ${describe(err)}`);
      return;
    }
    const ref = refOfInteraction(i);
    await deliverClick({
      sink,
      event:
        ref && tok !== undefined && tok !== ''
          ? () => ({ platform: 'discord', conversation: ref, token: tok, user: senderOf(i), eventId: `discord:action:${i.id}` })
          : undefined,
      notify: async (text) => {
        if (text) await notify(text);
      },
      log,
      describe,
    });
  }

  // ---- outbound -----------------------------------------------------------------------------

  async function channelFor(ref: ConversationRef): Promise<string> {
    if (ref.threadId !== undefined) {
      const pending = pendingThreads.get(ref.threadId);
      if (pending) await pending;
    }
    return targetChannel(ref);
  }

  const outbound = outboundCaller(log, describe);

  async function send(ref: ConversationRef, body: Record<string, unknown>): Promise<string> {
    const channel = await channelFor(ref);
    const r = (await rest().post(Routes.channelMessages(channel), { body: { ...body, allowed_mentions: NO_MENTIONS } })) as { id?: string };
    if (!r.id) throw new Error('Discord returned no message id');
    return r.id;
  }

  async function postPlain(ref: ConversationRef, text: string): Promise<void> {
    for (const piece of chunkText(escapeDiscord(text), DISCORD_TEXT_LIMIT)) {
      await outbound('sending a message', ref, () => send(ref, { content: piece }));
    }
  }

  const classify = (err: unknown): StatusFailure => {
    if (err instanceof DiscordAPIError && err.status >= 500) return { kind: 'retry', afterMs: statusInterval };
    if (!(err instanceof DiscordAPIError) && (err as { name?: string }).name !== 'Error') return { kind: 'retry', afterMs: statusInterval };
    return { kind: 'fatal' };
  };

  const progress = new ProgressView({
    createStatus: (ref) =>
      new StatusMessage(
        {
          send: (text) => send(ref, { content: escapeDiscord(text) }),
          edit: async (id, text) => {
            await rest().patch(Routes.channelMessage(await channelFor(ref), id), { body: { content: escapeDiscord(text), allowed_mentions: NO_MENTIONS } });
          },
          remove: async (id) => {
            await rest().delete(Routes.channelMessage(await channelFor(ref), id));
          },
        },
        { intervalMs: statusInterval, classify, log, describe, platformName: 'Discord' },
      ),
    typing: (ref) => {
      void channelFor(ref)
        .then((ch) => rest().post(Routes.channelTyping(ch)))
        .catch((err: unknown) => log('warn', `typing in ${ref.key}: ${describe(err)}`));
    },
    typingIntervalMs: 8000,
  });

  const { render, postCard, updateCard } = composeOutput({
    platformName: 'Discord',
    outbound,
    progress,
    answerPieces: discordAnswer,
    sendAnswer: (ref, piece) => send(ref, { content: piece }),
    postPlain,
    renderCard: renderDiscordCard,
    sendLead: async (ref, lead) => {
      for (const piece of chunkText(lead, DISCORD_TEXT_LIMIT)) await send(ref, { content: piece });
    },
    sendCard: (ref, m) => send(ref, { content: m.content, components: m.components }),
    isHandle: (handle) => /^\d+$/.test(handle),
    handleKind: 'a message id',
    editCard: async (ref, handle, m) => {
      await rest().patch(Routes.channelMessage(await channelFor(ref), handle), {
        body: { content: m.content, components: m.components, allowed_mentions: NO_MENTIONS },
      });
    },
  });

  // ---- lifecycle ----------------------------------------------------------------------------

  function onInteraction(i: Interaction): void {
    if (i.isChatInputCommand()) void onCommand(i);
    else if (i.isButton() || i.isStringSelectMenu()) void onComponent(i);
  }

  async function registerCommands(c: Client<true>): Promise<void> {
    const guilds = opts.commandGuilds?.() ?? [];
    const body = SLASH_COMMANDS.map((cmd) => ({ name: cmd.name, description: cmd.description, type: 1 }));
    const targets = guilds.length > 0 ? guilds.map((g) => Routes.applicationGuildCommands(applicationId, g)) : [Routes.applicationCommands(applicationId)];
    for (const route of targets) {
      try {
        await c.rest.put(route, { body });
      } catch (err) {
        log(
          'warn',
          `could not register the slash commands (${route}): ${describe(err)}; /stop /reset /help still work as message text (was the bot invited with the applications.commands scope?)`,
        );
      }
    }
  }

  /** The gateway: the connection only one process may hold (each session would get every event). */
  async function openGateway(): Promise<void> {
    const c = new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent, GatewayIntentBits.DirectMessages],
      partials: [Partials.Channel],
      rest: { api: apiUrl, retries: 2, timeout: 15_000, globalRequestsPerSecond: opts.requestsPerSecond ?? 50 },
      allowedMentions: NO_MENTIONS,
    });
    let connected = false;
    let closeCode: number | undefined;
    let fail: ((e: unknown) => void) | undefined;
    const fatal = new Promise<never>((_, reject) => (fail = reject));
    fatal.catch(() => {});
    c.on(Events.ShardDisconnect, (ev: { code: number }) => {
      closeCode = ev.code;
      if (!connected) fail?.(new Error(`gateway closed with ${ev.code}`));
      else if (client === c) log('error', `the Discord gateway closed for good (code ${ev.code}); restart Gatehouse`);
    });
    c.on(Events.ShardError, (err: Error) => log('warn', `gateway: ${describe(err)}`));
    c.on(Events.ShardResume, () => log('info', 'gateway connection resumed'));
    c.on(Events.Error, (err: Error) => log('error', describe(err)));
    c.on(Events.MessageCreate, (m) => void onMessage(m).catch((err: unknown) => log('error', `message ${m.id}: ${describe(err)}`)));
    c.on(Events.InteractionCreate, onInteraction);
    const ready = new Promise<Client<true>>((resolve) => c.once(Events.ClientReady, resolve));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no READY from the Discord gateway in time')), opts.readyTimeoutMs ?? 30_000);
    });
    try {
      await Promise.race([c.login(token), fatal, timeout]);
      const r = await Promise.race([ready, fatal, timeout]);
      botUserId = r.user.id;
      applicationId = r.application.id;
      connected = true;
      client = c;
      await registerCommands(r);
    } catch (err) {
      if (client === c) client = undefined;
      await c.destroy().catch(() => {});
      throw startError(err, closeCode, describe(err));
    } finally {
      clearTimeout(timer);
    }
    log('info', `connected to Discord as ${botUserId} (application ${applicationId})`);
    log('info', `invite the bot to a server: ${inviteUrl(applicationId)}`);
  }

  async function closeGateway(): Promise<void> {
    const c = client;
    client = undefined;
    await c?.destroy().catch((err: unknown) => log('warn', `stopping: ${describe(err)}`));
  }

  const held = heldConnection('Discord gateway', { open: openGateway, close: closeGateway, up: () => client?.ws.status === Status.Ready });

  async function start(s: AdapterSink, startOpts: AdapterStartOptions = {}): Promise<void> {
    if (started) throw new Error('the Discord adapter is already started');
    sink = s;
    if (startOpts.holdConnection !== false) {
      try {
        await held.open();
      } catch (err) {
        sink = undefined;
        throw err;
      }
    } else {
      log('info', 'the Discord gateway is held by another replica; sending only');
    }
    started = true;
  }

  async function stop(): Promise<void> {
    if (!started) return;
    started = false;
    await held.close();
    sink = undefined;
    await progress.stopAll();
  }

  return {
    platform: 'discord',
    streamsText: false,
    start,
    stop,
    held,
    render,
    postCard,
    updateCard,
    openDirect: (userId) => openDiscordDirect(rest(), userId),
    postText: postPlain,
    decodeKey,
  };
}
