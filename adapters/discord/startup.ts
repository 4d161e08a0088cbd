/**
 * The Discord gateway and its start-up: login with the intents, READY, the slash commands, the invite
 * URL, and start-up errors that say what to do.
 *
 * Contract:
 * - `createGateway(ctx, opts)` gives the adapter's `held` connection (open, close, up). open() logs in
 *   with the intents Guilds, GuildMessages, MessageContent, DirectMessages and Partials.Channel (DMs),
 *   REST at `apiUrl` (the gateway URL comes from GET /gateway/bot there), waits for READY at most
 *   `readyTimeoutMs`, sets ctx.identity, then registers /stop /reset /help (per guild in
 *   `commandGuilds()`, else globally; a failure is a warning: the words still work as text) and logs
 *   the invite URL (bot + applications.commands, `INVITE_PERMISSIONS`). A failed open destroys the
 *   client and throws `startError`. Events go to `onMessage` / `onInteraction`. up: the shard is Ready.
 * - `startError` never includes the token (the caller's `described` text is already scrubbed); a
 *   disallowed privileged intent (close 4014) names the Message Content Intent switch in the
 *   Developer Portal; a rejected token (REST 401, close 4004) says where to get a new one.
 */
import { Client, Events, GatewayIntentBits, type Interaction, type Message, PermissionsBitField, Partials, Routes, Status } from 'discord.js';
import { AdapterError } from '../kit/errors.js';
import { type DiscordContext, NO_MENTIONS } from './context.js';

/** View Channels, Send Messages, Send Messages in Threads, Create Public Threads, Read Message History, Embed Links, Attach Files. */
const INVITE_PERMISSIONS = PermissionsBitField.resolve([
  'ViewChannel',
  'SendMessages',
  'SendMessagesInThreads',
  'CreatePublicThreads',
  'ReadMessageHistory',
  'EmbedLinks',
  'AttachFiles',
]).toString();

function inviteUrl(applicationId: string): string {
  return `https://discord.com/oauth2/authorize?client_id=${applicationId}&scope=bot%20applications.commands&permissions=${INVITE_PERMISSIONS}`;
}

export const SLASH_COMMANDS = [
  { name: 'stop', description: 'Cancel the current run here' },
  { name: 'reset', description: 'Start a new conversation here (forget what was said)' },
  { name: 'help', description: 'What this bot can do, and its commands' },
] as const;

function startError(err: unknown, closeCode: number | undefined, described: string): Error {
  const e = err as { code?: unknown; status?: number; message?: string };
  if (closeCode === 4014 || e.code === 'DisallowedIntents' || /disallowed intents/i.test(e.message ?? '')) {
    return new AdapterError(
      'start_failed',
      'Discord refused the Message Content Intent (gateway close 4014): open the Discord Developer Portal > your application > Bot > ' +
        'Privileged Gateway Intents, turn on "Message Content Intent", save, and start again',
      { cause: err },
    );
  }
  if (closeCode === 4004 || e.code === 'TokenInvalid' || e.status === 401 || /authentication failed/i.test(e.message ?? '')) {
    return new AdapterError(
      'start_failed',
      'DISCORD_TOKEN was rejected by Discord (invalid token): copy a new one from the Developer Portal > your application > Bot > Reset Token',
      { cause: err },
    );
  }
  if (closeCode === 4013)
    return new AdapterError(
      'start_failed',
      'Discord refused the gateway intents (close 4013): this build asks for Guilds, GuildMessages, MessageContent and DirectMessages',
      { cause: err },
    );
  return new AdapterError('start_failed', `Discord start failed: ${described} (check DISCORD_API_URL and the network)`, { cause: err });
}

export interface GatewayOptions {
  token: string;
  apiUrl: string;
  /** REST requests a second (discord.js's global limiter). */
  requestsPerSecond: number;
  /** How long open() waits for the gateway's READY. */
  readyTimeoutMs: number;
  /** Guilds to register the slash commands in (empty: globally). */
  commandGuilds: () => string[];
  onMessage: (m: Message) => Promise<void>;
  onInteraction: (i: Interaction) => void;
}

/** The gateway: the connection only one process may hold (each session would get every event). */
export function createGateway(ctx: DiscordContext, opts: GatewayOptions): { open(): Promise<void>; close(): Promise<void>; up(): boolean } {
  const { log, describeError } = ctx;
  let client: Client | undefined;

  async function registerCommands(c: Client<true>): Promise<void> {
    const applicationId = ctx.identity.applicationId;
    const guilds = opts.commandGuilds();
    const body = SLASH_COMMANDS.map((cmd) => ({ name: cmd.name, description: cmd.description, type: 1 }));
    const targets = guilds.length > 0 ? guilds.map((g) => Routes.applicationGuildCommands(applicationId, g)) : [Routes.applicationCommands(applicationId)];
    for (const route of targets) {
      try {
        await c.rest.put(route, { body });
      } catch (err) {
        log(
          'warn',
          `could not register the slash commands (${route}): ${describeError(err)}; /stop /reset /help still work as message text (was the bot invited with the applications.commands scope?)`,
        );
      }
    }
  }

  async function open(): Promise<void> {
    const c = new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent, GatewayIntentBits.DirectMessages],
      partials: [Partials.Channel],
      rest: { api: opts.apiUrl, retries: 2, timeout: 15_000, globalRequestsPerSecond: opts.requestsPerSecond },
      allowedMentions: NO_MENTIONS,
    });
    let connected = false;
    let closeCode: number | undefined;
    let fail: ((e: unknown) => void) | undefined;
    const fatal = new Promise<never>((_, reject) => (fail = reject));
    fatal.catch(() => {});
    c.on(Events.ShardDisconnect, (ev: { code: number }) => {
      closeCode = ev.code;
      if (!connected) fail?.(new AdapterError('start_failed', `gateway closed with ${ev.code}`));
      else if (client === c) log('error', `the Discord gateway closed for good (code ${ev.code}); restart Gatehouse`);
    });
    c.on(Events.ShardError, (err: Error) => log('warn', `gateway: ${describeError(err)}`));
    c.on(Events.ShardResume, () => log('info', 'gateway connection resumed'));
    c.on(Events.Error, (err: Error) => log('error', describeError(err)));
    c.on(Events.MessageCreate, (m) => void opts.onMessage(m).catch((err: unknown) => log('error', `message ${m.id}: ${describeError(err)}`)));
    c.on(Events.InteractionCreate, opts.onInteraction);
    const ready = new Promise<Client<true>>((resolve) => c.once(Events.ClientReady, resolve));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AdapterError('start_failed', 'no READY from the Discord gateway in time')), opts.readyTimeoutMs);
    });
    try {
      await Promise.race([c.login(opts.token), fatal, timeout]);
      const r = await Promise.race([ready, fatal, timeout]);
      ctx.identity = { botUserId: r.user.id, applicationId: r.application.id };
      connected = true;
      client = c;
      await registerCommands(r);
    } catch (err) {
      if (client === c) client = undefined;
      await c.destroy().catch(() => {});
      throw startError(err, closeCode, describeError(err));
    } finally {
      clearTimeout(timer);
    }
    const { botUserId, applicationId } = ctx.identity;
    log('info', `connected to Discord as ${botUserId} (application ${applicationId})`);
    log('info', `invite the bot to a server: ${inviteUrl(applicationId)}`);
  }

  async function close(): Promise<void> {
    const c = client;
    client = undefined;
    await c?.destroy().catch((err: unknown) => log('warn', `stopping: ${describeError(err)}`));
  }

  return { open, close, up: () => client?.ws.status === Status.Ready };
}
