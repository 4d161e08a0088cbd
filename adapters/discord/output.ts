/**
 * The core -> Discord: answers, errors and replies, typing and the progress status message, cards.
 *
 * Contract:
 * - Answers: Discord markdown cut at 2,000 characters on the markdown tree (markdown.ts), in the
 *   conversation's thread when it has one; a thread still being started is waited for. Errors and
 *   replies: plain text, escaped.
 * - Progress: typing (refreshed every 8 s; Discord shows it for 10) and one status message (kit
 *   StatusMessage) whose edits are throttled to `statusEditIntervalMs`; a 5xx or a network error is
 *   retried after that interval, any other failure is final. discord.js's REST queue waits out 429s,
 *   so an edit is delayed, never lost.
 * - Cards: content + message components (components.ts); an over-long body's head goes first as
 *   plain messages; updateCard edits the card in place by its message id (a snowflake).
 * - Every message is sent with no allowed mentions. A failed call is an AdapterError naming the call
 *   and the conversation (kit outbound), never the token.
 */
import { DiscordAPIError, Routes } from 'discord.js';
import type { AgentEvent, Card } from '../../agent/events.js';
import { composeOutput } from '../kit/compose.js';
import { outboundCaller } from '../kit/outbound.js';
import { ProgressView } from '../kit/progress.js';
import { StatusMessage, type StatusFailure } from '../kit/status.js';
import { chunkText } from '../kit/text.js';
import type { ConversationRef } from '../types.js';
import { renderDiscordCard } from './components.js';
import { type DiscordContext, NO_MENTIONS } from './context.js';
import { targetChannel } from './keys.js';
import { DISCORD_TEXT_LIMIT, discordAnswer, escapeDiscord } from './markdown.js';
import { AdapterError } from '../kit/errors.js';

export interface DiscordOutput {
  render(ref: ConversationRef, event: AgentEvent): Promise<void>;
  postPlain(ref: ConversationRef, text: string): Promise<void>;
  postCard(ref: ConversationRef, card: Card): Promise<string>;
  updateCard(ref: ConversationRef, handle: string, card: Card): Promise<void>;
  stop(): Promise<void>;
}

export function createOutput(ctx: DiscordContext, opts: { statusEditIntervalMs: number }): DiscordOutput {
  const { rest, log, describeError } = ctx;
  const statusInterval = opts.statusEditIntervalMs;

  async function channelFor(ref: ConversationRef): Promise<string> {
    if (ref.threadId !== undefined) {
      const pending = ctx.pendingThreads.get(ref.threadId);
      if (pending) await pending;
    }
    return targetChannel(ref);
  }

  const outbound = outboundCaller(log, describeError);

  async function send(ref: ConversationRef, body: Record<string, unknown>): Promise<string> {
    const channel = await channelFor(ref);
    const r = (await rest.post(Routes.channelMessages(channel), { body: { ...body, allowed_mentions: NO_MENTIONS } })) as { id?: string };
    if (!r.id) throw new AdapterError('outbound_failed', 'Discord returned no message id');
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
            await rest.patch(Routes.channelMessage(await channelFor(ref), id), { body: { content: escapeDiscord(text), allowed_mentions: NO_MENTIONS } });
          },
          remove: async (id) => {
            await rest.delete(Routes.channelMessage(await channelFor(ref), id));
          },
        },
        { intervalMs: statusInterval, classify, log, describeError, platformName: 'Discord' },
      ),
    typing: (ref) => {
      void channelFor(ref)
        .then((ch) => rest.post(Routes.channelTyping(ch)))
        .catch((err: unknown) => log('warn', `typing in ${ref.key}: ${describeError(err)}`));
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
      await rest.patch(Routes.channelMessage(await channelFor(ref), handle), {
        body: { content: m.content, components: m.components, allowed_mentions: NO_MENTIONS },
      });
    },
  });

  return { render, postCard, updateCard, postPlain, stop: () => progress.stopAll() };
}
