/**
 * Sub-agents of one run: each gets its own transcript and model loop (agent/run/loop.ts), and its tool
 * calls go through the parent's executor context, so the same gate decides them.
 *
 * Contract:
 * - Same gate: a sub-agent's batch is the parent's BatchContext with only the toolset (a subset,
 *   ./toolset.ts), the call states (in memory: a restart reports the parent's spawn_subagent call as
 *   interrupted, it never runs twice; the approvals it waits on are also in the run record, and
 *   `closeOrphanedCards` denies them on resume), the abort signal (the spawn call's: /stop and the
 *   run timeout reach its model call and tools) and the events replaced. Policy, tier, toolPolicy,
 *   commandRules, classifier, audit, approvers, broker and allowlists are the parent's: its cards
 *   post in the parent conversation, say they come from a sub-agent and show its task, and an
 *   "Always" there adds what the same card in the parent would have added.
 * - No human in a sub-agent: its tool context has no askUser; where its call needs an approval and
 *   none can be asked, the gate declines it with the reason, as for the parent.
 * - Its own context keeper (agent/context/keeper.ts) on its own transcript: near the agent's window
 *   the older part is summarized (the summary call's usage is the sub-agent's), so a long task ends
 *   with an answer instead of a context error. Its big results stay in its transcript (nothing could
 *   read them back), and the context tools work on the parent's transcript, so it has none.
 * - Limits: depth (`maxDepth`) and count per run (`maxPerRun`, every depth together) refuse with a
 *   message naming the key; `maxTurns` ends it without an answer (an error result naming the key).
 * - Usage: every model call of a sub-agent is added to the run's usage and, apart, to `usage()`.
 * - Events: the sub-agent's tool, approval and decline events reach the run's output with their
 *   summary prefixed "sub-agent: "; its streamed text does not (its answer is the tool's result).
 */
import type { ApprovalBroker } from '../../../approvals/index.js';
import type { AgentEvent, Usage } from '../../../events.js';
import { ContextKeeper } from '../../../context/keeper.js';
import type { Log } from '../../../log.js';
import { runLoop } from '../../../run/loop.js';
import type { Message } from '../../../context/messages.js';
import type { ModelClient } from '../../../model/types.js';
import { addUsage, emptyUsage } from '../../../model/pricing.js';
import type { AgentSettings } from '../../../settings.js';
import type { RunTelemetry } from '../../../telemetry/types.js';
import { runToolBatch, type BatchContext, type CallState, type CallStates } from '../../executor.js';
import { toolSpec } from '../../registry.js';
import { ToolError, type AnyTool, type ConversationState, type SubagentRunner, type ToolResult } from '../../types.js';
import { subagentLimits, type SubagentsConfig } from './config.js';
import { subagentToolset } from './toolset.js';
import { messageOf } from '../../../log.js';

export interface SubagentSessionDeps {
  runId: string;
  /** The agent as configured now (limits and prompt are read at each spawn). */
  agent(): AgentSettings & { subagents?: SubagentsConfig };
  /** The run's model client (budgeted when the agent has a budget). */
  model: ModelClient;
  /** Adds to the run's usage. */
  addUsage(u: Usage): void;
  telemetry?: RunTelemetry;
  log?: Log;
}

export const SUBAGENT_NOTE =
  'You are a sub-agent: this agent started you for one task. Do it with the tools you have and end with an answer that gives the result; ' +
  'that answer is all the agent that started you sees. You cannot ask the user anything: when something needs a decision you cannot make, say so in your answer.';

/** One run's sub-agents: the count and usage across every depth. */
export class SubagentSession {
  private spawned = 0;
  private total: Usage = emptyUsage();

  constructor(private readonly deps: SubagentSessionDeps) {}

  /** How many were started and what they used; undefined while none was. */
  usage(): { count: number; usage: Usage } | undefined {
    return this.spawned > 0 ? { count: this.spawned, usage: this.total } : undefined;
  }

  /** The runner for a model at `depth` (0: the run's own) whose toolset and batch are these. */
  runner(depth: number, tools: ReadonlyMap<string, AnyTool>, batch: () => BatchContext, callId: string): SubagentRunner {
    const limits = () => {
      const a = this.deps.agent();
      return { agent: a, limits: subagentLimits(a.subagents, a) };
    };
    const check = (requested: readonly string[] | undefined) => {
      const { agent, limits: l } = limits();
      const key = `agents.${agent.name}.subagents`;
      if (depth >= l.maxDepth)
        return { ok: false as const, reason: `Not started: sub-agents cannot start sub-agents here (${key}.maxDepth is ${l.maxDepth}).` };
      if (this.spawned >= l.maxPerRun) {
        return {
          ok: false as const,
          reason: `Not started: this run already started ${this.spawned} sub-agents, the most ${key}.maxPerRun (${l.maxPerRun}) allows. Do the rest yourself.`,
        };
      }
      const choice = subagentToolset({ parent: tools, ...(requested ? { requested } : {}), limits: l, depth: depth + 1, agentName: agent.name });
      return choice.ok ? { ok: true as const, tools: [...choice.tools.keys()], set: choice.tools } : choice;
    };
    return {
      depth,
      check: (requested) => {
        const c = check(requested);
        return c.ok ? { ok: true, tools: c.tools } : c;
      },
      run: async (task, requested, signal) => {
        const c = check(requested);
        if (!c.ok) throw new ToolError(c.reason);
        this.spawned++;
        return this.runOne(task, depth + 1, c.set, batch(), signal, callId);
      },
    };
  }

