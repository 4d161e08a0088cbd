/**
 * Answers streamed with Slack's chat streaming methods (chat.startStream / appendStream / stopStream,
 * @slack/web-api 8.2) where Slack offers them: in AI assistant threads.
 *
 * Contract:
 * - Only conversations for which `canStream(ref)` holds are streamed (a thread: startStream needs a
 *   thread_ts); everywhere else `text` events are ignored and the answer is posted whole.
 * - Each segment of the run's text (agent/events.ts) is one streamed message in the thread: started
 *   with its first text, appended at most every `appendIntervalMs` (at most 12,000 characters a
 *   call), stopped when the segment ends (a tool call, an approval or a question follows, or a new
 *   segment, the answer, an error, the run's end).
 * - `answer(ref, event)` returns true when the answer was streamed in full: the streamed text is
 *   completed from `answer.text` if some of it was not sent yet, and the stream is stopped. It
 *   returns false (the caller posts the answer whole) when nothing was streamed, or a call failed,
 *   or the streamed text is not the answer's start: nothing is lost, at worst a part is shown twice.
 * - A failure of startStream turns streaming off for this process (logged once): whole answers.
 */
import type { AgentEvent } from '../../agent/events.js';
import type { ConversationRef } from '../types.js';
import type { SlackContext } from './context.js';
import { AdapterError } from '../kit/errors.js';

/** Slack's limit for markdown_text in one streaming call. */
const STREAM_CALL_MAX = 12_000;
/** A streamed message longer than this is closed; the rest of the answer is posted whole. */
const STREAM_MESSAGE_MAX = 36_000;

interface Segment {
  runId: string;
  segment: number;
  ref: ConversationRef & { threadId: string };
  ts: string | undefined;
  /** Text Slack has. */
  sent: string;
  /** Text received but not yet sent. */
  pending: string;
  failed: boolean;
  closed: boolean;
  lastFlush: number;
  timer: NodeJS.Timeout | undefined;
  /** Calls to Slack for this segment, one after another. */
  chain: Promise<void>;
}

export class AnswerStreams {
  private readonly open = new Map<string, Segment>();
  private disabled = false;

  constructor(
    private readonly ctx: SlackContext,
    private readonly opts: { canStream: (ref: ConversationRef) => ref is ConversationRef & { threadId: string }; appendIntervalMs: number },
  ) {}

  /** Whether any conversation may stream now (the adapter's `streamsText`). */
  get active(): boolean {
    return !this.disabled;
  }

  /** Every event but `answer`. */
  async handle(ref: ConversationRef, event: AgentEvent): Promise<void> {
    const cur = this.open.get(event.runId);
    switch (event.type) {
      case 'text': {
        if (this.disabled || !this.opts.canStream(ref)) return;
        let s = cur;
        if (s && s.segment !== event.segment) {
          await this.close(s);
          s = undefined;
        }
        if (!s) {
          s = {
            runId: event.runId,
            segment: event.segment,
            ref,
            ts: undefined,
            sent: '',
            pending: '',
            failed: false,
            closed: false,
            lastFlush: 0,
            timer: undefined,
            chain: Promise.resolve(),
          };
          this.open.set(event.runId, s);
        }
        if (s.closed || s.failed) {
          s.pending += event.delta;
          return;
        }
        s.pending += event.delta;
        const seg = s;
        if (seg.ts === undefined || Date.now() - seg.lastFlush >= this.opts.appendIntervalMs) await this.flush(seg);
        else if (!seg.timer) {
          seg.timer = setTimeout(() => {
            seg.timer = undefined;
            void this.flush(seg);
          }, this.opts.appendIntervalMs);
          seg.timer.unref();
        }
        return;
      }
      case 'tool_started':
      case 'approval_asked':
      case 'question_asked':
      case 'error':
      case 'run_finished':
        if (!cur) return;
        this.open.delete(event.runId); // the segment is complete
        await this.close(cur);
        return;
      default:
        return;
    }
  }

  /** True when the answer was streamed in full (the caller posts nothing more). */
  async answer(ref: ConversationRef, event: Extract<AgentEvent, { type: 'answer' }>): Promise<{ streamed: boolean; rest?: string }> {
    const s = this.open.get(event.runId);
    if (!s || s.ref.key !== ref.key) return { streamed: false };
    this.open.delete(event.runId);
    const known = s.sent + s.pending;
    if (s.ts !== undefined && !s.failed && event.text.startsWith(s.sent)) {
      // what the stream has not shown yet: the rest of the answer (normally just `pending`)
      s.pending = event.text.slice(s.sent.length);
      await this.close(s);
      if (!s.failed && s.pending === '') return { streamed: true };
      if (!s.failed) return { streamed: true, rest: s.pending }; // the message grew too long: the rest whole
    } else if (s.ts !== undefined) {
      await this.close(s);
    }
    if (known !== event.text) this.ctx.log('warn', `the streamed answer in ${ref.key} differs from the final one; posting it whole`);
    return { streamed: false };
  }

  async stopAll(): Promise<void> {
    const all = [...this.open.values()];
    this.open.clear();
    await Promise.all(all.map((s) => this.close(s)));
  }

  private flush(s: Segment): Promise<void> {
    s.chain = s.chain.then(() => this.send(s));
    return s.chain;
  }

  private async send(s: Segment): Promise<void> {
    if (s.failed || s.closed || s.pending === '') return;
    const room = STREAM_MESSAGE_MAX - s.sent.length;
    if (room <= 0) return;
    const piece = s.pending.slice(0, Math.min(STREAM_CALL_MAX, room));
    const channel = s.ref.channelId;
    try {
      if (s.ts === undefined) {
        const r = await this.ctx.web.chat.startStream({ channel, thread_ts: s.ref.threadId, markdown_text: piece });
        if (!r.ts) throw new AdapterError('outbound_failed', 'chat.startStream returned no ts');
        s.ts = r.ts;
      } else {
        await this.ctx.web.chat.appendStream({ channel, ts: s.ts, markdown_text: piece });
      }
      s.sent += piece;
      s.pending = s.pending.slice(piece.length);
      s.lastFlush = Date.now();
      if (s.pending !== '' && s.sent.length < STREAM_MESSAGE_MAX) await this.send(s);
    } catch (err) {
      s.failed = true;
      this.ctx.log('warn', `streaming the answer in ${s.ref.key} failed: ${this.ctx.describeError(err)}`);
      if (s.ts === undefined && !this.disabled) {
        this.disabled = true;
        this.ctx.log('warn', 'chat streaming is unavailable for this app: answers are posted whole from now on');
      }
    }
  }

  private async close(s: Segment): Promise<void> {
    if (s.timer) clearTimeout(s.timer);
    s.timer = undefined;
    await this.flush(s);
    s.chain = s.chain.then(async () => {
      if (s.closed || s.ts === undefined) return;
      s.closed = true;
      try {
        await this.ctx.web.chat.stopStream({ channel: s.ref.channelId, ts: s.ts });
      } catch (err) {
        s.failed = true;
        this.ctx.log('warn', `stopping the answer stream in ${s.ref.key} failed: ${this.ctx.describeError(err)}`);
      }
    });
    await s.chain;
  }
}
