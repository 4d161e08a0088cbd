/**
 * The runner: turns go through a TurnQueue (one at a time per conversation), runs take slots (a
 * global cap on runs in progress), and each run goes through its phases (./execute-run.ts).
 *
 * Contract:
 * - `submit` never drops a message: it is stored before `submit` resolves, and a turn that arrives
 *   while its conversation runs waits in that conversation's lane (./turn-queue.ts). Different
 *   conversations run in parallel up to `maxConcurrentRuns`, at most `maxRunsPerUser` for one user
 *   (the turn's sender) and `maxRunsPerPlace` in one place (a chat or channel with its topics and
 *   threads), and the last `reservedRuns` slots only for users running nothing (agent/run/limits.ts).
 *   A turn over a cap waits for a slot, it is not refused. A run waiting on a human gives its slot
 *   back while it waits.
 * - Events of a run go to the conversation's output in order. Exactly one of `answer`/`error`
 *   ends a run, then `usage` and `run_finished`.
 * - `stop(key)` aborts the running turn: in-flight tools are interrupted, pending cards are settled,
 *   and the saved transcript stays valid.
 * - Durable waits: when a run enters a tool batch, its transcript and a run record (call states) are
 *   saved in one checkpoint; `resumeAll()` at start reads the store's run records and queued turns
 *   (the store is the truth, nothing is mirrored in memory), closes the cards a run will not wait on
 *   again (a command's network request, a spending check: their waiter was the stopped process;
 *   broker.settleUnawaited), shows its other pending cards again (broker.reshowPending), continues
 *   every run that was waiting when the process stopped, then the turns queued behind them. Only
 *   the conversations `resumes` accepts: the others belong to another process on the store (a
 *   `gatehouse run`, an editor's `gatehouse acp`) that may be running them right now.
 * - Replicas (a `shared` queue, PostgreSQL): each run carries the fence its queue took for the
 *   conversation (./execute-run.ts fencing); `resumeAll()` only sends jobs for stored work, and a
 *   stored run continues on whichever replica gets its conversation's job (`takeover`), never on a
 *   starting replica while another live one waits on it.
 * - The system prompt is the agent's, plus `systemExtra(agent, key)` (its memory) read at every run.
 * - Audit (when `audit` is given): run_started and run_finished (outcome, tokens, cost) per run; the
 *   executor adds one gate_decision per call.
 * - Per-turn overrides (headless runs, `Turn.overrides`): tier, approvers and run timeout for that turn
 *   only, stored with its run record so a resumed run keeps them.
 * - A model failure after retries is shown to the user as a short message; the transcript is saved
 *   only up to its last consistent point (a run that failed before any model reply saves nothing).
 */
import { randomUUID } from 'node:crypto';
import type { Tier } from '../../policies/tiers.js';
import type { PersistedAllowlists } from '../approvals/allowlists.js';
import type { ApprovalBroker } from '../approvals/index.js';
import type { Audit } from '../audit.js';
import type { ConversationStore } from '../context/conversation-store.js';
import type { Usage } from '../events.js';
import type { ModelClient } from '../model/types.js';
import type { OutputResolver } from './output.js';
import { Slots, type RunClock } from './limits.js';
import type { AgentDirectory, AgentSettings } from '../settings.js';
import type { EventClaim, Fence, LeaseRepo, RunRepo, SpendRepo } from '../store/types.js';
import type { ToolRegistry } from '../tools/registry.js';
import { executeRun, type EgressOpener, type RunDeps } from './execute-run.js';
import { InProcessTurnQueue, type TurnQueue } from './turn-queue.js';
import { parseTurn, RunRecord, type Turn } from './turn.js';
import type { Telemetry } from '../telemetry/types.js';
import { fallbackLog, type Log, type LogLevel, messageOf } from '../log.js';

export type { Turn } from './turn.js';

export interface RunnerOptions {
  model: ModelClient;
  /** Transcripts (agent/context/conversation-store.ts over the store's TranscriptRepo; checkpoints go through it). */
  conversations: ConversationStore;
  /** Run records and queued turns. */
  runs: RunRepo;
  /** Where turns wait (default: in-process lanes over `runs`; a shared one across replicas). */
  queue?: TurnQueue;
  /** The store's leases: a shared queue's runs check their fence before posting an answer. */
  leases?: LeaseRepo;
  /** Spend totals: agents with a `budget` reserve every model call against them (agent/budget/). */
  spend?: SpendRepo;
  broker: ApprovalBroker;
  /**
   * No other process runs this service's conversations on this store (a SQLite store opened
   * exclusive): at start, a card of theirs (`resumes`) no stored run waits on is an orphan of the
   * stopped process, and is closed.
   */
  exclusiveStore?: boolean;
  /**
   * The stored conversations a start picks up (default: all): their runs, queued turns and orphaned
   * cards. Others belong to another kind of process on the same store (a `gatehouse run`, an
   * editor's `gatehouse acp`), which may be running them right now.
   */
  resumes?(conversationKey: string): boolean;
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
  log?: Log;
  /** The audit trail: runs started and finished, gate decisions (through the executor). */
  audit?: Audit;
  /** Metrics and traces of runs, model calls and tool calls (agent/telemetry). */
  telemetry?: Telemetry;
  /** Appended to the agent's system prompt, read at the start of every run (the agent's memory). */
  systemExtra?(agent: AgentSettings, conversationKey: string): Promise<string>;
  /** The clock of run deadlines (runTimeoutMs); default the real one. */
  clock?: RunClock;
  /** Each command's own egress proxy, which knows its run (agent/egress/); absent: the agent's shared one only. */
  egress?: EgressOpener;
}

