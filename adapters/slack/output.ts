/**
 * The core -> Slack: answers, errors, the progress status message, the assistant thread status, cards.
 *
 * Contract:
 * - Answers: mrkdwn cut on the markdown tree (code blocks intact) into messages under Slack's limits,
 *   in the conversation's thread when it has one. Errors and replies: plain text, escaped.
 * - Progress: one status message in the thread (kit StatusMessage), edits throttled to
 *   `statusEditIntervalMs`; a 429 is not waited on but coalesced, the next edit after Retry-After.
 * - In an AI assistant app's thread (ctx.assistant), the native thread status too
 *   (assistant.threads.setStatus "is working…", renewed while the run works, cleared when it ends).
 * - Answers in an assistant thread are streamed (stream.ts, `streamAnswers`, default on): each text
 *   segment one streamed message; elsewhere, or when streaming fails, whole.
 * - Cards: Block Kit (blocks.ts); an over-long body's head goes first as plain messages; updateCard
 *   replaces the card in place by its ts.
 * - Every failed call is an Error naming the call and the conversation, with Slack's error code
 *   (not_in_channel, …), never a token.
 */
import { outboundCaller } from '../kit/outbound.js';
import { ErrorCode } from '@slack/web-api';
import type { AgentEvent, Card } from '../../agent/events.js';
import { composeOutput } from '../kit/compose.js';
import { ProgressView } from '../kit/progress.js';
import { StatusMessage, type StatusFailure } from '../kit/status.js';
import { chunkText } from '../kit/text.js';
import type { ConversationRef } from '../types.js';
import { renderSlackCard } from './blocks.js';
import type { SlackContext } from './context.js';
import { escapeMrkdwn, slackAnswer } from './mrkdwn.js';
import { AnswerStreams } from './stream.js';
import { AdapterError } from '../kit/errors.js';

export interface SlackOutput {
  /** Whether `text` events are wanted now (chat streaming in assistant threads). */
  readonly streamsText: boolean;
  render(ref: ConversationRef, event: AgentEvent): Promise<void>;
  postPlain(ref: ConversationRef, text: string): Promise<void>;
  postCard(ref: ConversationRef, card: Card): Promise<string>;
  updateCard(ref: ConversationRef, handle: string, card: Card): Promise<void>;
  stop(): Promise<void>;
}

/** Slack clears an assistant status after 2 minutes: renew it well before. */
const ASSISTANT_STATUS_RENEW_MS = 60_000;
const ASSISTANT_WORKING = 'is working…';