  private async runOne(
    task: string,
    depth: number,
    tools: Map<string, AnyTool>,
    parent: BatchContext,
    signal: AbortSignal,
    spawnCallId: string,
  ): Promise<ToolResult> {
    const agent = this.deps.agent();
    const { maxTurns } = subagentLimits(agent.subagents, agent);
    const messages: Message[] = [{ role: 'user', content: [{ type: 'text', text: task }] }];
    const add = (u: Usage) => {
      this.total = addUsage(this.total, u);
      this.deps.addUsage(u);
    };
    const scratch: Record<string, unknown> = {};
    const state: ConversationState = { get: <T>(n: string) => scratch[n] as T | undefined, set: (n, v) => void (scratch[n] = v) };
    const keeper = new ContextKeeper({
      model: this.deps.model,
      modelName: agent.model,
      ...(agent.contextWindowTokens ? { windowTokens: agent.contextWindowTokens } : {}),
      ...(this.deps.log ? { log: this.deps.log } : {}),
      memory: { get: () => scratch['contextReported'], set: (v) => void (scratch['contextReported'] = v) },
      history: { get: () => scratch['contextSummaries'], set: (v) => void (scratch['contextSummaries'] = v) },
    });
    const batch: BatchContext = {
      ...parent,
      tools,
      signal,
      states: trackedStates(parent.states, `${spawnCallId}${ORPHAN_MARK}`),
      emit: progress(parent.emit),
      origin: { title: 'Sub-agent', line: `From a sub-agent. Its task: ${clip(task, 400)}` },
      toolContext: (callId, s) => {
        const { askUser: _noHuman, context: _notThisTranscript, ...base } = parent.toolContext(callId, s);
        return { ...base, state, transcript: () => messages, addUsage: add, subagents: this.runner(depth, tools, () => batch, callId) };
      },
    };
    let outcome: Awaited<ReturnType<typeof runLoop>>;
    try {
      outcome = await runLoop({
        runId: this.deps.runId,
        model: this.deps.model,
        modelName: agent.model,
        system: `${agent.system}\n\n${SUBAGENT_NOTE}`,
        tools: [...tools.values()].map(toolSpec),
        maxTokens: agent.maxTokens,
        maxIterations: maxTurns,
        messages,
        signal,
        emit: batch.emit,
        streamText: false,
        runBatch: (calls) => runToolBatch(calls, batch),
        checkpoint: async () => undefined,
        addUsage: add,
        keeper,
        ...(this.deps.telemetry ? { telemetry: this.deps.telemetry } : {}),
      });
    } catch (err) {
      if (signal.aborted) return stopped();
      throw new ToolError(`the sub-agent's model call failed: ${messageOf(err)}`);
    }
    if (outcome.kind === 'stopped') return stopped();
    if (outcome.kind === 'max_iterations') {
      return {
        content: `The sub-agent made ${maxTurns} model calls without a final answer (agents.${agent.name}.subagents.maxTurns) and was ended.`,
        isError: true,
      };
    }
    return { content: outcome.text.trim() === '' ? '(the sub-agent gave no answer)' : outcome.text };
  }
}

function stopped(): ToolResult {
  return { content: 'The sub-agent was stopped: the run was stopped.', isError: true };
}

/** Between a spawn call's id and its sub-agent's call id in the run record's `calls`. */
const ORPHAN_MARK = '/sub/';

/**
 * A sub-agent's call states live in memory (its spawn call is `started`: a restart never resumes
 * it). Only the approvals it waits for are also recorded in the parent's states, under
 * `<spawn call id>/sub/<call id>`, so that after a restart their cards can be closed: nobody waits on them.
 */
function trackedStates(parent: CallStates, prefix: string): CallStates {
  const m = new Map<string, CallState>();
  return {
    get: (id) => m.get(id),
    set: async (id, s) => {
      const was = m.get(id);
      m.set(id, s);
      if (s.status === 'awaiting') await parent.set(prefix + id, s);
      else if (was?.status === 'awaiting') await parent.set(prefix + id, { status: 'done', result: { content: 'decided' } });
    },
  };
}

/**
 * On resume: the cards sub-agents were waiting on when the process stopped are denied with the
 * reason (their spawn call is reported interrupted), so none says "Approved" while nothing runs.
 */
export async function closeOrphanedCards(calls: Readonly<Record<string, CallState>>, broker: Pick<ApprovalBroker, 'settle'>, now = Date.now()): Promise<void> {
  for (const [id, s] of Object.entries(calls)) {
    if (!id.includes(ORPHAN_MARK) || s.status !== 'awaiting') continue;
    await broker.settle(s.requestId, { outcome: 'denied', at: now, by: 'policy', note: 'the sub-agent that asked was interrupted by a restart' });
  }
}

/** A sub-agent's events as the parent's progress: summaries prefixed, streamed text left out. */
function progress(emit: (e: AgentEvent) => Promise<void>): (e: AgentEvent) => Promise<void> {
  return async (e) => {
    switch (e.type) {
      case 'text':
        return;
      case 'tool_started':
      case 'tool_finished':
      case 'approval_asked':
        return emit({ ...e, summary: `sub-agent: ${e.summary}` });
      case 'tool_declined':
        return emit({ ...e, reason: `sub-agent: ${e.reason}` });
      default:
        return emit(e);
    }
  };
}

function clip(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 3)}...` : one;
}
