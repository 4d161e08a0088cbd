/**
 * The phases of one run: load the transcript, take a slot, run the model loop with its tools,
 * checkpoint, finish. A run is a new turn or the continuation of a stored one (a durable wait).
 *
 * Contract:
 * - Exactly one of `answer`/`error` ends a run, then `usage` and `run_finished`.
 * - Every checkpoint is ONE store transaction (agent/store/types.ts `checkpoint`): the transcript,
 *   the queued turn it now holds (dropped), and the run record (saved while calls are open, dropped
 *   at the end), so a crash between them cannot run a turn twice or lose its call states.
 * - A model failure after retries is shown to the user as a short message; the transcript is saved
 *   only up to its last consistent point (a run that failed before any model reply saves nothing).
 * - Replicas (a run given a `fence`): the last message is stored with the transcript, in the run
 *   record's outbox, before it is posted, then the record is dropped; a replica taking over a
 *   conversation whose record still has an outbox posts it (no model call): a crash between store
 *   and post is answered once, not twice and not never (a crash right after the post and before the
 *   drop still posts twice: one store round trip wide).
 * - Fencing (replicas): a run given a `fence` writes its checkpoints and run record under it; the
 *   checkpoint that stores its answer is the check before posting it. Once it no longer holds (another replica took the
 *   conversation), the run stops: it writes nothing more, posts nothing more, and logs one line
 *   "lost conversation X to another replica (epoch N, now M): not writing or posting".
 */
import { randomUUID } from 'node:crypto';
import type { AgentPolicy } from '../../policies/gate.js';
import { serverToolOffered } from '../../policies/tool-policy.js';
import type { ApprovalBroker } from '../approvals/index.js';
import type { PersistedAllowlists } from '../approvals/allowlists.js';
import type { Audit } from '../audit.js';
import { contextKeeperFor } from '../context/keeper.js';
import { appendUserTurn, type ConversationStore, type StoredConversation } from '../context/conversation-store.js';
import type { AgentEvent, RunLimit, Usage } from '../events.js';
import { runLoop, unansweredToolUses } from './loop.js';
import { ModelError, type ModelClient } from '../model/types.js';
import type { OutputResolver } from './output.js';
import { addUsage, emptyUsage } from '../model/pricing.js';
import { Deadline, placeOf, type RunClock, type SlotClaim, type Slots } from './limits.js';
import type { AgentDirectory, AgentSettings } from '../settings.js';
import { FencedError, type Fence, type LeaseRepo, type RunRepo, type SpendRepo } from '../store/types.js';
import { runToolBatch, type BatchContext, type CallStates } from '../tools/executor.js';
import { toolSpec, type ToolRegistry } from '../tools/registry.js';
import type { CommandEgress, ConversationState, ToolContext } from '../tools/types.js';
import type { EgressRequester } from '../egress/approvals.js';
import { workspaceQuota } from '../tools/workspace-quota.js';
import type { Tier } from '../../policies/tiers.js';
import { askUser, humanWaits } from './human-wait.js';
import { finishWithout, reportRunEnd, stoppedEvent, systemPrompt, trimToConsistent, type RunOutcome } from './run-end.js';
import type { Delivery } from './turn-queue.js';
import type { Outbox, RunRecord, Turn } from './turn.js';
import { noTelemetry, type Telemetry } from '../telemetry/types.js';
import { childLog, prefixedLog, type Log, messageOf } from '../log.js';
import { budgetedModel, BudgetExceededError, BudgetGate, limitOf } from '../budget/gate.js';
import { softLimitApprover } from '../budget/soft-approval.js';
import { closeOrphanedCards, SubagentSession } from '../tools/builtin/subagent/host.js';