export function createOutput(ctx: SlackContext, opts: { statusEditIntervalMs: number; streamAnswers: boolean; streamAppendIntervalMs: number }): SlackOutput {
  const threadOpts = (ref: ConversationRef) => (ref.threadId !== undefined ? { thread_ts: ref.threadId } : {});

  const outbound = outboundCaller(ctx.log, ctx.describeError);

  async function postPlain(ref: ConversationRef, text: string): Promise<void> {
    for (const piece of chunkText(escapeMrkdwn(text), 3900)) {
      await outbound('chat.postMessage', ref, () => ctx.web.chat.postMessage({ channel: ref.channelId, text: piece, mrkdwn: false, ...threadOpts(ref) }));
    }
  }

  const classify = (err: unknown): StatusFailure => {
    const e = err as { code?: string; retryAfter?: number };
    if (e.code === ErrorCode.RateLimitedError) return { kind: 'retry', afterMs: (e.retryAfter ?? 1) * 1000 };
    if (e.code === ErrorCode.RequestError || e.code === ErrorCode.HTTPError) return { kind: 'retry', afterMs: opts.statusEditIntervalMs };
    return { kind: 'fatal' };
  };

  // ---- the assistant thread status ------------------------------------------------------------
  const isAssistantThread = (ref: ConversationRef): ref is ConversationRef & { threadId: string } =>
    ref.threadId !== undefined && (ctx.assistant.threads.has(`${ref.channelId}:${ref.threadId}`) || (ctx.assistant.app && ref.channelId.startsWith('D')));
  /** Conversations whose assistant status is set now. */
  const statusShown = new Set<string>();
  async function setAssistantStatus(ref: ConversationRef & { threadId: string }, status: string): Promise<void> {
    try {
      await ctx.statusWeb.assistant.threads.setStatus({ channel_id: ref.channelId, thread_ts: ref.threadId, status });
      if (status === '') statusShown.delete(ref.key);
      else statusShown.add(ref.key);
    } catch (err) {
      ctx.log('warn', `assistant.threads.setStatus in ${ref.key} failed: ${ctx.describeError(err)}`);
    }
  }

  const streams = new AnswerStreams(ctx, { canStream: isAssistantThread, appendIntervalMs: opts.streamAppendIntervalMs });

  const progress = new ProgressView({
    createStatus: (ref) =>
      new StatusMessage(
        {
          send: async (text) => {
            const r = await ctx.statusWeb.chat.postMessage({ channel: ref.channelId, text, mrkdwn: false, ...threadOpts(ref) });
            if (!r.ts) throw new AdapterError('outbound_failed', 'chat.postMessage returned no ts');
            return r.ts;
          },
          edit: async (ts, text) => {
            await ctx.statusWeb.chat.update({ channel: ref.channelId, ts, text });
          },
          remove: async (ts) => {
            await ctx.web.chat.delete({ channel: ref.channelId, ts });
          },
        },
        { intervalMs: opts.statusEditIntervalMs, classify, log: ctx.log, describeError: ctx.describeError, platformName: 'Slack' },
      ),
    // Slack has no "typing" for bots; an assistant thread has its own status instead.
    typing: (ref) => {
      if (isAssistantThread(ref)) void setAssistantStatus(ref, ASSISTANT_WORKING);
    },
    typingIntervalMs: ASSISTANT_STATUS_RENEW_MS,
    typingFirstDelayMs: 300,
  });

  const { render, postCard, updateCard } = composeOutput({
    platformName: 'Slack',
    outbound,
    progress,
    beforeEvent: async (ref, event) => {
      if (opts.streamAnswers) await streams.handle(ref, event);
    },
    answerText: async (ref, event) => {
      const s = opts.streamAnswers ? await streams.answer(ref, event) : { streamed: false };
      if (s.streamed && s.rest === undefined) return undefined;
      return s.streamed ? (s.rest ?? '') : event.text;
    },
    afterEvent: async (ref, event) => {
      if (event.type === 'run_finished' && statusShown.has(ref.key) && isAssistantThread(ref)) await setAssistantStatus(ref, ''); // Slack clears it on a reply, but not on a stopped run
    },
    answerPieces: slackAnswer,
    sendAnswer: (ref, piece) => ctx.web.chat.postMessage({ channel: ref.channelId, text: piece, ...threadOpts(ref) }),
    postPlain,
    renderCard: renderSlackCard,
    sendLead: (ref, lead) => ctx.web.chat.postMessage({ channel: ref.channelId, text: lead, ...threadOpts(ref) }),
    sendCard: async (ref, m) => {
      const r = await ctx.web.chat.postMessage({ channel: ref.channelId, text: m.text, blocks: m.blocks as never, ...threadOpts(ref) });
      if (!r.ts) throw new AdapterError('outbound_failed', 'no ts returned');
      return r.ts;
    },
    isHandle: (handle) => /^\d+\.\d+$/.test(handle),
    handleKind: 'a message ts',
    editCard: async (ref, handle, m) => {
      await ctx.web.chat.update({ channel: ref.channelId, ts: handle, text: m.text, blocks: m.blocks as never });
    },
  });

  return {
    get streamsText() {
      return opts.streamAnswers && streams.active && ctx.assistant.app;
    },
    render,
    postPlain,
    postCard,
    updateCard,
    stop: async () => {
      await streams.stopAll();
      await progress.stopAll();
    },
  };
}
