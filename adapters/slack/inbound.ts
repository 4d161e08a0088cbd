/**
 * Slack -> the core: messages and mentions, files, the slash command, assistant threads.
 *
 * Contract:
 * - A DM is `slack:<team>:<channel>`; a DM message inside a thread (an AI assistant app's threads
 *   are always that) is the thread's conversation `slack:<team>:<channel>:<thread_ts>`, answered there.
 * - In a channel only a mention is passed on; it is answered in its thread, which becomes the
 *   conversation `slack:<team>:<channel>:<thread_ts>`. Later messages in that thread are passed on
 *   without a new mention (`repliesToBot`) when `threadFollowUps(ref)` allows it (default: yes).
 * - Ignored: messages from bots (the bot itself included), edits, joins and every other subtype but
 *   file_share / thread_broadcast. One post is handled once, however often it arrives (a retry with
 *   X-Slack-Retry-Num, a repeated event_id or envelope, message + app_mention of one post): the
 *   adapter drops a repeated channel+ts, and the core's event ledger (shared by replicas) the same
 *   post again: a message's event id is its channel+ts.
 * - Files: via url_private with the bot token, streamed and cut off at `maxAttachmentBytes`; what
 *   cannot be read is said in the turn and to the user.
 * - `/gatehouse stop|reset|help` is acked at once and reaches the core as "/stop" (…) from the
 *   conversation the user last talked to the bot in, in that channel (a thread, as slash commands
 *   cannot be typed in threads) or else the channel itself; the reply is ephemeral (response_url).
 */
import type { App } from '@slack/bolt';
import { overLimit } from '../kit/attachments.js';
import { SOMETHING_WENT_WRONG } from '../kit/clicks.js';
import { deliverMessage, Recent, readBody, readFiles, withUnreadNotes } from '../kit/inbound.js';
import type { ConversationRef, InboundMessage } from '../types.js';
import { RecentMap, type SlackContext } from './context.js';
import { refFor } from './keys.js';
import { escapeMrkdwn } from './mrkdwn.js';
import { messageOf } from '../../agent/log.js';

export interface InboundOptions {
  maxAttachmentBytes: number;
  /** The slash command, like /gatehouse. */
  slashCommand: string;
  /** Whether later messages in a thread where the bot was mentioned need no new mention. */
  threadFollowUps: (ref: ConversationRef) => boolean;
  /** Posts plain text as the bot (replies the core asks for). */
  postPlain: (ref: ConversationRef, text: string) => Promise<void>;
}

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

const SEEN_MAX = 5000;
const THREADS_MAX = 20000;
const SLASH_WORDS = ['stop', 'reset', 'help'] as const;

