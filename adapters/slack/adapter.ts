/**
 * The Slack adapter (@slack/bolt 5). adapters/slack/ is the only folder that imports Bolt / the Slack
 * SDK. This file builds the app and owns its lifecycle; the work is split by responsibility:
 * inbound.ts (events, files, the slash command), interactivity.ts (clicks, user groups), output.ts
 * (answers, progress, cards), startup.ts (start-up checks and errors).
 *
 * Contract (beyond adapters/types.ts):
 * - Modes: Socket Mode when `appToken` (xapp-…) is set; otherwise HTTP mode with `signingSecret`:
 *   events, interactivity and the slash command arrive at POST /slack/events on the bot's HTTP server
 *   (`httpRoutes()`; 503 before start), Bolt's HTTPReceiver checks the signature and timestamp (401
 *   otherwise). `apiUrl` (SLACK_API_URL) points the Web API and Socket Mode's apps.connections.open
 *   elsewhere.
 * - start(): auth.test (a bad bot token or a missing scope fails the start with a message that says
 *   what to do, never a token), then in Socket Mode the app token is checked (startup.ts) and the
 *   socket connects; HTTP mode only waits for requests. A 429 at start is waited out per Retry-After.
 * - Socket Mode is the adapter's `held` connection (adapters/types.ts): with `holdConnection: false`
 *   start() readies the Web API only and `held.open()` connects later (the elected replica). HTTP mode
 *   has none: every replica takes the requests that reach it.
 * - Every event, click and slash command is acked first (Slack wants it within 3 s), then handled.
 * - Conversations: a DM is `slack:<team>:<channel>` (a thread in it, as in AI assistant apps,
 *   `slack:<team>:<channel>:<thread_ts>`); in a channel, a mention is answered in the thread of the
 *   mentioning message and that thread is the conversation `slack:<team>:<channel>:<thread_ts>`.
 *   Later messages in that thread are addressed to the bot without a new mention (`repliesToBot`)
 *   unless `threadFollowUps(ref)` says no. Bots, edits, joins and other subtypes are ignored; a post
 *   seen twice (retries, repeated event_id or envelope, message + app_mention) is handled once.
 * - Commands: "/stop", "@bot /stop", "/stop@bot" -> "/stop"; the slash command `/gatehouse stop|reset|help`
 *   arrives as "/stop" (…) for the user's last conversation in that channel, answered ephemerally.
 * - Output: answers as mrkdwn cut on the markdown tree; progress as one status message in the thread
 *   (kit StatusMessage, 429 Retry-After honoured by coalescing) and, in an AI assistant app's threads,
 *   the native assistant thread status, and there the answer is streamed (chat.startStream /
 *   appendStream / stopStream, one message per text segment; whole answers elsewhere or when
 *   streaming fails); cards as Block Kit.
 * - A click is passed on with the button's token exactly; the result's notice is an ephemeral
 *   message to the clicker only.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { App, HTTPReceiver, LogLevel, SocketModeReceiver } from '@slack/bolt';
import { WebClient } from '@slack/web-api';
import { heldConnection } from '../kit/held.js';
import { fallbackLog, prefixedLog, type Adapter, type AdapterStartOptions, type ConversationRef, type HttpRoute, type Log } from '../types.js';
import { AdapterError } from '../kit/errors.js';
import { Recent } from '../kit/inbound.js';
import { secretScrubber } from '../kit/secrets.js';
import type { SlackContext } from './context.js';
import { registerInbound } from './inbound.js';
import { registerInteractivity } from './interactivity.js';
import { decodeKey } from './keys.js';
import { createOutput } from './output.js';
import { SlackDirect } from './direct.js';
import { checkAppToken, startError } from './startup.js';

export interface SlackAdapterOptions {
  botToken: string;
  /** Socket Mode when set (xapp-…). */
  appToken?: string;
  /** HTTP mode (no app token): the Events API signing secret. */
  signingSecret?: string;
  /** SLACK_API_URL; default https://slack.com/api/ */
  apiUrl?: string;
  /** The path of the Events API route in HTTP mode; default /slack/events. */
  eventsPath?: string;
  /** Minimum time between edits of a run's status message; default 1200 ms. */
  statusEditIntervalMs?: number;
  /** Default 5 MB. */
  maxAttachmentBytes?: number;
  /** User group ids (S…) bound as `group:<id>` approvers: a clicker's membership is looked up. */
  approverGroups?: () => string[];
  /** How long a group's member list is trusted (how long a removed member can still approve); default 15 s. */
  groupCacheMs?: number;
  /** Someone missing from a cached group re-reads it at most this often; default 0 (every miss re-reads). */
  groupMissRereadMs?: number;
  /** The clock for the group cache (tests). */
  groupClock?: () => number;
  /** Whether later messages in a thread where the bot was mentioned need no new mention; default yes. */
  threadFollowUps?: (ref: ConversationRef) => boolean;
  /** The app is an AI assistant app (thread status) from the start; otherwise detected from assistant_thread_started. */
  assistant?: boolean;
  /** Stream answers with chat.startStream/appendStream/stopStream in AI assistant threads; default true. */
  streamAnswers?: boolean;
  /** Minimum time between appendStream calls of one streamed answer; default 400 ms. */
  streamAppendIntervalMs?: number;
  /** The slash command; default /gatehouse. */
  slashCommand?: string;
  log?: Log;
}

