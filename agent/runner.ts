/**
 * The runner: one serial lane per conversation key, a global cap on runs in progress, and the
 * lifecycle of a run (events, timeout, /stop, durable waits, usage).
 *
 * Contract:
 * - `submit` never drops a message: it is stored before `submit` resolves, and a turn that arrives
 *   while its conversation runs waits in that
 *   conversation's lane (p-queue, concurrency 1). Different conversations run in parallel up to
 *   `maxConcurrentRuns`, at most `maxRunsPerUser` for one user (the turn's sender) and
 *   `maxRunsPerPlace` in one place (a chat or channel with its topics and threads), and the last
 *   `reservedRuns` slots only for users running nothing (agent/run-limits.ts). A turn over a cap
 *   waits for a slot, it is not refused. A run waiting on a human gives its slot back while it waits.
 * - Events of a run go to the conversation's output in order. Exactly one of `answer`/`error`
 *   ends a run, then `usage` and `run_finished`.
 * - `stop(key)` aborts the running turn: in-flight tools are interrupted, pending cards are settled,
 *   and the saved transcript stays valid.
 * - Durable waits: when a run enters a tool batch, its transcript and a run record (call states) are
 *   saved; `resumeAll()` at start shows each waiting run's pending cards again (broker.reshowPending)
 *   and continues every run that was waiting when the process stopped.
 * - The system prompt is the agent's, plus `systemExtra(agent, key)` (its memory) read at every run.
 * - Audit (when `audit` is given): run_started and run_finished (outcome, tokens, cost) per run; the
 *   executor adds one gate_decision per call.
 * - Per-turn overrides (headless runs, `Turn.overrides`): tier, approvers and run timeout for that turn
 *   only, stored with its run record so a resumed run keeps them.
 * - A model failure after retries is shown to the user as a short message; the transcript is saved
 *   only up to its last consistent point (a run that failed before any model reply saves nothing).
 */
import { KeyedChain } from './keyed-chain.js';
import { Deadline, Slots, placeOf, type SlotClaim } from './run-limits.js';
import { randomUUID } from 'node:crypto';
import PQueue from 'p-queue';
import { z } from 'zod';
import type { AgentPolicy } from '../policies/gate.js';
import type { Tier } from '../policies/tiers.js';
import type { PersistedAllowlists } from './allowlists.js';
import type { Audit } from './audit.js';
import { newToken, type ApprovalBroker } from './approvals.js';
import { appendUserTurn, type ConversationStore, type StoredConversation } from './conversation-store.js';
import { contextKeeperFor } from './context-keeper.js';
import type { AgentEvent, Usage } from './events.js';
import type { KV } from './kv.js';
import { runLoop, unansweredToolUses } from './loop.js';
import type { ContentBlock } from './messages.js';
import { ModelError, type ModelClient } from './model-types.js';
import type { OutputResolver } from './output.js';
import { addUsage, emptyUsage } from './pricing.js';
import type { AgentDirectory, AgentSettings } from './settings.js';
import { CallState, runToolBatch, type CallStates } from './tools/executor.js';
import { workspaceQuota } from './tools/workspace-quota.js';
import type { ToolRegistry } from './tools/registry.js';
import { toolSpec } from './tools/registry.js';
import type { ConversationState, QuestionAnswer, QuestionRequest, ToolContext } from './tools/types.js';

export interface Turn {
  agentName: string;
  conversationKey: string;
  platform: string;
  sender: { id: string; name?: string };
  text: string;
  /** Extra content (images, text documents) sent along with the text. */
  attachments?: ContentBlock[];
  /** False where nobody can answer a question (ask_user_question is then not offered). */
  humanAvailable?: boolean;
  /** Chosen by the caller so it can tell this turn's events apart (default: a new id). */
  runId?: string;
  /** Per-turn policy (headless runs): replaces the agent's tier / approvers / run timeout for this turn. */
  overrides?: TurnOverrides;
}