export class Runner {
  private readonly queue: TurnQueue;
  private readonly deps: RunDeps;
  private readonly current = new Map<string, AbortController>();
  private readonly waitingOnHuman = new Set<string>();
  /** `finished` of the turns this process submitted, by queued id (resolved when handled). */
  private readonly finishing = new Map<string, () => void>();
  /** When each turn this process submitted was stored, until its lane takes it (queue metrics). */
  private readonly queuedAt = new Map<string, number>();
  private closed = false;

  constructor(private readonly opts: RunnerOptions) {
    const slots = new Slots({
      ...(opts.maxConcurrentRuns !== undefined ? { total: opts.maxConcurrentRuns } : {}),
      ...(opts.maxRunsPerUser !== undefined ? { perUser: opts.maxRunsPerUser } : {}),
      ...(opts.maxRunsPerPlace !== undefined ? { perPlace: opts.maxRunsPerPlace } : {}),
      ...(opts.reservedRuns !== undefined ? { reserved: opts.reservedRuns } : {}),
    });
    this.deps = {
      ...opts,
      slots,
      log: this.opts.log ?? fallbackLog,
      closed: () => this.closed,
      running: (key, c) => (c ? this.current.set(key, c) : this.current.delete(key)),
      parked: (key, w) => (w ? this.waitingOnHuman.add(key) : this.waitingOnHuman.delete(key)),
    };
    this.queue =
      opts.queue ??
      new InProcessTurnQueue({
        runs: opts.runs,
        parse: parseTurn,
        settled: (key) => this.waitingOnHuman.has(key),
        log: this.opts.log ?? fallbackLog,
      });
    this.queue.start(
      async (_conversation, q, delivery) => {
        this.queuedAt.delete(q.id);
        try {
          await executeRun(this.deps, { kind: 'turn', turn: q.turn, queuedId: q.id, ...(delivery ? { fence: delivery.fence, delivery } : {}) });
        } finally {
          this.finished(q.id);
        }
      },
      {
        // A shared queue gave us a conversation whose run was waiting elsewhere (or here, before a restart).
        takeover: async (conversation, value, delivery) => {
          const rec = RunRecord.safeParse(value);
          if (!rec.success) {
            this.log('warn', `dropping an unreadable run record of ${conversation}`);
            await this.opts.runs.dropRecord(conversation, delivery.fence);
            return;
          }
          this.log('info', `[${conversation}] continuing its stored run ${rec.data.runId} here (epoch ${delivery.fence.epoch})`);
          await this.continueRun(rec.data, delivery.fence);
        },
        finished: (id) => this.finished(id),
      },
    );
  }

  private finished(id: string): void {
    this.queuedAt.delete(id);
    this.finishing.get(id)?.();
    this.finishing.delete(id);
  }

  /** A stored run goes on: its cards are shown again, then it continues where it stopped. */
  private async continueRun(record: RunRecord, fence?: Fence): Promise<void> {
    await this.closeUnawaited(new Map([[record.runId, awaitedBy(record)]]), record);
    await this.restoreCards(record);
    await executeRun(this.deps, { kind: 'resume', record, ...(fence ? { fence } : {}) });
  }

  /**
   * The cards no resumed run waits on again are closed: their waiter was the process that stopped
   * (a command's network request, a spending check, a run that had stored no record yet).
   */
  private async closeUnawaited(awaited: ReadonlyMap<string, ReadonlySet<string>>, run?: RunRecord): Promise<void> {
    const resumes = this.opts.resumes ?? (() => true);
    await this.opts.broker
      .settleUnawaited(awaited, RESTART_NOTE, run ? { run: { conversationKey: run.conversationKey, runId: run.runId } } : { conversations: resumes })
      .catch((err: unknown) => this.log('warn', `could not close the cards a restart ended: ${messageOf(err)}`));
  }

  /** Whoever is to decide sees a resumed run's pending cards again (a terminal chat starts on an empty screen). */
  private async restoreCards(record: RunRecord): Promise<void> {
    const key = record.conversationKey;
    this.opts.broker.noteResumed(key);
    await this.opts.broker.reshowPending(key).catch((err: unknown) => this.log('warn', `[${key}] could not show its pending cards again: ${messageOf(err)}`));
  }