export function registerInbound(app: App, ctx: SlackContext, opts: InboundOptions): void {
  const seen = new Recent(SEEN_MAX);
  /** Channel threads the bot was mentioned in: follow-ups there are addressed to it. */
  const threads = new Recent(THREADS_MAX);
  /** "<channel>:<user>" -> the conversation that user last talked to the bot in there. */
  const lastConversation = new RecentMap<ConversationRef>(THREADS_MAX);

  const normalize = (raw: string): { text: string; mentioned: boolean } => {
    const mention = `<@${ctx.identity.botUserId}>`;
    const mentioned = ctx.identity.botUserId !== '' && raw.includes(mention);
    let text = raw.split(mention).join(' ').replace(/\s+/g, ' ').trim();
    text = text.replace(/^\/([a-z]+)@\S+/i, '/$1');
    return { text: text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'), mentioned };
  };

  async function onMessage(ev: SlackMessageEvent, eventId: string, viaMention: boolean): Promise<void> {
    const sink = ctx.sink;
    if (!sink) return;
    if (ev.subtype !== undefined && ev.subtype !== 'file_share' && ev.subtype !== 'thread_broadcast') return;
    if (ev.bot_id !== undefined || ev.user === undefined || ev.user === ctx.identity.botUserId) return;
    const once = `${ev.channel}:${ev.ts}`;
    if (seen.has(once)) return;
    seen.add(once);
    const team = ev.team ?? ctx.identity.teamId;
    const isDirect = ev.channel_type === 'im' || ev.channel.startsWith('D');
    const { text, mentioned } = normalize(ev.text ?? '');
    const mentionsBot = viaMention || mentioned;
    let ref: ConversationRef;
    let repliesToBot = false;
    if (isDirect) {
      ref = refFor(team, ev.channel, ev.thread_ts);
    } else {
      const thread = ev.thread_ts ?? ev.ts;
      const threadKey = `${ev.channel}:${thread}`;
      ref = refFor(team, ev.channel, thread);
      if (mentionsBot) threads.add(threadKey);
      else if (ev.thread_ts !== undefined && threads.has(threadKey) && opts.threadFollowUps(ref)) repliesToBot = true;
      else return; // a channel message not for the bot: not even passed on
    }
    lastConversation.set(`${ev.channel}:${ev.user}`, ref);
    const { attachments, refused } = await readFiles(
      ev.files ?? [],
      opts.maxAttachmentBytes,
      (f) => ({ name: f.name ?? 'file', mimeType: f.mimetype, size: f.size }),
      (f, name) => {
        const url = f.url_private_download ?? f.url_private;
        return url ? download(url, name) : Promise.resolve(`${name} could not be downloaded from Slack`);
      },
    );
    if (text === '' && attachments.length === 0 && refused.length === 0) return;
    const msg: InboundMessage = {
      platform: 'slack',
      conversation: ref,
      sender: { id: ev.user },
      text: withUnreadNotes(text, refused),
      attachments,
      isDirect,
      mentionsBot,
      repliesToBot,
      eventId,
    };
    await deliverMessage({ sink, msg, refused, reply: (t) => opts.postPlain(ref, t), log: ctx.log, describeError: ctx.describeError });
  }

  async function download(url: string, name: string): Promise<Buffer | string> {
    const max = opts.maxAttachmentBytes;
    try {
      const res = await fetch(url, { headers: { authorization: `Bearer ${ctx.botToken}` }, signal: AbortSignal.timeout(60_000) });
      // Without a valid token Slack answers 200 with an HTML login page: never read that as the file.
      if (!res.ok || !res.body || (res.headers.get('content-type') ?? '').startsWith('text/html')) {
        await res.body?.cancel();
        ctx.log('warn', `file download for ${name} failed: HTTP ${res.status} ${res.headers.get('content-type') ?? ''}`);
        return `${name} could not be downloaded from Slack`;
      }
      const got = await readBody(res.body as AsyncIterable<Uint8Array>, max);
      return Buffer.isBuffer(got) ? got : overLimit(name, got.over, max);
    } catch (err) {
      ctx.log('warn', `file download for ${name} failed: ${ctx.describeError(err)}`);
      return `${name} could not be downloaded from Slack`;
    }
  }

  // The core's event id is the post (channel + ts), not the envelope's event_id: one post arrives as
  // both `message` and `app_mention` with two event_ids, and replicas taking Slack's HTTP events may
  // get one each; the store's ledger then lets exactly one of them through.
  const postId = (ev: { channel?: string; ts?: string }, body: unknown) =>
    ev.channel && ev.ts ? `${ev.channel}:${ev.ts}` : ((body as { event_id?: string }).event_id ?? `slack:${ev.ts ?? ''}`);
  app.event('app_mention', async ({ event, body }) => {
    await onMessage(event as unknown as SlackMessageEvent, postId(event, body), true);
  });
  app.event('message', async ({ event, body }) => {
    await onMessage(event as unknown as SlackMessageEvent, postId(event as { channel?: string; ts?: string }, body), false);
  });
  // Only AI assistant apps get this: from now on assistant threads get the native thread status.
  app.event('assistant_thread_started', async ({ event }) => {
    const t = (event as { assistant_thread?: { channel_id?: string; thread_ts?: string } }).assistant_thread;
    ctx.assistant.app = true;
    if (t?.channel_id && t.thread_ts) ctx.assistant.threads.add(`${t.channel_id}:${t.thread_ts}`);
  });

  app.command(opts.slashCommand, async ({ ack, command, respond }) => {
    await ack(); // first: Slack wants the ack within 3 s
    const sink = ctx.sink;
    if (!sink) return;
    const word = command.text.trim().split(/\s+/)[0]?.toLowerCase() ?? '';
    const text = (SLASH_WORDS as readonly string[]).includes(word) ? `/${word}` : '/help';
    const isDirect = command.channel_id.startsWith('D');
    const ref = lastConversation.get(`${command.channel_id}:${command.user_id}`) ?? refFor(command.team_id, command.channel_id);
    let reply: string | undefined;
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
      reply = r.reply;
    } catch (err) {
      ctx.log('error', `${opts.slashCommand} failed: ${ctx.describeError(err)}`);
      reply = SOMETHING_WENT_WRONG;
    }
    if (reply === undefined) return;
    try {
      await respond({ response_type: 'ephemeral', text: escapeMrkdwn(reply) });
    } catch (err) {
      ctx.log('warn', `could not answer ${opts.slashCommand} for ${command.user_id}: ${ctx.scrub(String(messageOf(err) ?? err))}`);
    }
  });
}