export interface TurnOverrides {
  tier?: Tier;
  approvers?: Record<string, string[]>;
  runTimeoutMs?: number;
  /** What would let a declined call run, said in the decline (see policies/gate.ts noApproverFix). */
  noApproverFix?: string;
}

const TurnOverridesSchema = z
  .object({ tier: z.enum(['read-only', 'low-risk', 'high-risk']).optional(), approvers: z.record(z.string(), z.array(z.string())).optional(), runTimeoutMs: z.number().optional(), noApproverFix: z.string().optional() })
  .optional();

export interface RunnerOptions {
  model: ModelClient;
  store: ConversationStore;
  runs: KV;
  broker: ApprovalBroker;
  /** The tool registry for an agent (per agent: tools may take agent settings, e.g. command timeouts). */
  registry(agent: AgentSettings): ToolRegistry;
  /** Called before a run takes its toolset (MCP: lists a server never listed before; bounded, never throws). */
  prepareTools?(agent: AgentSettings): Promise<void>;
  agents: AgentDirectory;
  allowlists: PersistedAllowlists;
  outputs: OutputResolver;
  /** Rates a command for an agent; sees the command alone. */
  /** `usage`: the classifier request this call made, if it made one (reported on the run's usage event). */
  classify(agent: AgentSettings, command: string): Promise<{ tier: Tier; note?: string; usage?: Usage }>;
  maxConcurrentRuns?: number;
  /** Runs at once per user across places (default 2; Infinity: no cap). */
  maxRunsPerUser?: number;
  /** Runs at once per place: a chat or channel with its topics and threads (default 3; Infinity: no cap). */
  maxRunsPerPlace?: number;
  /** Global slots kept for users who run nothing yet (default 1, at most maxConcurrentRuns - 1). */
  reservedRuns?: number;
  log?: (level: 'info' | 'warn' | 'error', msg: string) => void;
  /** The audit trail: runs started and finished, gate decisions (through the executor). */
  audit?: Audit;
  /** Appended to the agent's system prompt, read at the start of every run (the agent's memory). */
  systemExtra?(agent: AgentSettings, conversationKey: string): Promise<string>;
}

const RunRecord = z.object({
  runId: z.string(),
  agentName: z.string(),
  conversationKey: z.string(),
  platform: z.string(),
  starter: z.object({ id: z.string(), name: z.string().optional() }),
  humanAvailable: z.boolean(),
  overrides: TurnOverridesSchema,
  calls: z.record(z.string(), CallState),
});
type RunRecord = z.infer<typeof RunRecord>;

/** Turns accepted but not yet part of a saved transcript, per conversation (survive a restart). */
const QueuedTurns = z.array(
  z.object({
    id: z.string(),
    turn: z.object({
      agentName: z.string(),
      conversationKey: z.string(),
      platform: z.string(),
      sender: z.object({ id: z.string(), name: z.string().optional() }),
      text: z.string(),
      attachments: z.array(z.unknown()).optional(),
      humanAvailable: z.boolean().optional(),
      runId: z.string().optional(),
      overrides: TurnOverridesSchema,
    }),
  }),
);

type QueuedTurn = { id: string; turn: Turn };

interface Lane {
  queue: PQueue;
  current?: AbortController;
  /** The running turn is parked on an approval or a question. */
  waitingOnHuman?: boolean;
}

export class Runner {
  private readonly lanes = new Map<string, Lane>();
  private readonly slots: Slots;
  private closed = false;

  constructor(private readonly opts: RunnerOptions) {
    this.slots = new Slots({
      ...(opts.maxConcurrentRuns !== undefined ? { total: opts.maxConcurrentRuns } : {}),
      ...(opts.maxRunsPerUser !== undefined ? { perUser: opts.maxRunsPerUser } : {}),
      ...(opts.maxRunsPerPlace !== undefined ? { perPlace: opts.maxRunsPerPlace } : {}),
      ...(opts.reservedRuns !== undefined ? { reserved: opts.reservedRuns } : {}),
    });
  }

