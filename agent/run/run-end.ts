/**
 * The steps of one run (./execute-run.ts) around its model loop: the system prompt it starts
 * with, the message a stopped run ends with, and what is reported once it is over.
 *
 * Contract:
 * - `reportRunEnd`: a run that lost its conversation to another replica (`outcome: 'lost'`) gets
 *   only its audit line (outcome failed): it posts nothing more. Any other run: a `limit_refused`
 *   audit line for a timeout or maxIterations, the `run_finished` audit line with its tokens and
 *   cost (classifier tokens apart), then the `usage` event (with the classifier's and the
 *   sub-agents' usage when there was any) and `run_finished`.
 * - `finishWithout`: a run whose transcript could not be saved still drops its record and its
 *   queued turn, as before a checkpoint.
 * - `trimToConsistent`: drops a trailing assistant turn whose tool calls have no results.
 * - `systemPrompt`: the agent's prompt plus the extra (memory); an extra that cannot be read is
 *   logged and left out, the run goes on.
 * - `stoppedEvent`: "Stopped." for /stop, the runTimeoutMs message for a timeout.
 */
import type { Audit } from '../audit.js';
import { unansweredToolUses } from './loop.js';
import type { StoredConversation } from '../context/conversation-store.js';
import type { AgentEvent, Usage } from '../events.js';
import type { Log } from '../log.js';
import type { AgentSettings } from '../settings.js';
import type { Fence, RunRepo } from '../store/types.js';
import { messageOf } from '../log.js';

export type RunOutcome = 'completed' | 'stopped' | 'failed' | 'timeout' | 'max_iterations';

export interface RunEnd {
  conversation: string;
  agent: string;
  runId: string;
  platform: string;
  outcome: RunOutcome | 'lost';
  usage: Usage;
  classifierUsage?: Usage;
  subagents?: { count: number; usage: Usage };
}

export async function reportRunEnd(to: { audit?: Audit | undefined; emit(e: AgentEvent): Promise<void> }, end: RunEnd): Promise<void> {
  const { conversation, agent, runId, usage } = end;
  const tokens = { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, costUSD: usage.costUSD, costKnown: usage.costKnown };
  if (end.outcome === 'lost') {
    to.audit?.({ event: 'run_finished', conversation, agent, runId, outcome: 'failed', ...tokens });
    return;
  }
  const reason = end.outcome;
  if (reason === 'timeout' || reason === 'max_iterations') {
    to.audit?.({ event: 'limit_refused', limit: reason === 'timeout' ? 'run_timeout' : 'max_iterations', conversation, platform: end.platform, agent, runId });
  }
  const u: AgentEvent = { type: 'usage', runId, usage };
  if (end.classifierUsage) u.classifierUsage = end.classifierUsage;
  if (end.subagents) u.subagents = end.subagents;
  to.audit?.({
    event: 'run_finished',
    conversation,
    agent,
    runId,
    outcome: reason,
    ...tokens,
    ...(end.classifierUsage ? { classifierTokens: end.classifierUsage.inputTokens + end.classifierUsage.outputTokens } : {}),
  });
  await to.emit(u);
  await to.emit({ type: 'run_finished', runId, reason });
}

export async function finishWithout(runs: RunRepo, key: string, dropRecord: boolean, queuedId: string | undefined, fence: Fence | undefined): Promise<void> {
  if (dropRecord) await runs.dropRecord(key, fence);
  if (queuedId) await runs.dropTurn(key, queuedId);
}

/** The configured prompt plus `extra`; a failure to read the extra is logged, the run goes on. */
export async function systemPrompt(
  extra: ((agent: AgentSettings, key: string) => Promise<string>) | undefined,
  agent: AgentSettings,
  key: string,
  log: Log,
): Promise<string> {
  const text = await (extra?.(agent, key) ?? Promise.resolve('')).catch((err: unknown) => {
    log('warn', `[${key}] could not read the agent's memory for the system prompt: ${messageOf(err)}`);
    return '';
  });
  return text ? `${agent.system}\n\n${text}` : agent.system;
}

export function stoppedEvent(runId: string, timedOut: boolean, timeoutMs: number): AgentEvent {
  return timedOut
    ? { type: 'error', runId, message: `Stopped: the run took longer than ${Math.round(timeoutMs / 1000)} s (runTimeoutMs).` }
    : { type: 'answer', runId, text: 'Stopped.' };
}

/** Drops a trailing assistant turn whose tool calls have no results (a failure mid-batch). */
export function trimToConsistent(messages: StoredConversation['messages']): void {
  while (unansweredToolUses(messages).length > 0) messages.pop();
}