  /**
   * Queues a turn in its conversation's lane. Resolves once the turn is stored (it then survives a
   * restart); `finished` resolves when it has run. With `claim` (a platform event), the event is
   * claimed with the turn in one transaction; `duplicate` says it was claimed before, nothing stored.
   */
  async submit(turn: Turn, opts: { claim?: EventClaim } = {}): Promise<{ finished: Promise<void>; duplicate?: true }> {
    const id = randomUUID();
    const finished = new Promise<void>((resolve) => this.finishing.set(id, resolve));
    // Counted from before the write: its lane may take it before `enqueue` resolves.
    this.queuedAt.set(id, Date.now());
    try {
      if (!(await this.queue.enqueue(turn.conversationKey, { id, turn, ...(opts.claim ? { claim: opts.claim } : {}) }))) {
        this.finishing.delete(id);
        this.queuedAt.delete(id);
        return { finished: Promise.resolve(), duplicate: true };
      }
    } catch (err) {
      this.finishing.delete(id);
      this.queuedAt.delete(id);
      throw err;
    }
    return { finished };
  }

  /** Aborts the running turn of a conversation. Returns false when nothing was running. */
  stop(conversationKey: string): boolean {
    const c = this.current.get(conversationKey);
    if (!c) return false;
    c.abort(new Error('stopped'));
    return true;
  }

  /** Starts a new conversation in that place, after whatever is running there. */
  reset(conversationKey: string, _agentName?: string): Promise<void> {
    this.stop(conversationKey);
    return this.queue.exclusive(conversationKey, async () => {
      await this.opts.conversations.reset(conversationKey);
      await this.opts.runs.dropRecord(conversationKey);
    });
  }

  isBusy(conversationKey: string): boolean {
    return this.queue.busy(conversationKey);
  }

  /** Whether the conversation's running turn is parked on an approval or a question. */
  isWaitingOnHuman(conversationKey: string): boolean {
    return this.waitingOnHuman.has(conversationKey);
  }

  /**
   * Continues every run that was waiting when the process stopped, then the turns that were queued
   * behind them (or not started). Returns how many runs and turns were picked up.
   */
  async resumeAll(): Promise<number> {
    // Shared (replicas): a stored run continues on the replica that gets its conversation's job,
    // never here while another live replica waits on it.
    const resumes = this.opts.resumes;
    if (this.queue.shared) return this.queue.resume(resumes);
    const records: RunRecord[] = [];
    for (const row of await this.opts.runs.records()) {
      if (resumes && !resumes(row.conversation)) continue;
      const rec = RunRecord.safeParse(row.record);
      if (!rec.success) {
        this.log('warn', `dropping an unreadable run record of ${row.conversation}`);
        await this.opts.runs.dropRecord(row.conversation);
        continue;
      }
      records.push(rec.data);
    }
    const awaited = new Map(records.map((r) => [r.runId, awaitedBy(r)]));
    // This process alone uses the store: no run is live anywhere, so a card no stored run waits on
    // is an orphan of the stopped process. Otherwise only the resumed runs' own cards are looked at.
    if (this.opts.exclusiveStore) await this.closeUnawaited(awaited);
    for (const record of records) {
      if (!this.opts.exclusiveStore) await this.closeUnawaited(awaited, record);
      await this.restoreCards(record);
      void this.queue.exclusive(record.conversationKey, () => executeRun(this.deps, { kind: 'resume', record }));
    }
    return records.length + (await this.queue.resume(resumes));
  }

  /**
   * Turns this process stored that no lane has taken yet, and how long the oldest has waited
   * (metrics; a turn taken over from another replica is counted there, not here).
   */
  queueStats(now = Date.now()): { depth: number; oldestWaitMs: number } {
    let oldest = now;
    for (const at of this.queuedAt.values()) oldest = Math.min(oldest, at);
    return { depth: this.queuedAt.size, oldestWaitMs: now - oldest };
  }

  /** Resolves when every lane is idle (tests, shutdown). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /**
   * Stops accepting work, drops queued turns, and gives running turns up to `graceMs` to finish.
   * Runs waiting on a human are left parked: their state is stored and a restart continues them.
   */
  async close(graceMs = 10_000): Promise<void> {
    this.closed = true;
    await this.queue.close(graceMs);
    // Past the grace: interrupt what still runs, so its transcript is closed properly.
    for (const [key, c] of this.current) if (!this.waitingOnHuman.has(key)) c.abort(new Error('shutting down'));
    await this.queue.close(2_000);
  }

  private log(level: LogLevel, msg: string): void {
    (this.opts.log ?? fallbackLog)(level, msg);
  }
}

const RESTART_NOTE = 'the bot restarted while this waited: nothing was done';

/** What a stored run waits on again when it continues: its calls' approvals and questions. */
function awaitedBy(record: RunRecord): Set<string> {
  const ids = new Set<string>();
  for (const c of Object.values(record.calls)) {
    if (c.status === 'awaiting') ids.add(c.requestId);
    else if (c.status === 'started' && c.questionId !== undefined) ids.add(c.questionId);
  }
  return ids;
}