  /**
   * Queues a turn in its conversation's lane. Resolves once the turn is stored (it then survives a
   * restart); `finished` resolves when it has run.
   */
  async submit(turn: Turn): Promise<{ finished: Promise<void> }> {
    const key = turn.conversationKey;
    const id = randomUUID();
    // Enqueued synchronously (lane order = arrival order); stored through a per-key chain.
    const stored = this.chains.run(key, () => this.storeQueued(key, { id, turn }));
    const finished = this.enqueue(key, async () => {
      // The transcript is read while the turn's own write finishes: the run needs both.
      const transcript = this.opts.store.load(key);
      transcript.catch(() => undefined); // awaited in execute; a failure is reported there
      // Not stored: the caller was told to send it again, so it must not also run.
      if (await stored.then(() => false, () => true)) return;
      await this.execute(turn, undefined, id, transcript);
    });
    await stored;
    return { finished };
  }

  /** Aborts the running turn of a conversation. Returns false when nothing was running. */
  stop(conversationKey: string): boolean {
    const lane = this.lanes.get(conversationKey);
    if (!lane?.current) return false;
    lane.current.abort(new Error('stopped'));
    return true;
  }

  /** Starts a new conversation in that place, after whatever is running there. */
  reset(conversationKey: string, agentName: string): Promise<void> {
    this.stop(conversationKey);
    return this.enqueue(conversationKey, async () => {
      await this.opts.store.reset(conversationKey, agentName);
      await this.dropRecord(conversationKey);
    });
  }

  isBusy(conversationKey: string): boolean {
    return this.lanes.has(conversationKey);
  }

  /** Whether the conversation's running turn is parked on an approval or a question. */
  isWaitingOnHuman(conversationKey: string): boolean {
    return this.lanes.get(conversationKey)?.waitingOnHuman === true;
  }

  /**
   * Continues every run that was waiting when the process stopped, then the turns that were queued
   * behind them (or not started). Returns how many runs and turns were picked up.
   */
  async resumeAll(): Promise<number> {
    // The namespace holds only live state (run records and queued turns), so listing it is cheap,
    // and no index key has to be rewritten as conversations come and go.
    const records: RunRecord[] = [];
    const queued: Array<[string, QueuedTurn[]]> = [];
    const unreadable: string[] = [];
    for await (const [name, value] of this.entries()) {
      if (name.startsWith('run:')) {
        const rec = RunRecord.safeParse(value);
        if (rec.success) records.push(rec.data);
        else unreadable.push(name);
      } else if (name.startsWith('q:')) {
        const list = QueuedTurns.safeParse(value);
        if (list.success && list.data.length > 0) queued.push([name.slice(2), list.data as QueuedTurn[]]);
        else unreadable.push(name);
      }
    }
    // Deleted after the listing: the SQLite store pages through it by offset.
    for (const name of unreadable) {
      this.log('warn', `dropping an unreadable entry of the runs store: ${name}`);
      await this.opts.runs.delete(name);
    }
    let n = 0;
    for (const rec of records) {
      n++;
      this.opts.broker.noteResumed(rec.conversationKey);
      // Whoever was to decide sees the card again (a terminal chat starts on an empty screen).
      await this.opts.broker
        .reshowPending(rec.conversationKey)
        .catch((err: unknown) => this.log('warn', `[${rec.conversationKey}] could not show its pending cards again: ${(err as Error).message}`));
      void this.enqueue(rec.conversationKey, () => this.execute(undefined, rec));
    }
    for (const [key, list] of queued) {
      this.queued.set(key, list);
      for (const q of list) {
        n++;
        void this.enqueue(key, () => this.execute(q.turn, undefined, q.id));
      }
    }
    return n;
  }

  private entries(): AsyncIterable<[string, unknown]> {
    const list = this.opts.runs.iterator;
    if (!list) throw new Error('the store cannot list its entries, so runs cannot be resumed after a restart');
    return list.call(this.opts.runs);
  }