/** What a run needs from the runner (its options, plus its per-conversation state). */
export interface RunDeps {
  model: ModelClient;
  /** Spend totals (agent/budget/gate.ts): every agent's are counted, a `budget`'s limits enforced; absent: neither. */
  spend?: SpendRepo;
  conversations: ConversationStore;
  runs: RunRepo;
  broker: ApprovalBroker;
  registry(agent: AgentSettings): ToolRegistry;
  prepareTools?(agent: AgentSettings): Promise<void>;
  agents: AgentDirectory;
  allowlists: PersistedAllowlists;
  outputs: OutputResolver;
  classify(agent: AgentSettings, command: string): Promise<{ tier: Tier; note?: string; usage?: Usage }>;
  audit?: Audit;
  /** Metrics and traces of runs, model calls and tool calls (agent/telemetry). */
  telemetry?: Telemetry;
  systemExtra?(agent: AgentSettings, conversationKey: string): Promise<string>;
  /** Checks a run's fence before its answer is posted (replicas). */
  leases?: LeaseRepo;
  slots: Slots;
  log: Log;
  /** The runner is closing: a run not started yet stays stored for the next start. */
  closed(): boolean;
  /** The run's abort controller while it runs (for /stop and shutdown), undefined after. */
  running(key: string, controller: AbortController | undefined): void;
  parked(key: string, waiting: boolean): void;
  /** The clock of run deadlines (default: the real one; tests move a fake one). */
  clock?: RunClock;
  egress?: EgressOpener;
}

/** Opens one command's egress proxy for its run (bot/service/app.ts: the EgressHub session with its approvals gate). */
export interface EgressOpener {
  open(who: EgressRequester): Promise<CommandEgress | undefined>;
}

/** `delivery`: how a shared queue delivered the turn (its fence, and what it offers to save round trips). */
export type RunJob = ({ kind: 'turn'; turn: Turn; queuedId: string } | { kind: 'resume'; record: RunRecord }) & { fence?: Fence; delivery?: Delivery };

