/**
 * The Slack adapter (@slack/bolt 5). The only module in the project that imports Bolt / the Slack SDK.
 *
 * Contract (beyond adapters/types.ts):
 * - Modes: Socket Mode when `appToken` (xapp-…) is set; otherwise HTTP mode with `signingSecret`:
 *   events and interactivity arrive at POST /slack/events on the bot's HTTP server (`httpRoutes()`),
 *   Bolt's HTTPReceiver checks the signature and timestamp (401 otherwise). `apiUrl` (SLACK_API_URL)
 *   points the Web API and Socket Mode's apps.connections.open elsewhere.
 * - start(): auth.test (a bad token fails start with a message that says what to do, never the
 *   token), then Socket Mode connects (HTTP mode only waits for requests).
 * - Every event and click is acked first (Slack wants it within 3 s), then handled.
 * - Conversations: a DM is `slack:<team>:<channel>`; in a channel, a mention is answered in the
 *   thread of the mentioning message and that thread is the conversation
 *   `slack:<team>:<channel>:<thread_ts>`. Later messages in a thread where the bot was mentioned are
 *   addressed to it without a new mention (`repliesToBot`). Messages from bots, edits, joins and other
 *   subtypes are ignored; a message seen twice (retries, message + app_mention of one post) is
 *   handled once.
 * - Commands: "/stop", "@bot /stop", "/stop@bot" -> "/stop"; the slash command `/gatehouse stop`
 *   arrives as "/stop" too.
 * - Output: answers as mrkdwn cut on the markdown tree; progress as one status message in the thread
 *   (kit StatusMessage, 429 Retry-After honoured by coalescing); cards as Block Kit.
 * - A click is passed on with the button's token exactly; the result's notice is an ephemeral
 *   message to the clicker only.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { App, HTTPReceiver, LogLevel } from '@slack/bolt';
import { WebClient, ErrorCode } from '@slack/web-api';
import type { AgentEvent, Card } from '../../agent/events.js';
import { classifyAttachment, cutText, decodeText, overLimit } from '../kit/attachments.js';
import { ProgressView } from '../kit/progress.js';
import { StatusMessage } from '../kit/status.js';
import type { StatusFailure } from '../kit/status.js';
import { chunkText } from '../kit/text.js';
import type { Adapter, AdapterSink, Attachment, ConversationRef, HttpRoute, InboundMessage } from '../types.js';
import { ACTION_PREFIX, renderSlackCard } from './blocks.js';
import { decodeKey, refFor } from './keys.js';
import { escapeMrkdwn, slackAnswer } from './mrkdwn.js';

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
  /** How long a group's member list is trusted; default 60 s (a miss re-reads it after 5 s). */
  groupCacheMs?: number;
  /** The slash command; default /gatehouse. */
  slashCommand?: string;
  log?: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

export const DEFAULT_SLACK_API_URL = 'https://slack.com/api/';
const SEEN_MAX = 5000;
const THREADS_MAX = 20000;

interface SlackFile {
  name?: string;
  mimetype?: string;
  size?: number;
  url_private?: string;
  url_private_download?: string;
}

interface SlackMessageEvent {
  type: string;
  subtype?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  channel: string;
  channel_type?: string;
  team?: string;
  files?: SlackFile[];
}

/** A bounded set: the oldest entries go first. */
class Recent {
  private readonly set = new Set<string>();
  constructor(private readonly max: number) {}
  has(k: string): boolean {
    return this.set.has(k);
  }
  add(k: string): void {
    this.set.add(k);
    if (this.set.size > this.max) this.set.delete(this.set.values().next().value as string);
  }
}

