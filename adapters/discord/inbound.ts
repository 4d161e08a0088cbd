/**
 * Discord -> the core: messageCreate (with its files) and the slash commands /stop /reset /help.
 *
 * Contract:
 * - A DM is `discord:dm:<channel>`. In a server text channel only a mention of the bot or a reply to
 *   it is passed on; it is answered in a thread started from that message (`discord:<guild>:<channel>:
 *   <thread>`, the thread's id is the message's id) once the core accepted it or replied, or in place
 *   (`discord:<guild>:<channel>`) where `replyInThread(guild, channel)` says false. Without the Create
 *   Public Threads permission the answer goes in the channel. Output to a thread being started waits
 *   for it (ctx.pendingThreads).
 * - Messages in a thread the bot owns or answered in are addressed to it (`repliesToBot`) without a
 *   mention; other chatter in threads is dropped.
 * - Ignored: bots (the bot itself included), system and webhook messages, every type but Default and
 *   Reply, messages with neither text nor files. A message seen twice (a re-sent dispatch after a
 *   resume) is handled once; its event id is `discord:<message id>`.
 * - "<@bot> /stop" and "/stop@bot" reach the core as "/stop". A slash command is acknowledged first
 *   (deferred, within Discord's 3 s; /help ephemerally), reaches the core as "/<name>" (an unknown
 *   name as "/help") and is answered by editing the deferred reply.
 */
import { type ChatInputCommandInteraction, type Message, MessageFlags, MessageType, Routes } from 'discord.js';
import { cutText } from '../kit/attachments.js';
import { SOMETHING_WENT_WRONG } from '../kit/clicks.js';
import { deliverMessage, Recent, withUnreadNotes } from '../kit/inbound.js';
import type { ConversationRef, InboundMessage, Sender } from '../types.js';
import { type DiscordContext, NO_MENTIONS, refOfInteraction, rolesOf, senderOfInteraction } from './context.js';
import { readAttachments } from './files.js';
import { refFor } from './keys.js';
import { DISCORD_TEXT_LIMIT, escapeDiscord } from './markdown.js';
import { SLASH_COMMANDS } from './startup.js';

export interface InboundOptions {
  maxAttachmentBytes: number;
  /** Whether a mention in this guild channel is answered in a new thread or in place. */
  replyInThread: (guildId: string, channelId: string) => boolean;
  /** Posts plain text as the bot (replies the core asks for). */
  postPlain: (ref: ConversationRef, text: string) => Promise<void>;
}

export interface DiscordInbound {
  onMessage(message: Message): Promise<void>;
  onCommand(i: ChatInputCommandInteraction): Promise<void>;
}

const SEEN_MAX = 5000;

export function createInbound(ctx: DiscordContext, opts: InboundOptions): DiscordInbound {
  const { log, describeError } = ctx;
  const seen = new Recent(SEEN_MAX);

  const normalize = (raw: string): { text: string; mentioned: boolean } => {
    const botUserId = ctx.identity.botUserId;
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

  const readFiles = (message: Message) => readAttachments(message.attachments.values(), opts.maxAttachmentBytes, (level, m) => log(level, ctx.scrub(m)));

  async function onMessage(message: Message): Promise<void> {
    const sink = ctx.sink;
    if (!sink) return;
    const botUserId = ctx.identity.botUserId;
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
      const ours = thread.ownerId === botUserId || ctx.threads.has(thread.id);
      if (!mentioned && !repliesToBot && !ours) return; // chatter in a thread the bot is not part of
      ctx.threads.add(thread.id);
      repliesToBot ||= ours; // a thread the bot answers in is a conversation with it
      ref = refFor(guildId, parent, thread.id);
    } else {
      if (!mentioned && !repliesToBot) return; // a channel message not for the bot: not even passed on
      if (opts.replyInThread(guildId, message.channelId)) {
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
      ctx.pendingThreads.set(t, new Promise<void>((r) => (release = r)));
    }
    try {
      await deliverMessage({
        sink,
        msg,
        refused,
        reply: (t) => opts.postPlain(ref, t),
        log,
        describeError,
        label: message.id,
        afterCore: async (result) => {
          if (newThread && (result.accepted || result.reply)) {
            try {
              await ctx.rest.post(Routes.threads(newThread.parent, newThread.id), { body: { name: newThread.name, auto_archive_duration: 1440 } });
              ctx.threads.add(newThread.id);
            } catch (err) {
              // Without a thread (no Create Public Threads permission) the answer goes in the channel.
              log('warn', `could not start a thread in ${newThread.parent} (Create Public Threads permission?): ${describeError(err)}`);
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
      if (newThread) ctx.pendingThreads.delete(newThread.id);
    }
  }

  async function onCommand(i: ChatInputCommandInteraction): Promise<void> {
    const name = i.commandName.toLowerCase();
    const word = SLASH_COMMANDS.some((c) => c.name === name) ? name : 'help';
    const ephemeral = word === 'help';
    try {
      await i.deferReply(ephemeral ? { flags: MessageFlags.Ephemeral } : {});
    } catch (err) {
      log('warn', `could not acknowledge /${word}: ${describeError(err)}`);
      return;
    }
    const ref = refOfInteraction(i);
    const sink = ctx.sink;
    let reply = 'Gatehouse is not ready here yet; try again in a moment.';
    if (sink && ref) {
      try {
        const r = await sink.message({
          platform: 'discord',
          conversation: ref,
          sender: senderOfInteraction(i),
          text: `/${word}`,
          attachments: [],
          isDirect: !i.guildId,
          mentionsBot: true,
          eventId: `discord:cmd:${i.id}`,
        });
        reply = r.reply ?? (r.accepted ? 'Done.' : 'Nothing to do.');
      } catch (err) {
        log('error', `/${word} failed: ${describeError(err)}`);
        reply = SOMETHING_WENT_WRONG;
      }
    }
    try {
      await i.editReply({ content: cutText(escapeDiscord(reply), DISCORD_TEXT_LIMIT), allowedMentions: NO_MENTIONS });
    } catch (err) {
      log('warn', `could not answer /${word}: ${describeError(err)}`);
    }
  }

  return { onMessage, onCommand };
}