export async function executeRun(d: RunDeps, job: RunJob): Promise<void> {
  if (d.closed()) return; // a queued turn stays stored: the next start runs it
  const turn = job.kind === 'turn' ? job.turn : undefined;
  const resumed = job.kind === 'resume' ? job.record : undefined;
  const queuedId = job.kind === 'turn' ? job.queuedId : undefined;
  const key = turn?.conversationKey ?? resumed!.conversationKey;
  const agentName = turn?.agentName ?? resumed!.agentName;
  const output = d.outputs(key);
  const runId = resumed?.runId ?? turn?.runId ?? randomUUID();
  // Every line of this run carries its conversation, agent and run id.
  const log = childLog(d.log, { conversation: key, agent: agentName, runId });
  const fence = job.fence;
  let lost: FencedError | undefined;
  let onLost = () => undefined as void;
  /** The conversation went to another replica: from here on nothing is written or posted. */
  const lose = (err: FencedError) => {
    if (lost) return;
    lost = err;
    log('warn', `lost conversation ${key} to another replica (epoch ${err.fence.epoch}, now ${err.current ?? 'none'}): not writing or posting`);
    onLost();
  };
  const emit = async (e: AgentEvent): Promise<void> => {
    if (lost) return;
    try {
      await output.emit(e);
    } catch (err) {
      log('error', `[${key}] could not deliver ${e.type}: ${messageOf(err)}`);
    }
  };
  const agent = d.agents.get(agentName);
  if (!agent) {
    await emit({ type: 'error', runId, message: `This conversation's agent "${agentName}" is not configured any more.` });
    await emit({ type: 'run_finished', runId, reason: 'failed' });
    await d.conversations.checkpoint(key, undefined, { record: null, ...(queuedId ? { dropTurn: queuedId } : {}), ...(fence ? { fence } : {}) });
    return;
  }

  // Phase 1: load.
  let stored: StoredConversation | undefined;
  try {
    const revision = job.delivery?.revision;
    stored = await d.conversations.load(key, { raw: resumed !== undefined, ...(revision !== undefined ? { revision } : {}) });
  } catch (err) {
    // Nothing ran and nothing was written: the user is told to send it again, so it is not kept.
    log('error', `[${key}] could not read the transcript: ${messageOf(err)}`);
    await emit({
      type: 'error',
      runId,
      message: 'I could not read this conversation from storage (a problem on my side). Please send that again in a moment.',
    });
    await emit({ type: 'run_finished', runId, reason: 'failed' });
    if (queuedId) await d.runs.dropTurn(key, queuedId).catch(() => undefined);
    return;
  }

  // Phase 2: a slot. Who holds it: the turn's sender (a resumed run's starter) in this conversation's place.
  const controller = new AbortController();
  onLost = () => controller.abort(new Error('lost the conversation to another replica'));
  d.running(key, controller);
  const starter = resumed ? { platform: resumed.platform, id: resumed.starter.id } : { platform: turn!.platform, id: turn!.sender.id };
  const claim: SlotClaim = { user: `${starter.platform}:${starter.id}`, place: placeOf(key) };
  const waitNote = () => log('info', `[${key}] waiting for a run slot (user ${claim.user}, place ${claim.place})`);
  await d.slots.acquire(claim, waitNote);
  let timedOut = false;
  const overrides = resumed?.overrides ?? turn?.overrides;
  const runTimeoutMs = overrides?.runTimeoutMs ?? agent.runTimeoutMs;
  const deadline = new Deadline(
    runTimeoutMs,
    () => {
      timedOut = true;
      controller.abort(new Error('timeout'));
    },
    d.clock,
  );
  const waits = humanWaits({ slots: d.slots, claim, deadline, waitNote, parked: (w) => d.parked(key, w) });
  const humanWait = <T>(w: () => Promise<T>): Promise<T> => waits.wait(w);
  // Classifier usage is counted apart from the conversation's.
  const classifierUsage = { total: emptyUsage(), used: false };
  let usage: Usage = emptyUsage();

  const conv: StoredConversation = stored ?? { agent: agentName, messages: [], state: {}, updatedAt: Date.now() };
  const record: RunRecord = resumed ?? {
    runId,
    agentName,
    conversationKey: key,
    platform: turn!.platform,
    starter: turn!.sender,
    humanAvailable: turn!.humanAvailable ?? true,
    ...(turn!.overrides ? { overrides: turn!.overrides } : {}),
    calls: {},
  };
  if (turn) appendUserTurn(conv.messages, [...(turn.text ? [{ type: 'text' as const, text: turn.text }] : []), ...(turn.attachments ?? [])]);
  const release = () => {
    deadline.clear();
    if (waits.holdsSlot) d.slots.release(claim);
    d.running(key, undefined);
  };
  if (resumed && conv.messages.at(-1)?.role !== 'user' && unansweredToolUses(conv.messages).length === 0) {
    // It had already answered; nothing to continue but posting its answer, if its replica died before.
    release();
    if (resumed.outbox && !(fence && d.leases && !(await d.leases.holds(fence)))) {
      await emit(
        resumed.outbox.type === 'answer' ? { type: 'answer', runId, text: resumed.outbox.text } : { type: 'error', runId, message: resumed.outbox.message },
      );
      await emit({ type: 'run_finished', runId, reason: resumed.outbox.type === 'answer' ? 'completed' : 'failed' });
    }
    await d.runs.dropRecord(key, fence).catch((err: unknown) => {
      if (!(err instanceof FencedError)) throw err;
      lose(err);
    });
    return;
  }

  let checkpointed = resumed !== undefined;
  // A turn that never waits or runs a tool writes no run record: nothing to drop at the end.
  let recordWritten = resumed !== undefined;
  let turnDropped = queuedId === undefined;
  const saveRecord = async () => {
    recordWritten = true;
    await d.runs.saveRecord(key, record, fence);
  };
  const states: CallStates = {
    get: (id) => record.calls[id],
    set: async (id, s) => {
      record.calls[id] = s;
      await saveRecord();
    },
  };
  const convState: ConversationState = {
    get: <T>(name: string) => conv.state[name] as T | undefined,
    set: (name, value) => {
      conv.state[name] = value;
    },
  };
  await d.prepareTools?.(agent);
  const tools = d.registry(agent).toolset(agent.tools, { humanAvailable: record.humanAvailable });
  const policy = (): AgentPolicy => {
    const a = d.agents.get(agentName) ?? agent;
    return {
      name: a.name,
      tier: overrides?.tier ?? a.tier,
      autoApprovedTools: [...a.autoApprovedTools, ...d.allowlists.tools(a.name)],
      autoApprovedCommands: [...a.autoApprovedCommands, ...d.allowlists.commands(a.name)],
      approvers: overrides?.approvers ? { ...a.approvers, ...overrides.approvers } : a.approvers,
      ...(overrides?.noApproverFix ? { noApproverFix: overrides.noApproverFix } : {}),
      ...(a.toolPolicy ? { toolPolicy: a.toolPolicy } : {}),
      ...(a.commandRules ? { commandRules: a.commandRules } : {}),
    };
  };
  // Sub-agents (spawn_subagent) run under the run's batch context (its gate, approvers, signal).
  let batch: BatchContext | undefined;
  const runKept = (calls: Parameters<typeof runToolBatch>[0], b: BatchContext) => runToolBatch(calls, (batch = b));
  let subagents: SubagentSession | undefined;
  const keeper = contextKeeperFor({ model: d.model, agent, key, conv, store: d.conversations, tools, log: prefixedLog(log, `[${key}] `) });
  const toolContext = (callId: string, signal: AbortSignal): ToolContext => {
    const ctx: ToolContext = {
      workspace: agent.workspace,
      signal,
      conversationKey: key,
      agentName,
      sender: { platform: record.platform, ...record.starter },
      envAllowlist: agent.envAllowlist,
      state: convState,
      transcript: () => conv.messages,
      addUsage: (u) => (usage = addUsage(usage, u)),
      context: {
        info: () => keeper.info(conv.messages),
        compact: (focus) => keeper.compact(conv.messages, { signal, addUsage: (u) => (usage = addUsage(usage, u)), ...(focus ? { focus } : {}) }),
      },
    };
    const parentBatch = batch;
    if (subagents && parentBatch) ctx.subagents = subagents.runner(0, tools, () => parentBatch, callId);
    const egress = d.egress;
    if (egress)
      ctx.egress = (command) =>
        egress.open({
          agentName,
          conversationKey: key,
          platform: record.platform,
          runId,
          starterId: record.starter.id,
          approvers: () => policy().approvers[record.platform] ?? [],
          // An unattended headless run: a tier (--approval-policy) cannot admit a host; only a person can.
          ...(overrides?.noApproverFix && record.platform === 'cli' ? { noApproverFix: 'run it again with --interactive-stdin to approve it' } : {}),
          timeoutMs: (d.agents.get(agentName) ?? agent).approvalTimeoutMs,
          signal,
          command,
        });
    if (record.humanAvailable) ctx.askUser = (q) => askUser(q, { broker: d.broker, key, agent, record, callId, states, humanWait, emit, signal });
    return ctx;
  };

  /** The end of the run in one transaction: the transcript (when given), the record and queued turn gone. */
  let finished = false;
  const finish = async (save: boolean, outbox?: Outbox) => {
    await d.conversations.checkpoint(key, save ? conv : undefined, {
      ...(outbox ? { record: { ...record, outbox } } : recordWritten ? { record: null } : {}),
      ...(!turnDropped ? { dropTurn: queuedId! } : {}),
      ...(fence ? { fence } : {}),
    });
    finished = true;
  };

  // Phase 3: the loop.
  if (resumed)
    await closeOrphanedCards(record.calls, d.broker).catch((err: unknown) =>
      log('warn', `[${key}] could not close the cards of interrupted sub-agents: ${messageOf(err)}`),
    );
  const quota = workspaceQuota(agent.workspace, agent.workspaceMaxBytes ?? 0);
  await emit({ type: 'run_started', runId });
  d.audit?.({ event: 'run_started', conversation: key, agent: agentName, runId, resumed: resumed !== undefined });
  const observed = (d.telemetry ?? noTelemetry).run({ runId, agent: agentName, conversation: key, model: agent.model, resumed: resumed !== undefined });
  let reason: RunOutcome = 'completed';
  let budgetLimit: RunLimit['scope'] | undefined;
  try {
    // Every model call of the run (reminders and scheduled turns included) reserves against the budget.
    // Only an agent with a budget pays for the count (two store writes per model call, a shared row
    // per agent and day across replicas): without one, spend is not counted.
    // Over a soft limit the approvers get a card (agent/budget/soft-approval.ts).
    const soft = softLimitApprover({
      broker: d.broker,
      record,
      approvers: () => policy().approvers,
      timeoutMs: agent.approvalTimeoutMs,
      humanWait,
      signal: controller.signal,
    });
    const budget = d.spend && agent.budget ? new BudgetGate({ spend: d.spend, limits: agent.budget, ...soft }) : undefined;
    const requester = turn ? `${turn.platform}:${turn.sender.id}` : undefined;
    const model = budget ? budgetedModel(d.model, budget, () => ({ agent: agentName, conversation: key, ...(requester ? { user: requester } : {}) })) : d.model;
    subagents = new SubagentSession({
      runId,
      agent: () => d.agents.get(agentName) ?? agent,
      model,
      addUsage: (u) => (usage = addUsage(usage, u)),
      telemetry: observed,
      log: prefixedLog(log, `[${key}] sub-agent: `),
    });
    const outcome = await runLoop({
      runId,
      model,
      modelName: agent.model,
      system: await systemPrompt(d.systemExtra, agent, key, log),
      tools: [...tools.values()].filter((t) => !t.serverTool || serverToolOffered(policy().toolPolicy, t.name)).map(toolSpec),
      maxTokens: agent.maxTokens,
      maxIterations: agent.maxIterations,
      messages: conv.messages,
      signal: controller.signal,
      emit,
      streamText: output.streamsText,
      ...(agent.thinking ? { thinking: agent.thinking, emitThinking: output.streamsThinking === true } : {}),
      // A tool the API ran (server-side web search) was allowed by being offered: read-only, in the toolset.
      onServerTool: (use) =>
        d.audit?.({
          event: 'gate_decision',
          conversation: key,
          agent: agentName,
          runId,
          tool: use.name,
          decision: 'allow',
          tier: 'read-only',
          rule: 'run by the API',
        }),
      telemetry: observed,
      addUsage: (u) => {
        usage = addUsage(usage, u);
      },
      keeper,
      // Phase 4: checkpoint. From here the turn lives in the transcript (and the run record): it must not run twice.
      checkpoint: async () => {
        const open = unansweredToolUses(conv.messages).length > 0;
        const clear = !open && Object.keys(record.calls).length > 0;
        if (clear) record.calls = {};
        await d.conversations.checkpoint(key, conv, {
          ...(!turnDropped ? { dropTurn: queuedId! } : {}),
          ...(open || clear ? { record } : {}),
          ...(fence ? { fence } : {}),
        });
        checkpointed = true;
        turnDropped = true;
        if (open || clear) recordWritten = true;
      },
      runBatch: (calls) =>
        runKept(calls, {
          runId,
          conversationKey: key,
          platform: record.platform,
          agentName,
          starterId: record.starter.id,
          tools,
          toolContext,
          policy,
          classify: async (c) => {
            const { usage: u, ...verdict } = await d.classify(d.agents.get(agentName) ?? agent, c);
            if (u) {
              classifierUsage.total = addUsage(classifierUsage.total, u);
              classifierUsage.used = true;
            }
            return verdict;
          },
          broker: d.broker,
          approvalTimeoutMs: agent.approvalTimeoutMs,
          emit,
          signal: controller.signal,
          states,
          addAlways: (a) => d.allowlists.add(agentName, a),
          watchAllowlist: (recheck) => d.allowlists.watch(agentName, recheck),
          humanWait,
          ...(d.audit ? { audit: d.audit } : {}),
          telemetry: observed,
          ...(quota ? { workspaceQuota: quota } : {}),
        }),
    });
    let last: AgentEvent;
    if (outcome.kind === 'answer') {
      last = { type: 'answer', runId, text: outcome.text.trim() === '' ? '(no answer)' : outcome.text };
    } else if (outcome.kind === 'max_iterations') {
      reason = 'max_iterations';
      last = {
        type: 'error',
        runId,
        message: `Stopped after ${agent.maxIterations} steps without a final answer (maxIterations). Ask me to continue if needed.`,
      };
    } else {
      reason = timedOut ? 'timeout' : 'stopped';
      last = stoppedEvent(runId, timedOut, runTimeoutMs);
    }
    if (fence) {
      // Phase 5 (replicas): stored before posted, with the answer in the run record (an outbox), so a
      // replica that dies in between is neither answered twice nor silent: the next one posts it.
      // The fenced checkpoint is the check that the conversation is still ours: a replica that took
      // it first makes this checkpoint throw, and one that takes it later waits for it and finds the outbox.
      await finish(true, last.type === 'answer' ? { type: 'answer', text: last.text } : { type: 'error', message: last.type === 'error' ? last.message : '' });
      await emit(last);
      // The queue's next read under this hold drops it when it offers to (one statement fewer).
      const later = job.delivery?.dropRecordLater;
      if (later) later();
      else
        await d.runs.dropRecord(key, fence).catch((err: unknown) => {
          if (err instanceof FencedError) throw err;
          // Posted already: say so rather than tell the user something failed.
          log('warn', `[${key}] run ${runId}: answer posted, but its outbox record could not be dropped (${messageOf(err)}): a takeover may post it again`);
        });
    } else {
      await emit(last);
      // Phase 5: finish.
      await finish(true);
    }
  } catch (err) {
    if (err instanceof FencedError) lose(err);
    if (lost) {
      reason = 'failed';
    } else if (controller.signal.aborted) {
      reason = timedOut ? 'timeout' : 'stopped';
      await emit(stoppedEvent(runId, timedOut, runTimeoutMs));
    } else if (err instanceof BudgetExceededError) {
      reason = 'failed';
      log('info', `[${key}] run ${runId}: ${err.message}`);
      d.audit?.({ event: 'limit_refused', limit: 'budget', conversation: key, platform: record.platform, agent: agentName, runId });
      const limit = limitOf(err.refusal);
      budgetLimit = limit.scope;
      await emit({ type: 'error', runId, message: err.message, limit });
    } else {
      reason = 'failed';
      const message = err instanceof ModelError ? err.userMessage : 'Something went wrong on my side; the error was logged. Please try again.';
      // A model failure is expected operations (its detail is enough); anything else is a bug: keep the stack.
      if (err instanceof ModelError) log('warn', `[${key}] run ${runId}: model call failed (${err.code}): ${err.message}`);
      else log('error', `[${key}] run ${runId} failed: ${(err as Error).stack ?? String(err)}`);
      await emit({ type: 'error', runId, message });
    }
    // Keep the transcript only up to a consistent point: drop an unanswered tail, and everything
    // of this run if the model never replied to it.
    trimToConsistent(conv.messages);
    if (!lost) await finish(checkpointed).catch((e: unknown) => (e instanceof FencedError ? lose(e) : Promise.reject(e)));
  } finally {
    release();
    // The transcript could not be saved: the record and the queued turn still go (as before a checkpoint).
    if (!lost && !finished && (recordWritten || !turnDropped)) await finishWithout(d.runs, key, recordWritten, turnDropped ? undefined : queuedId, fence);
  }
  observed.end({ outcome: lost ? 'failed' : reason, usage, ...(budgetLimit ? { budgetLimit } : {}) });
  const spawned = subagents?.usage();
  await reportRunEnd(
    { audit: d.audit, emit },
    {
      conversation: key,
      agent: agentName,
      runId,
      platform: record.platform,
      outcome: lost ? 'lost' : reason,
      usage,
      ...(classifierUsage.used ? { classifierUsage: classifierUsage.total } : {}),
      ...(spawned ? { subagents: spawned } : {}),
    },
  );
}