export function createSlackAdapter(opts: SlackAdapterOptions): Adapter & { httpRoutes(): HttpRoute[] } {
  const botToken = opts.botToken.trim();
  const appToken = opts.appToken?.trim();
  if (!botToken.startsWith('xoxb-')) throw new Error('SLACK_BOT_TOKEN must be a bot token (xoxb-…, from OAuth & Permissions)');
  if (appToken !== undefined && !appToken.startsWith('xapp-')) {
    throw new Error('SLACK_APP_TOKEN must be an app-level token (xapp-…, Basic Information > App-Level Tokens, scope connections:write)');
  }
  if (appToken === undefined && !opts.signingSecret) {
    throw new Error('Slack needs SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP mode at /slack/events)');
  }
  const apiUrl = (opts.apiUrl ?? DEFAULT_SLACK_API_URL).replace(/\/*$/, '/');
  const log = opts.log ?? ((level, msg) => console[level === 'info' ? 'log' : level](`[slack] ${msg}`));
  const statusInterval = opts.statusEditIntervalMs ?? 1200;
  const maxBytes = opts.maxAttachmentBytes ?? 5 * 1024 * 1024;
  const eventsPath = opts.eventsPath ?? '/slack/events';
  const slash = opts.slashCommand ?? '/gatehouse';
  const secrets = [botToken, appToken, opts.signingSecret].filter((s): s is string => !!s);
  const scrub = (s: string): string => secrets.reduce((acc, t) => acc.split(t).join('<secret>'), s);
  const describe = (err: unknown): string => {
    const e = err as { code?: string; data?: { error?: string; needed?: string }; message?: string };
    const detail = e.data?.error ? `${e.data.error}${e.data.needed ? ` (needs ${e.data.needed})` : ''}` : (e.message ?? String(err));
    return scrub(detail);
  };

  const boltLogger = {
    debug: () => {},
    info: () => {},
    warn: (...m: unknown[]) => log('warn', scrub(m.map(String).join(' '))),
    error: (...m: unknown[]) => log('error', scrub(m.map(String).join(' '))),
    setLevel: () => {},
    getLevel: () => LogLevel.WARN,
    setName: () => {},
  };

  const receiver = appToken === undefined
    ? new HTTPReceiver({ signingSecret: opts.signingSecret ?? '', endpoints: eventsPath, logger: boltLogger, unhandledRequestTimeoutMillis: 2500 })
    : undefined;
  const app = new App({
    token: botToken,
    deferInitialization: true,
    logger: boltLogger,
    clientOptions: { slackApiUrl: apiUrl, retryConfig: { retries: 2, factor: 1, minTimeout: 200, maxTimeout: 1000 } },
    ...(appToken !== undefined
      ? {
          socketMode: true,
          appToken,
          // its own options object: the socket client sets 100 retries on the one it is given
          installerOptions: { clientOptions: { slackApiUrl: apiUrl } },
        }
      : { receiver }),
  } as ConstructorParameters<typeof App>[0]);
  /** Outbound Web API calls (429 waited out by the SDK, per Retry-After). */
  const web = new WebClient(botToken, { slackApiUrl: apiUrl, retryConfig: { retries: 2, factor: 1, minTimeout: 200, maxTimeout: 1000 }, logger: boltLogger });
  /** The status message: a 429 is rejected, not waited on, so the kit coalesces instead. */
  const statusWeb = new WebClient(botToken, { slackApiUrl: apiUrl, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true, logger: boltLogger });

  let sink: AdapterSink | undefined;
  let started = false;
  let teamId = '';
  let botUserId = '';
  const seen = new Recent(SEEN_MAX);
  /** Threads the bot was mentioned in: follow-ups there are addressed to it. */
  const threads = new Recent(THREADS_MAX);

  // ---- user groups (group:<id> approvers) ---------------------------------------------------

  const groupCacheMs = opts.groupCacheMs ?? 60_000;
  const groups = new Map<string, { members: Set<string>; at: number }>();
  async function membersOf(group: string, user: string): Promise<Set<string>> {
    const cached = groups.get(group);
    const age = cached ? Date.now() - cached.at : Infinity;
    // fresh enough, or a hit; a miss re-reads (someone just added) but not more than every 5 s
    if (cached && (age < 5_000 || (age < groupCacheMs && cached.members.has(user)))) return cached.members;
    try {
      const r = await web.usergroups.users.list({ usergroup: group });
      const members = new Set(r.users ?? []);
      groups.set(group, { members, at: Date.now() });
      return members;
    } catch (err) {
      log('warn', `could not read user group ${group} (usergroups:read scope?): ${describe(err)}`);
      return cached?.members ?? new Set();
    }
  }
  async function groupsOfUser(user: string): Promise<string[]> {
    const wanted = opts.approverGroups?.() ?? [];
    const out: string[] = [];
    for (const g of wanted) if ((await membersOf(g, user)).has(user)) out.push(g);
    return out;
  }

  // ---- inbound ------------------------------------------------------------------------------

  const normalize = (raw: string): { text: string; mentioned: boolean } => {
    const mention = `<@${botUserId}>`;
    const mentioned = botUserId !== '' && raw.includes(mention);
    let text = raw.split(mention).join(' ').replace(/\s+/g, ' ').trim();
    text = text.replace(/^\/([a-z]+)@\S+/i, '/$1');
    return { text: text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'), mentioned };
  };

  async function onMessage(ev: SlackMessageEvent, eventId: string, viaMention: boolean): Promise<void> {
    if (!sink) return;
    if (ev.subtype !== undefined && ev.subtype !== 'file_share' && ev.subtype !== 'thread_broadcast') return;
    if (ev.bot_id !== undefined || ev.user === undefined || ev.user === botUserId) return;
    const once = `${ev.channel}:${ev.ts}`;
    if (seen.has(once)) return;
    seen.add(once);
    const team = ev.team ?? teamId;
    const isDirect = ev.channel_type === 'im' || ev.channel.startsWith('D');
    const { text, mentioned } = normalize(ev.text ?? '');
    const mentionsBot = viaMention || mentioned;
    let ref: ConversationRef;
    let repliesToBot = false;
    if (isDirect) {
      ref = refFor(team, ev.channel);
    } else {
      const thread = ev.thread_ts ?? ev.ts;
      const threadKey = `${ev.channel}:${thread}`;
      if (mentionsBot) threads.add(threadKey);
      else if (ev.thread_ts !== undefined && threads.has(threadKey)) repliesToBot = true;
      else return; // a channel message not for the bot: not even passed on
      ref = refFor(team, ev.channel, thread);
    }
    const { attachments, refused } = await readFiles(ev.files ?? []);
    if (text === '' && attachments.length === 0 && refused.length === 0) return;
    const msg: InboundMessage = {
      platform: 'slack',
      conversation: ref,
      sender: { id: ev.user },
      text: [text, ...refused.map((r) => `[attachment not read: ${r}]`)].filter((s) => s !== '').join('\n'),
      attachments,
      isDirect,
      mentionsBot,
      repliesToBot,
      eventId,
    };
    let result;
    try {
      result = await sink.message(msg);
    } catch (err) {
      log('error', `the core failed on message ${eventId}: ${describe(err)}`);
      return;
    }
    try {
      if (result.accepted && refused.length > 0) await postPlain(ref, refused.map((r) => `Not read: ${r}.`).join('\n'));
      if (result.reply) await postPlain(ref, result.reply);
    } catch (err) {
      log('error', `could not reply in ${ref.key}: ${describe(err)}`);
    }
  }

  async function readFiles(files: SlackFile[]): Promise<{ attachments: Attachment[]; refused: string[] }> {
    const attachments: Attachment[] = [];
    const refused: string[] = [];
    for (const f of files) {
      const name = f.name ?? 'file';
      const c = classifyAttachment({ name, mimeType: f.mimetype, size: f.size }, maxBytes);
      if (c.kind === 'refused') {
        refused.push(c.reason);
        continue;
      }
      const url = f.url_private_download ?? f.url_private;
      if (!url) {
        refused.push(`${name} could not be downloaded from Slack`);
        continue;
      }
      const got = await download(url, name);
      if (typeof got === 'string') refused.push(got);
      else if (c.kind === 'image') attachments.push({ kind: 'image', name, mimeType: c.mimeType, data: got.toString('base64') });
      else {
        const text = decodeText(got);
        if (text === undefined) refused.push(`${name} is not a text file`);
        else attachments.push({ kind: 'text', name, mimeType: c.mimeType, data: text });
      }
    }
    return { attachments, refused };
  }

  async function download(url: string, name: string): Promise<Buffer | string> {
    try {
      const res = await fetch(url, { headers: { authorization: `Bearer ${botToken}` }, signal: AbortSignal.timeout(60_000) });
      if (!res.ok || !res.body) {
        await res.body?.cancel();
        log('warn', `file download for ${name} failed: HTTP ${res.status}`);
        return `${name} could not be downloaded from Slack`;
      }
      const parts: Buffer[] = [];
      let total = 0;
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        total += chunk.byteLength;
        if (total > maxBytes) return overLimit(name, total, maxBytes);
        parts.push(Buffer.from(chunk));
      }
      return Buffer.concat(parts);
    } catch (err) {
      log('warn', `file download for ${name} failed: ${describe(err)}`);
      return `${name} could not be downloaded from Slack`;
    }
  }

  app.event('app_mention', async ({ event, body }) => {
    await onMessage(event as unknown as SlackMessageEvent, (body as { event_id?: string }).event_id ?? `slack:${event.ts}`, true);
  });
  app.event('message', async ({ event, body }) => {
    await onMessage(event as unknown as SlackMessageEvent, (body as { event_id?: string }).event_id ?? `slack:${(event as { ts: string }).ts}`, false);
  });

  app.command(slash, async ({ ack, command }) => {
    await ack();
    if (!sink) return;
    const word = command.text.trim().split(/\s+/)[0]?.toLowerCase() ?? '';
    const text = ['stop', 'reset', 'help'].includes(word) ? `/${word}` : `/help`;
    const isDirect = command.channel_id.startsWith('D');
    const ref = refFor(command.team_id, command.channel_id);
    try {
      const r = await sink.message({
        platform: 'slack',
        conversation: ref,
        sender: { id: command.user_id, name: command.user_name },
        text,
        attachments: [],
        isDirect,
        mentionsBot: true,
        eventId: `slack:cmd:${command.trigger_id}`,
      });
      if (r.reply) await web.chat.postEphemeral({ channel: command.channel_id, user: command.user_id, text: escapeMrkdwn(r.reply) });
    } catch (err) {
      log('error', `${slash} failed: ${describe(err)}`);
    }
  });

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
    const notify = async (text: string) => {
      if (!channel) return;
      const thread = b.message?.thread_ts;
      try {
        await web.chat.postEphemeral({ channel, user: b.user.id, text: escapeMrkdwn(cutText(text, 3000)), ...(thread ? { thread_ts: thread } : {}) });
      } catch (err) {
        log('warn', `could not tell ${b.user.id} privately: ${describe(err)}`);
      }
    };
    if (!sink || !channel || token === '') {
      await notify('This button is no longer valid.');
      return;
    }
    const thread = channel.startsWith('D') ? undefined : b.message?.thread_ts;
    const clicker = async (u: { id: string; name?: string; username?: string }) => {
      const name = u.name ?? u.username;
      const roles = await groupsOfUser(u.id);
      return { id: u.id, ...(name ? { name } : {}), ...(roles.length > 0 ? { roles } : {}) };
    };
    try {
      const r = await sink.action({
        platform: 'slack',
        conversation: refFor(b.team?.id ?? teamId, channel, thread),
        token,
        user: await clicker(b.user),
        eventId: `slack:action:${b.trigger_id ?? `${channel}:${a.action_ts ?? ''}`}`,
      });
      if (r.notice) await notify(r.notice);
    } catch (err) {
      log('error', `handling a click failed: ${describe(err)}`);
      await notify('Something went wrong; please try again.');
    }
  });

  app.error(async (err) => {
    log('error', `event failed: ${describe(err)}`);
  });

  // ---- outbound -----------------------------------------------------------------------------

  const threadOpts = (ref: ConversationRef) => (ref.threadId !== undefined ? { thread_ts: ref.threadId } : {});

  async function outbound<T>(what: string, ref: ConversationRef, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      const msg = `${what} in ${ref.key} failed: ${describe(err)}`;
      log('error', msg);
      throw new Error(msg);
    }
  }

  async function postPlain(ref: ConversationRef, text: string): Promise<void> {
    for (const piece of chunkText(escapeMrkdwn(text), 3900)) {
      await outbound('chat.postMessage', ref, () => web.chat.postMessage({ channel: ref.channelId, text: piece, mrkdwn: false, ...threadOpts(ref) }));
    }
  }

  const classify = (err: unknown): StatusFailure => {
    const e = err as { code?: string; retryAfter?: number };
    if (e.code === ErrorCode.RateLimitedError) return { kind: 'retry', afterMs: (e.retryAfter ?? 1) * 1000 };
    if (e.code === ErrorCode.RequestError || e.code === ErrorCode.HTTPError) return { kind: 'retry', afterMs: statusInterval };
    return { kind: 'fatal' };
  };

  const progress = new ProgressView({
    createStatus: (ref) =>
      new StatusMessage(
        {
          send: async (text) => {
            const r = await statusWeb.chat.postMessage({ channel: ref.channelId, text, mrkdwn: false, ...threadOpts(ref) });
            if (!r.ts) throw new Error('chat.postMessage returned no ts');
            return r.ts;
          },
          edit: async (ts, text) => {
            await statusWeb.chat.update({ channel: ref.channelId, ts, text });
          },
          remove: async (ts) => {
            await web.chat.delete({ channel: ref.channelId, ts });
          },
        },
        { intervalMs: statusInterval, classify, log, describe, platformName: 'Slack' },
      ),
  });

  async function render(ref: ConversationRef, event: AgentEvent): Promise<void> {
    await progress.handle(ref, event);
    if (event.type === 'answer') {
      for (const piece of slackAnswer(event.text)) {
        await outbound('sending the answer', ref, () => web.chat.postMessage({ channel: ref.channelId, text: piece, ...threadOpts(ref) }));
      }
    } else if (event.type === 'error') {
      await postPlain(ref, event.message);
    }
  }

  async function postCard(ref: ConversationRef, card: Card): Promise<string> {
    const m = renderSlackCard(card);
    for (const lead of m.lead) await outbound('sending a card', ref, () => web.chat.postMessage({ channel: ref.channelId, text: lead, ...threadOpts(ref) }));
    const r = await outbound('sending a card', ref, () =>
      web.chat.postMessage({ channel: ref.channelId, text: m.text, blocks: m.blocks as never, ...threadOpts(ref) }),
    );
    if (!r.ts) throw new Error(`sending a card in ${ref.key} failed: no ts returned`);
    return r.ts;
  }

  async function updateCard(ref: ConversationRef, handle: string, card: Card): Promise<void> {
    if (!/^\d+\.\d+$/.test(handle)) throw new Error(`not a Slack card handle: "${handle}" (expected a message ts)`);
    const m = renderSlackCard(card);
    await outbound('updating a card', ref, () => web.chat.update({ channel: ref.channelId, ts: handle, text: m.text, blocks: m.blocks as never }));
  }

  // ---- lifecycle ----------------------------------------------------------------------------

  function startError(err: unknown): Error {
    const code = (err as { data?: { error?: string; needed?: string } }).data?.error;
    if (code === 'invalid_auth' || code === 'not_authed' || code === 'account_inactive' || code === 'token_revoked') {
      return new Error(`SLACK_BOT_TOKEN was rejected by Slack (${code}): copy the Bot User OAuth Token (xoxb-…) from OAuth & Permissions again`);
    }
    if (code === 'missing_scope') {
      const needed = (err as { data?: { needed?: string } }).data?.needed ?? 'a scope';
      return new Error(`the Slack app lacks the scope ${needed}: add it (deploy/slack-manifest.yaml lists every scope) and reinstall the app`);
    }
    if (code === 'not_allowed_token_type') return new Error('SLACK_APP_TOKEN is not an app-level token with connections:write: create one under Basic Information > App-Level Tokens');
    if (code === 'ratelimited') return new Error('Slack rate-limited the start-up calls; wait a minute and start again');
    return new Error(`Slack start failed: ${describe(err)} (check SLACK_API_URL and the network)`);
  }

  async function start(s: AdapterSink): Promise<void> {
    if (started) throw new Error('the Slack adapter is already started');
    try {
      const auth = await web.auth.test();
      teamId = auth.team_id ?? '';
      botUserId = auth.user_id ?? '';
      await app.init();
      sink = s;
      if (appToken !== undefined) await app.start();
    } catch (err) {
      sink = undefined;
      throw startError(err);
    }
    started = true;
    log('info', `connected to Slack team ${teamId} as ${botUserId} (${appToken !== undefined ? 'Socket Mode' : `HTTP mode at ${eventsPath}`})`);
  }

  async function stop(): Promise<void> {
    if (!started) return;
    started = false;
    sink = undefined;
    if (appToken !== undefined) {
      try {
        await app.stop();
      } catch (err) {
        log('warn', `stopping Socket Mode: ${describe(err)}`);
      }
    }
    await progress.stopAll();
  }

  return {
    platform: 'slack',
    streamsText: false,
    start,
    stop,
    render,
    postCard,
    updateCard,
    postText: postPlain,
    decodeKey,
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
