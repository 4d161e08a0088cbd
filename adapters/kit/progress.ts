/**
 * The progress view of a run: run events -> status items (one throttled status message) and the
 * typing indicator on/off. Platform-neutral: the adapter supplies how to make a status message and
 * how to show "typing" once.
 *
 * Contract:
 * - `handle(ref, event)` updates the run's view and returns at once for progress events (the status
 *   message sends on its own throttle). For `answer` and `error` it removes the status message and
 *   stops typing, and resolves after that, so the adapter posts the answer below nothing stale.
 *   `run_finished` does the same and forgets the run. `text` and `usage` change nothing here.
 * - Typing starts with the run (after `typingFirstDelayMs`, so a quick answer shows none), repeats
 *   every `typingIntervalMs`, stops while the run waits for a person (approval, question) and
 *   resumes when it works again; it never runs longer than 30 minutes.
 * - `stopAll()` ends every run's view (adapter stop).
 */
import type { AgentEvent } from '../../agent/events.js';
import type { ConversationRef } from '../types.js';
import { statusText } from './status.js';
import type { StatusItem, StatusMessage } from './status.js';

export interface ProgressPlatform {
  /** A new status message for the conversation (not yet sent). */
  createStatus(ref: ConversationRef): StatusMessage;
  /** Shows "typing…" once; omit on platforms without it. Failures are the adapter's to log. */
  typing?(ref: ConversationRef): void;
  typingIntervalMs?: number;
  typingFirstDelayMs?: number;
}

interface RunView {
  ref: ConversationRef;
  items: Map<string, StatusItem>;
  status: StatusMessage | undefined;
  typing: NodeJS.Timeout | undefined;
  typingSince: number;
}

const TYPING_MAX_MS = 30 * 60_000;
const WAITING = ' (waiting for approval)';
const OUTCOME_ICON: Record<string, string> = { approved: '👍', always: '👍', denied: '🚫', declined: '🚫', expired: '⌛' };

export class ProgressView {
  private readonly runs = new Map<string, RunView>();

  constructor(private readonly platform: ProgressPlatform) {}

  async handle(ref: ConversationRef, event: AgentEvent): Promise<void> {
    const v = this.viewOf(ref, event.runId);
    switch (event.type) {
      case 'run_started':
        this.startTyping(v);
        return;
      case 'text':
      case 'usage':
        return;
      case 'tool_started':
        v.items.set(event.callId, { icon: '⏳', text: `${event.tool}: ${event.summary}` });
        return this.show(v);
      case 'tool_finished':
        v.items.set(event.callId, { icon: event.ok ? '✅' : '❌', text: `${event.tool}: ${event.summary}` });
        return this.show(v);
      case 'approval_asked':
        this.stopTyping(v); // waiting for a person, not working
        v.items.set(event.callId, { icon: '🔐', text: `${event.tool}: ${event.summary}${WAITING}` });
        return this.show(v);
      case 'approval_resolved': {
        const prev = v.items.get(event.callId);
        const base = prev ? prev.text.replace(WAITING, '') : event.tool;
        v.items.set(event.callId, {
          icon: OUTCOME_ICON[event.outcome] ?? '•',
          text: `${base} (${event.outcome}${event.by ? ` by ${event.by}` : ''})`,
        });
        if (event.outcome === 'approved' || event.outcome === 'always') this.startTyping(v);
        return this.show(v);
      }
      case 'question_asked':
        this.stopTyping(v);
        v.items.set(event.callId, { icon: '❓', text: event.question });
        return this.show(v);
      case 'question_answered': {
        const prev = v.items.get(event.callId);
        v.items.set(event.callId, { icon: '💬', text: `${prev?.text ?? 'question'} (${event.answer === null ? 'no answer' : 'answered'})` });
        this.startTyping(v);
        return this.show(v);
      }
      case 'answer':
      case 'error':
        return this.end(v);
      case 'run_finished':
        await this.end(v);
        this.runs.delete(event.runId);
        return;
    }
  }

  async stopAll(): Promise<void> {
    const views = [...this.runs.values()];
    this.runs.clear();
    await Promise.all(views.map((v) => this.end(v)));
  }

  private viewOf(ref: ConversationRef, runId: string): RunView {
    let v = this.runs.get(runId);
    if (!v) {
      v = { ref, items: new Map(), status: undefined, typing: undefined, typingSince: 0 };
      this.runs.set(runId, v);
    }
    return v;
  }

  private show(v: RunView): void {
    v.status ??= this.platform.createStatus(v.ref);
    v.status.set(statusText([...v.items.values()]));
  }

  private async end(v: RunView): Promise<void> {
    this.stopTyping(v);
    const s = v.status;
    v.status = undefined;
    await s?.finish();
  }

  private startTyping(v: RunView): void {
    const typing = this.platform.typing?.bind(this.platform);
    if (!typing || v.typing) return;
    const interval = this.platform.typingIntervalMs ?? 4000;
    v.typingSince = Date.now();
    const tick = () => {
      if (Date.now() - v.typingSince > TYPING_MAX_MS) return this.stopTyping(v);
      typing(v.ref);
    };
    // Not at once: a quick answer needs no "typing…" (one API call fewer; platforms rate-limit them).
    v.typing = setTimeout(
      () => {
        if (!v.typing) return;
        tick();
        v.typing = setInterval(tick, interval);
        v.typing.unref();
      },
      Math.min(this.platform.typingFirstDelayMs ?? 400, interval),
    );
    v.typing.unref();
  }

  private stopTyping(v: RunView): void {
    if (v.typing) clearInterval(v.typing);
    v.typing = undefined;
  }
}