const DEFAULT_SLACK_API_URL = 'https://slack.com/api/';
const ASSISTANT_THREADS_MAX = 20000;

export function createSlackAdapter(opts: SlackAdapterOptions): Adapter & { httpRoutes(): HttpRoute[] } {
  const botToken = opts.botToken.trim();
  const appToken = opts.appToken?.trim();
  if (!botToken.startsWith('xoxb-')) throw new AdapterError('start_failed', 'SLACK_BOT_TOKEN must be a bot token (xoxb-…, from OAuth & Permissions)');
  if (appToken !== undefined && !appToken.startsWith('xapp-')) {
    throw new AdapterError(
      'start_failed',
      'SLACK_APP_TOKEN must be an app-level token (xapp-…, Basic Information > App-Level Tokens, scope connections:write)',
    );
  }
  if (appToken === undefined && !opts.signingSecret) {
    throw new AdapterError('start_failed', 'Slack needs SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP mode at /slack/events)');
  }
  const apiUrl = (opts.apiUrl ?? DEFAULT_SLACK_API_URL).replace(/\/*$/, '/');
  const { scrub, describeError } = secretScrubber([botToken, appToken, opts.signingSecret]);
  const base = opts.log ?? prefixedLog(fallbackLog, '[slack] ');
  const log: Log = (level, msg, fields) => base(level, scrub(msg), fields);
  const eventsPath = opts.eventsPath ?? '/slack/events';
  const slashCommand = opts.slashCommand ?? '/gatehouse';

  const boltLogger = {
    debug: () => {},
    info: () => {},
    warn: (...m: unknown[]) => log('warn', m.map(String).join(' ')),
    error: (...m: unknown[]) => log('error', m.map(String).join(' ')),
    setLevel: () => {},
    getLevel: () => LogLevel.WARN,
    setName: () => {},
  };

  const receiver =
    appToken === undefined
      ? new HTTPReceiver({ signingSecret: opts.signingSecret ?? '', endpoints: eventsPath, logger: boltLogger, unhandledRequestTimeoutMillis: 2500 })
      : undefined;
  // Built here rather than by Bolt, so the socket's state is ours to read (readiness).
  const socket =
    appToken !== undefined
      ? new SocketModeReceiver({
          appToken,
          logger: boltLogger,
          // its own options object: the socket client sets 100 retries on the one it is given
          installerOptions: { clientOptions: { slackApiUrl: apiUrl } },
        })
      : undefined;
  let socketUp = false;
  socket?.client.on('connected', () => (socketUp = true));
  for (const s of ['disconnecting', 'disconnected', 'reconnecting']) socket?.client.on(s, () => (socketUp = false));
  const app = new App({
    token: botToken,
    deferInitialization: true,
    logger: boltLogger,
    clientOptions: { slackApiUrl: apiUrl, retryConfig: { retries: 2, factor: 1, minTimeout: 200, maxTimeout: 1000 } },
    ...(socket ? { socketMode: true, appToken, receiver: socket } : { receiver }),
  } as ConstructorParameters<typeof App>[0]);

  const ctx: SlackContext = {
    // 429: waited out by the SDK per Retry-After (twice at most), then an error
    web: new WebClient(botToken, { slackApiUrl: apiUrl, retryConfig: { retries: 2, factor: 1, minTimeout: 200, maxTimeout: 1000 }, logger: boltLogger }),
    // the status message: a 429 is rejected, not waited on, so the kit coalesces instead
    statusWeb: new WebClient(botToken, { slackApiUrl: apiUrl, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true, logger: boltLogger }),
    botToken,
    log,
    describeError,
    scrub,
    identity: { teamId: '', botUserId: '' },
    sink: undefined,
    assistant: { app: opts.assistant === true, threads: new Recent(ASSISTANT_THREADS_MAX) },
  };

  const output = createOutput(ctx, {
    statusEditIntervalMs: opts.statusEditIntervalMs ?? 1200,
    streamAnswers: opts.streamAnswers ?? true,
    streamAppendIntervalMs: opts.streamAppendIntervalMs ?? 400,
  });
  registerInbound(app, ctx, {
    maxAttachmentBytes: opts.maxAttachmentBytes ?? 5 * 1024 * 1024,
    slashCommand,
    threadFollowUps: opts.threadFollowUps ?? (() => true),
    postPlain: output.postPlain,
  });
  const direct = new SlackDirect(ctx);
  registerInteractivity(app, ctx, {
    ephemeralClicked: (ts, url) => direct.clicked(ts, url),
    approverGroups: opts.approverGroups ?? (() => []),
    groupCacheMs: opts.groupCacheMs ?? 15_000,
    groupMissRereadMs: opts.groupMissRereadMs ?? 0,
    ...(opts.groupClock ? { now: opts.groupClock } : {}),
  });
  app.error(async (err) => {
    log('error', `event failed: ${describeError(err)}`);
  });

  let started = false;

  // Socket Mode is the connection only one process may hold (each would get a share of the events).
  const held =
    appToken !== undefined
      ? heldConnection('Slack Socket Mode', {
          open: async () => {
            await checkAppToken(appToken, apiUrl, ctx, boltLogger);
            await app.start();
          },
          close: async () => {
            try {
              await app.stop();
            } catch (err) {
              log('warn', `stopping Socket Mode: ${describeError(err)}`);
            }
          },
          up: () => socketUp,
        })
      : undefined;

  async function start(s: Parameters<Adapter['start']>[0], startOpts: AdapterStartOptions = {}): Promise<void> {
    if (started) throw new AdapterError('start_failed', 'the Slack adapter is already started');
    try {
      const auth = await ctx.web.auth.test();
      ctx.identity = { teamId: auth.team_id ?? '', botUserId: auth.user_id ?? '' };
      await app.init();
      ctx.sink = s;
      if (held && startOpts.holdConnection !== false) await held.open();
    } catch (err) {
      ctx.sink = undefined;
      throw err instanceof AdapterError || (err instanceof Error && !('data' in err) && !('code' in err)) ? err : startError(err, ctx);
    }
    started = true;
    const mode = appToken === undefined ? `HTTP mode at ${eventsPath}` : held?.up ? 'Socket Mode' : 'Socket Mode held by another replica; sending only';
    log('info', `connected to Slack team ${ctx.identity.teamId} as ${ctx.identity.botUserId} (${mode})`);
  }

  async function stop(): Promise<void> {
    if (!started) return;
    started = false;
    await held?.close();
    ctx.sink = undefined;
    await output.stop();
  }

  return {
    platform: 'slack',
    // true once this is known to be an AI assistant app: its threads stream the answer
    get streamsText() {
      return output.streamsText;
    },
    start,
    stop,
    ...(held ? { held } : {}),
    render: output.render,
    postCard: output.postCard,
    updateCard: (ref, handle, card) => (direct.isEphemeral(handle) ? direct.update(handle, card) : output.updateCard(ref, handle, card)),
    postText: output.postPlain,
    decodeKey,
    openDirect: (userId) => direct.openDirect(userId),
    userLabel: (userId) => direct.userLabel(userId),
    postEphemeralCard: (ref, userId, card) => direct.postEphemeralCard(ref, userId, card),
    httpRoutes(): HttpRoute[] {
      if (!receiver) return [];
      return [
        {
          method: 'POST',
          path: eventsPath,
          handler: (req: IncomingMessage, res: ServerResponse) => {
            if (!started) {
              res.writeHead(503).end('slack adapter not started');
              return;
            }
            receiver.requestListener(req, res);
          },
        },
      ];
    },
  };
}