  /** Resolves when every lane is idle (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.lanes.size > 0) {
      await Promise.all([...this.lanes.values()].map((l) => l.queue.onIdle()));
    }
  }

  /**
   * Stops accepting work, drops queued turns, and gives running turns up to `graceMs` to finish.
   * Runs waiting on a human are left parked: their state is stored and a restart continues them.
   */
  async close(graceMs = 10_000): Promise<void> {
    this.closed = true;
    for (const lane of this.lanes.values()) lane.queue.clear();
    const busy = () => [...this.lanes.values()].filter((l) => l.queue.pending > 0 && !l.waitingOnHuman);
    const waitUntil = async (end: number) => {
      while (Date.now() < end && busy().length > 0) await new Promise((r) => setTimeout(r, 10));
    };
    await waitUntil(Date.now() + graceMs);
    // Past the grace: interrupt what still runs, so its transcript is closed properly.
    for (const lane of busy()) lane.current?.abort(new Error('shutting down'));
    await waitUntil(Date.now() + 2_000);
  }

  private enqueue(key: string, task: () => Promise<void>): Promise<void> {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { queue: new PQueue({ concurrency: 1 }) };
      this.lanes.set(key, lane);
    }
    const l = lane;
    const done = l.queue.add(task).then(
      () => undefined,
      (err: unknown) => this.log('error', `[${key}] run crashed: ${(err as Error).stack ?? String(err)}`),
    );
    // Idle lanes are dropped so 10,000 quiet conversations cost nothing here.
    void done.finally(() => {
      if (l.queue.size === 0 && l.queue.pending === 0 && this.lanes.get(key) === l) this.lanes.delete(key);
    });
    return done;
  }

  private log(level: 'info' | 'warn' | 'error', msg: string): void {
    (this.opts.log ?? ((lvl, m) => (lvl === 'error' ? console.error(m) : undefined)))(level, msg);
  }

  /** One run: a new turn, or the continuation of a stored one. */
  private async execute(
    turn: Turn | undefined,
    resumed: RunRecord | undefined,
    queuedId?: string,
    transcript?: Promise<StoredConversation | undefined>,
  ): Promise<void> {
    if (this.closed) return; // a queued turn stays stored: the next start runs it
    const key = turn?.conversationKey ?? resumed!.conversationKey;
    const agentName = turn?.agentName ?? resumed!.agentName;
    const output = this.opts.outputs(key);
    const runId = resumed?.runId ?? turn?.runId ?? randomUUID();
    const emit = async (e: AgentEvent): Promise<void> => {
      try {
        await output.emit(e);
      } catch (err) {
        this.log('error', `[${key}] could not deliver ${e.type}: ${(err as Error).message}`);
      }
    };
    const agent = this.opts.agents.get(agentName);
    if (!agent) {
      await emit({ type: 'error', runId, message: `This conversation's agent "${agentName}" is not configured any more.` });
      await emit({ type: 'run_finished', runId, reason: 'failed' });
      await this.dropRecord(key);
      return;
    }

    let stored: StoredConversation | undefined;
    try {
      stored = await (transcript ?? this.opts.store.load(key, { raw: resumed !== undefined }));
    } catch (err) {
      // Nothing ran and nothing was written: the user is told to send it again, so it is not kept.
      this.log('error', `[${key}] could not read the transcript: ${(err as Error).message}`);
      await emit({ type: 'error', runId, message: 'I could not read this conversation from storage (a problem on my side). Please send that again in a moment.' });
      await emit({ type: 'run_finished', runId, reason: 'failed' });
      if (queuedId) await this.dropQueued(key, queuedId).catch(() => undefined);
      return;
    }

    const lane = this.lanes.get(key)!;
    const controller = new AbortController();
    lane.current = controller;
    // Who holds the slot: the turn's sender (a resumed run's starter) in this conversation's place.
    const starter = resumed ? { platform: resumed.platform, id: resumed.starter.id } : { platform: turn!.platform, id: turn!.sender.id };
    const claim: SlotClaim = { user: `${starter.platform}:${starter.id}`, place: placeOf(key) };
    const waitNote = () => this.log('info', `[${key}] waiting for a run slot (user ${claim.user}, place ${claim.place})`);
    await this.slots.acquire(claim, waitNote);
    let holdsSlot = true;
    let timedOut = false;
    const overrides = resumed?.overrides ?? turn?.overrides;
    const runTimeoutMs = overrides?.runTimeoutMs ?? agent.runTimeoutMs;
    const deadline = new Deadline(runTimeoutMs, () => {
      timedOut = true;
      controller.abort(new Error('timeout'));
    });
    // Classifier usage is counted apart from the conversation's.
    const classifierUsage = { total: emptyUsage(), used: false };
    let usage: Usage = emptyUsage();

    const conv: StoredConversation = stored ?? { agent: agentName, messages: [], state: {}, updatedAt: Date.now() };
    const before = conv.messages.length;
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
    if (resumed && conv.messages.at(-1)?.role !== 'user' && unansweredToolUses(conv.messages).length === 0) {
      // It had already answered; nothing to continue.
      await this.dropRecord(key);
      deadline.clear();
      this.slots.release(claim);
      lane.current = undefined;
      return;
    }

    let checkpointed = resumed !== undefined;
    // A turn that never waits or runs a tool writes no run record: nothing to drop at the end.
    let recordWritten = resumed !== undefined;
    const saveRecord = async () => {
      recordWritten = true;
      await this.opts.runs.set(`run:${key}`, record);
    };
    const states: CallStates = {
      get: (id) => record.calls[id],
      set: async (id, s) => {
        record.calls[id] = s;
        await saveRecord();
      },
    };
    // Parallel tool calls of one run can wait on humans at once: the slot is given back when the
    // first wait starts and taken again when the last one ends (one claim per run, never one per
    // wait: a run re-acquiring once per card would hold several of its user's slots and deadlock).
    let humanWaits = 0;
    const humanWait = async <T>(wait: () => Promise<T>): Promise<T> => {
      if (humanWaits++ === 0) {
        deadline.pause();
        lane.waitingOnHuman = true;
        if (holdsSlot) {
          this.slots.release(claim);
          holdsSlot = false;
        }
      }
      try {
        return await wait();
      } finally {
        if (--humanWaits === 0) {
          lane.waitingOnHuman = false;
          if (!holdsSlot) {
            await this.slots.acquire(claim, waitNote);
            holdsSlot = true;
            // Another wait may have begun while this one queued for the slot: give it back again.
            if (humanWaits > 0) {
              this.slots.release(claim);
              holdsSlot = false;
            }
          }
          if (humanWaits === 0) deadline.resume();
        }
      }
    };
    const convState: ConversationState = {
      get: <T>(name: string) => conv.state[name] as T | undefined,
      set: (name, value) => {
        conv.state[name] = value;
      },
    };
    await this.opts.prepareTools?.(agent);
    const tools = this.opts.registry(agent).toolset(agent.tools, { humanAvailable: record.humanAvailable });
    const policy = (): AgentPolicy => {
      const a = this.opts.agents.get(agentName) ?? agent;
      return {
        name: a.name,
        tier: overrides?.tier ?? a.tier,
        autoApprovedTools: [...a.autoApprovedTools, ...this.opts.allowlists.tools(a.name)],
        autoApprovedCommands: [...a.autoApprovedCommands, ...this.opts.allowlists.commands(a.name)],
        approvers: overrides?.approvers ? { ...a.approvers, ...overrides.approvers } : a.approvers,
        ...(overrides?.noApproverFix ? { noApproverFix: overrides.noApproverFix } : {}),
        ...(a.toolPolicy ? { toolPolicy: a.toolPolicy } : {}),
        ...(a.commandRules ? { commandRules: a.commandRules } : {}),
      };
    };

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
      };
      if (record.humanAvailable) ctx.askUser = (q) => this.askUser(q, { key, agent, record, callId, states, humanWait, emit, signal });
      return ctx;
    };

    const quota = workspaceQuota(agent.workspace, agent.workspaceMaxBytes ?? 0);
    await emit({ type: 'run_started', runId });
    this.opts.audit?.({ event: 'run_started', conversation: key, agent: agentName, runId, resumed: resumed !== undefined });
    let reason: 'completed' | 'stopped' | 'failed' | 'timeout' | 'max_iterations' = 'completed';
    try {
      const outcome = await runLoop({
          runId,
          model: this.opts.model,
          modelName: agent.model,
          system: await this.systemPrompt(agent, key),
          tools: [...tools.values()].map(toolSpec),
          maxTokens: agent.maxTokens,
          maxIterations: agent.maxIterations,
          messages: conv.messages,
          signal: controller.signal,
          emit,
          streamText: output.streamsText,
          addUsage: (u) => {
            usage = addUsage(usage, u);
          },
          keeper: contextKeeperFor({ model: this.opts.model, agent, key, conv, store: this.opts.store, tools, log: (l, m) => this.log(l, `[${key}] ${m}`) }),
          checkpoint: async () => {
            checkpointed = true;
            await this.opts.store.save(key, conv);
            // From here the turn lives in the transcript (and the run record): it must not run twice.
            if (queuedId) await this.dropQueued(key, queuedId);
            if (unansweredToolUses(conv.messages).length > 0) await saveRecord();
            else if (Object.keys(record.calls).length > 0) {
              record.calls = {};
              await saveRecord();
            }
          },
          runBatch: (calls) =>
            runToolBatch(calls, {
              runId,
              conversationKey: key,
              platform: record.platform,
              agentName,
              tools,
              toolContext,
              policy,
              classify: async (c) => {
                const { usage: u, ...verdict } = await this.opts.classify(this.opts.agents.get(agentName) ?? agent, c);
                if (u) {
                  classifierUsage.total = addUsage(classifierUsage.total, u);
                  classifierUsage.used = true;
                }
                return verdict;
              },
              broker: this.opts.broker,
              approvalTimeoutMs: agent.approvalTimeoutMs,
              emit,
              signal: controller.signal,
              states,
              addAlways: (a) => this.opts.allowlists.add(agentName, a),
              watchAllowlist: (recheck) => this.opts.allowlists.watch(agentName, recheck),
              humanWait,
              ...(this.opts.audit ? { audit: this.opts.audit } : {}),
              ...(quota ? { workspaceQuota: quota } : {}),
            }),
      });
      if (outcome.kind === 'answer') {
        await emit({ type: 'answer', runId, text: outcome.text.trim() === '' ? '(no answer)' : outcome.text });
      } else if (outcome.kind === 'max_iterations') {
        reason = 'max_iterations';
        await emit({ type: 'error', runId, message: `Stopped after ${agent.maxIterations} steps without a final answer (maxIterations). Ask me to continue if needed.` });
      } else {
        reason = timedOut ? 'timeout' : 'stopped';
        await emit(stoppedEvent(runId, timedOut, runTimeoutMs));
      }
      await this.opts.store.save(key, conv);
    } catch (err) {
      if (controller.signal.aborted) {
        reason = timedOut ? 'timeout' : 'stopped';
        await emit(stoppedEvent(runId, timedOut, runTimeoutMs));
      } else {
        reason = 'failed';
        const message = err instanceof ModelError ? err.userMessage : 'Something went wrong on my side; the error was logged. Please try again.';
        // A model failure is expected operations (its detail is enough); anything else is a bug: keep the stack.
        if (err instanceof ModelError) this.log('warn', `[${key}] run ${runId}: model call failed (${err.code}): ${err.message}`);
        else this.log('error', `[${key}] run ${runId} failed: ${(err as Error).stack ?? String(err)}`);
        await emit({ type: 'error', runId, message });
      }
      // Keep the transcript only up to a consistent point: drop an unanswered tail, and everything
      // of this run if the model never replied to it.
      trimToConsistent(conv.messages);
      if (checkpointed) await this.opts.store.save(key, conv);
    } finally {
      deadline.clear();
      if (holdsSlot) this.slots.release(claim);
      lane.current = undefined;
      if (recordWritten) await this.dropRecord(key);
      if (queuedId) await this.dropQueued(key, queuedId);
    }
    const u: AgentEvent = { type: 'usage', runId, usage };
    if (classifierUsage.used) u.classifierUsage = classifierUsage.total;
    this.opts.audit?.({
      event: 'run_finished',
      conversation: key,
      agent: agentName,
      runId,
      outcome: reason,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      costUSD: usage.costUSD,
      costKnown: usage.costKnown,
      ...(classifierUsage.used ? { classifierTokens: classifierUsage.total.inputTokens + classifierUsage.total.outputTokens } : {}),
    });
    await emit(u);
    await emit({ type: 'run_finished', runId, reason });
  }

  /** The configured prompt plus `systemExtra`; a failure to read the extra is logged, the run goes on. */
  private async systemPrompt(agent: AgentSettings, key: string): Promise<string> {
    const extra = await (this.opts.systemExtra?.(agent, key) ?? Promise.resolve('')).catch((err: unknown) => {
      this.log('warn', `[${key}] could not read the agent's memory for the system prompt: ${(err as Error).message}`);
      return '';
    });
    return extra ? `${agent.system}\n\n${extra}` : agent.system;
  }

  private async askUser(
    q: QuestionRequest,
    c: {
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
    let questionId = prior?.status === 'started' ? prior.questionId : undefined;
    if (!questionId || !(await this.opts.broker.get(questionId))) {
      // Recorded before the card exists, as approvals are: a restart re-asks under the same id.
      questionId ??= newToken();
      await c.states.set(c.callId, { status: 'started', questionId });
      await this.opts.broker.askQuestion({
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
    const id = questionId;
    const d = await c.humanWait(() => this.opts.broker.wait(id, c.signal));
    const answer = d.outcome === 'answered' ? (d.answer ?? '') : null;
    await c.emit({ type: 'question_answered', runId: c.record.runId, callId: c.callId, answer, ...(d.by ? { by: d.byName ?? d.by } : {}) });
    const result: QuestionAnswer = { answer };
    if (d.by) result.by = d.byName ?? d.by;
    return result;
  }

  /** Store updates of one key, one after another. */
  private readonly chains = new KeyedChain();

  /**
   * Queued turns are mirrored in memory (this process is the store's only writer of them): a turn
   * costs one write when accepted and one when it becomes part of the transcript. A restart finds
   * them by listing the namespace (resumeAll).
   */
  private readonly queued = new Map<string, QueuedTurn[]>();

  private async storeQueued(key: string, entry: QueuedTurn): Promise<void> {
    const list = this.queued.get(key) ?? [];
    list.push(entry);
    this.queued.set(key, list);
    await this.opts.runs.set(`q:${key}`, list);
  }

  private dropQueued(key: string, id: string): Promise<void> {
    return this.chains.run(key, async () => {
      const list = this.queued.get(key) ?? [];
      const rest = list.filter((q) => q.id !== id);
      if (rest.length === list.length) return;
      if (rest.length > 0) {
        this.queued.set(key, rest);
        await this.opts.runs.set(`q:${key}`, rest);
      } else {
        this.queued.delete(key);
        await this.opts.runs.delete(`q:${key}`);
      }
    });
  }

  private async dropRecord(key: string): Promise<void> {
    await this.opts.runs.delete(`run:${key}`);
  }
}

function stoppedEvent(runId: string, timedOut: boolean, timeoutMs: number): AgentEvent {
  return timedOut
    ? { type: 'error', runId, message: `Stopped: the run took longer than ${Math.round(timeoutMs / 1000)} s (runTimeoutMs).` }
    : { type: 'answer', runId, text: 'Stopped.' };
}

/** Drops a trailing assistant turn whose tool calls have no results (a failure mid-batch). */
function trimToConsistent(messages: StoredConversation['messages']): void {
  while (unansweredToolUses(messages).length > 0) messages.pop();
}
