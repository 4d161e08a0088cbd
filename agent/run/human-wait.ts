/**
 * A run's waits on people: the slot it gives back while an approval or a question is open, and the
 * ask_user_question round trip.
 *
 * Contract:
 * - Parallel tool calls of one run can wait on humans at once: the slot is given back when the first
 *   wait starts and taken again when the last one ends (one claim per run, never one per wait: a run
 *   re-acquiring once per card would hold several of its user's slots and deadlock). The run's
 *   deadline does not count while it waits.
 * - A question is recorded in the call's state before its card exists, so a restart re-asks it under
 *   the same id (as approvals are).
 */
import { newToken, type ApprovalBroker } from '../approvals/index.js';
import type { AgentEvent } from '../events.js';
import type { Deadline, SlotClaim, Slots } from './limits.js';
import type { AgentSettings } from '../settings.js';
import type { CallStates } from '../tools/executor.js';
import type { QuestionAnswer, QuestionRequest } from '../tools/types.js';
import type { RunRecord } from './turn.js';

export interface HumanWaits {
  /** Runs `wait` with the slot given back and the deadline paused. */
  wait<T>(wait: () => Promise<T>): Promise<T>;
  /** Whether the run still holds its slot (released at its end when it does). */
  readonly holdsSlot: boolean;
}

export function humanWaits(c: {
  slots: Slots;
  claim: SlotClaim;
  deadline: Deadline;
  waitNote: () => void;
  /** Told when the run parks on a human and when it goes on. */
  parked: (waiting: boolean) => void;
}): HumanWaits {
  let open = 0;
  let holdsSlot = true;
  return {
    get holdsSlot() {
      return holdsSlot;
    },
    async wait<T>(wait: () => Promise<T>): Promise<T> {
      if (open++ === 0) {
        c.deadline.pause();
        c.parked(true);
        if (holdsSlot) {
          c.slots.release(c.claim);
          holdsSlot = false;
        }
      }
      try {
        return await wait();
      } finally {
        if (--open === 0) {
          c.parked(false);
          if (!holdsSlot) {
            await c.slots.acquire(c.claim, c.waitNote);
            holdsSlot = true;
            // Another wait may have begun while this one queued for the slot: give it back again.
            if (open > 0) {
              c.slots.release(c.claim);
              holdsSlot = false;
            }
          }
          if (open === 0) c.deadline.resume();
        }
      }
    },
  };
}

export async function askUser(
  q: QuestionRequest,
  c: {
    broker: ApprovalBroker;
    key: string;
    agent: AgentSettings;
    record: RunRecord;
    callId: string;
    states: CallStates;
    humanWait: <T>(w: () => Promise<T>) => Promise<T>;
    emit: (e: AgentEvent) => Promise<void>;
    signal: AbortSignal;
  },
): Promise<QuestionAnswer> {
  const prior = c.states.get(c.callId);
  // The wait (slot given back, deadline paused) starts before the card is posted: from the moment a
  // person can see the question, their time is theirs, however slow the store write after it is.
  const d = await c.humanWait(async () => {
    let questionId = prior?.status === 'started' ? prior.questionId : undefined;
    if (!questionId || !(await c.broker.get(questionId))) {
      questionId ??= newToken();
      await c.states.set(c.callId, { status: 'started', questionId });
      await c.broker.askQuestion({
        requestId: questionId,
        conversationKey: c.key,
        platform: c.record.platform,
        agentName: c.agent.name,
        runId: c.record.runId,
        question: q.question,
        suggestions: q.suggestions,
        allowCustom: q.allowCustom,
        starterId: c.record.starter.id,
        timeoutMs: c.agent.questionTimeoutMs,
      });
      await c.emit({ type: 'question_asked', runId: c.record.runId, callId: c.callId, question: q.question });
    }
    return c.broker.wait(questionId, c.signal);
  });
  const answer = d.outcome === 'answered' ? (d.answer ?? '') : null;
  await c.emit({ type: 'question_answered', runId: c.record.runId, callId: c.callId, answer, ...(d.by ? { by: d.byName ?? d.by } : {}) });
  const result: QuestionAnswer = { answer };
  if (d.by) result.by = d.byName ?? d.by;
  return result;
}
