/**
 * The Prometheus metrics (prom-client), one Registry per app (several bots in one process, as in
 * tests, do not share counters). Fed through the agent/telemetry seam, the model client and the
 * store wrappers (./wrap.ts), and read at scrape time for the gauges (pending approvals, queue).
 *
 * Contract:
 * - Label values are bounded: platforms, reasons, outcomes, decisions and tiers are closed sets;
 *   agent, tool and model names (an MCP server may name its tools anything) pass `BoundedLabel`:
 *   sanitised to [A-Za-z0-9_.:-], at most 64 characters, and the first 64 distinct values kept,
 *   any later one counted as "other". No conversation key, user id, chat id or text is ever a label.
 * - Recording never throws; a gauge whose source fails keeps its last value.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Usage } from '../../agent/events.js';
import type { RefusalReason, RunTelemetry, SandboxReport, Telemetry, ToolTelemetry } from '../../agent/telemetry/types.js';

/** Distinct values kept per open-ended label before the rest count as "other". */
export const MAX_LABEL_VALUES = 64;

export class BoundedLabel {
  private readonly seen = new Set<string>();
  constructor(private readonly max = MAX_LABEL_VALUES) {}

  value(raw: string): string {
    const v = raw.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 64) || 'unknown';
    if (this.seen.has(v)) return v;
    if (this.seen.size >= this.max) return 'other';
    this.seen.add(v);
    return v;
  }
}

/** Closed sets: anything else is "other" (a new value in code shows up, it does not explode). */
const PLATFORMS = new Set(['telegram', 'slack', 'discord', 'console', 'cli']);
const closed = (set: ReadonlySet<string>, v: string): string => (set.has(v) ? v : 'other');
const REFUSALS = new Set<RefusalReason>(['stranger', 'not_addressed', 'rate_limited', 'duplicate', 'empty', 'store_error']);
const OUTCOMES = new Set(['approved', 'always', 'denied', 'expired', 'answered', 'unanswered']);
const KINDS = new Set(['approval', 'picker', 'question', 'approve_all']);

export interface MetricsSources {
  /** Requests waiting on a human, all processes sharing the store. */
  pendingApprovals?(): Promise<number>;
  /** Turns stored by this process and not yet taken by their lane. */
  queue?(): { depth: number; oldestWaitMs: number };
}

export class GatehouseMetrics implements Telemetry {
  readonly registry = new Registry();
  private sources: MetricsSources = {};
  private readonly agents = new BoundedLabel();
  private readonly tools = new BoundedLabel();
  private readonly models = new BoundedLabel();

  private readonly messages: Counter<'platform'>;
  private readonly refused: Counter<'platform' | 'reason'>;
  private readonly runsStarted: Counter<'agent' | 'resumed'>;
  private readonly runsFinished: Counter<'agent' | 'outcome'>;
  private readonly runsActive: Gauge<'agent'>;
  private readonly runSeconds: Histogram<'agent' | 'outcome'>;
  private readonly toolCalls: Counter<'tool' | 'decision'>;
  private readonly approvals: Counter<'kind' | 'outcome'>;
  private readonly approvalWait: Histogram<'kind' | 'outcome'>;
  private readonly modelSeconds: Histogram<'model' | 'outcome'>;
  private readonly modelTokens: Counter<'model' | 'type'>;
  private readonly modelCost: Counter<'model'>;
  private readonly modelCostUnknown: Counter<'model'>;
  private readonly storeSeconds: Histogram<'operation' | 'outcome'>;
  private readonly sandboxRuns: Counter<'sandbox'>;
  private readonly sandboxKills: Counter<'reason'>;
  private readonly sandboxLimits: Counter<'limit'>;
  private readonly agentSpend: Counter<'agent' | 'kind'>;
  private readonly budgetRefusals: Counter<'scope'>;
  private readonly now: () => number;

  constructor(opts: { now?: () => number; processMetrics?: boolean } = {}) {
    this.now = opts.now ?? (() => performance.now());
    const registers = [this.registry];
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    this.messages = new Counter({
      name: 'gatehouse_messages_received_total',
      help: 'Inbound chat messages, by platform.',
      labelNames: ['platform'],
      registers,
    });
    this.refused = new Counter({
      name: 'gatehouse_messages_refused_total',
      help: 'Inbound messages that did not become a turn, a command or an answer, by platform and reason.',
      labelNames: ['platform', 'reason'],
      registers,
    });
    this.runsStarted = new Counter({
      name: 'gatehouse_runs_started_total',
      help: 'Runs started (resumed="true": continued after a restart or takeover).',
      labelNames: ['agent', 'resumed'],
      registers,
    });
    this.runsFinished = new Counter({
      name: 'gatehouse_runs_finished_total',
      help: 'Runs finished, by agent and outcome.',
      labelNames: ['agent', 'outcome'],
      registers,
    });
    this.runsActive = new Gauge({
      name: 'gatehouse_runs_active',
      help: 'Runs in progress in this process (waiting on a human included).',
      labelNames: ['agent'],
      registers,
    });
    this.runSeconds = new Histogram({
      name: 'gatehouse_run_duration_seconds',
      help: 'Wall time of a run, from its start (or resumption) to its end, waits on humans included.',
      labelNames: ['agent', 'outcome'],
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 1800, 3600],
      registers,
    });
    this.toolCalls = new Counter({
      name: 'gatehouse_tool_calls_total',
      help: 'Tool calls by tool and gate decision (allow, ask, deny; not_gated: refused before the gate, e.g. invalid arguments).',
      labelNames: ['tool', 'decision'],
      registers,
    });
    this.approvals = new Counter({
      name: 'gatehouse_approvals_decided_total',
      help: 'Approvals, pickers and questions decided, by kind and outcome.',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    this.approvalWait = new Histogram({
      name: 'gatehouse_approval_wait_seconds',
      help: 'From the card being posted to its decision.',
      labelNames: ['kind', 'outcome'],
      buckets: [1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600, 14400, 86400],
      registers,
    });
    const self = this;
    new Gauge({
      name: 'gatehouse_approvals_pending',
      help: 'Approvals, pickers and questions waiting on a human (every process sharing the store).',
      registers,
      async collect() {
        const n = await self.sources.pendingApprovals?.().catch(() => undefined);
        if (n !== undefined) this.set(n);
      },
    });
    this.modelSeconds = new Histogram({
      name: 'gatehouse_model_request_duration_seconds',
      help: 'Model API calls (retries included), by model and outcome (ok or the error code).',
      labelNames: ['model', 'outcome'],
      buckets: [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128],
      registers,
    });
    this.modelTokens = new Counter({
      name: 'gatehouse_model_tokens_total',
      help: 'Tokens by model and type (input, output, cache_read, cache_write).',
      labelNames: ['model', 'type'],
      registers,
    });
    this.modelCost = new Counter({
      name: 'gatehouse_model_cost_usd_total',
      help: 'Estimated cost in USD by model (models with a known price).',
      labelNames: ['model'],
      registers,
    });
    this.modelCostUnknown = new Counter({
      name: 'gatehouse_model_calls_unpriced_total',
      help: 'Model calls whose model has no price in the table (cost not counted).',
      labelNames: ['model'],
      registers,
    });
    this.storeSeconds = new Histogram({
      name: 'gatehouse_store_operation_duration_seconds',
      help: 'Store calls by operation (repository.method) and outcome.',
      labelNames: ['operation', 'outcome'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    new Gauge({
      name: 'gatehouse_turn_queue_depth',
      help: 'Turns stored by this process and not yet taken by their conversation lane.',
      registers,
      collect() {
        const q = self.sources.queue?.();
        if (q) this.set(q.depth);
      },
    });
    new Gauge({
      name: 'gatehouse_turn_queue_oldest_wait_seconds',
      help: 'How long the oldest waiting turn has waited (0 when none waits).',
      registers,
      collect() {
        const q = self.sources.queue?.();
        if (q) this.set(q.oldestWaitMs / 1000);
      },
    });
    this.sandboxRuns = new Counter({
      name: 'gatehouse_sandbox_commands_total',
      help: 'Shell commands run, by sandbox (bubblewrap or none).',
      labelNames: ['sandbox'],
      registers,
    });
    this.sandboxKills = new Counter({
      name: 'gatehouse_sandbox_kills_total',
      help: 'Commands killed, by reason (timeout, stopped, cpu, sigkill).',
      labelNames: ['reason'],
      registers,
    });
    this.agentSpend = new Counter({
      name: 'gatehouse_agent_spend_total',
      help: 'What runs spent, by agent and kind (usd: priced models only; tokens: all, cache included), counted as each run ends.',
      labelNames: ['agent', 'kind'],
      registers,
    });
    this.budgetRefusals = new Counter({
      name: 'gatehouse_budget_refusals_total',
      help: 'Runs ended by a spending limit, by scope (conversation, user_day, agent_day, agent_month).',
      labelNames: ['scope'],
      registers,
    });
    this.sandboxLimits = new Counter({
      name: 'gatehouse_sandbox_limits_hit_total',
      help: 'Box limits commands ran into (cpu, memory, tmp_full, sigkill).',
      labelNames: ['limit'],
      registers,
    });
  }

  /** Where the scrape-time gauges read from (set once the runner and store exist). */
  setSources(s: MetricsSources): void {
    this.sources = { ...this.sources, ...s };
  }

  /** The text exposition (Content-Type: `contentType`). */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  messageIn(platform: string): void {
    this.messages.inc({ platform: closed(PLATFORMS, platform) });
  }

  messageRefused(platform: string, reason: RefusalReason): void {
    this.refused.inc({ platform: closed(PLATFORMS, platform), reason: closed(REFUSALS, reason) });
  }

  approvalDecided(a: { kind: string; outcome: string; waitMs: number }): void {
    const labels = { kind: closed(KINDS, a.kind), outcome: closed(OUTCOMES, a.outcome) };
    this.approvals.inc(labels);
    this.approvalWait.observe(labels, a.waitMs / 1000);
  }

  run(r: Parameters<Telemetry['run']>[0]): RunTelemetry {
    const agent = this.agents.value(r.agent);
    const started = this.now();
    this.runsStarted.inc({ agent, resumed: String(r.resumed) });
    this.runsActive.inc({ agent });
    let ended = false;
    return {
      chat: () => ({ end: () => undefined }), // model calls are measured at the client (./wrap.ts), classifier calls too
      tool: (t) => this.tool(t.name),
      end: (e) => {
        if (ended) return;
        ended = true;
        this.runsActive.dec({ agent });
        this.runsFinished.inc({ agent, outcome: e.outcome });
        this.runSeconds.observe({ agent, outcome: e.outcome }, (this.now() - started) / 1000);
        const u = e.usage;
        if (u.costKnown) this.agentSpend.inc({ agent, kind: 'usd' }, u.costUSD);
        this.agentSpend.inc({ agent, kind: 'tokens' }, u.inputTokens + u.outputTokens + u.cacheReadTokens + u.cacheWriteTokens);
        if (e.budgetLimit) this.budgetRefusals.inc({ scope: e.budgetLimit });
      },
    };
  }

  private tool(name: string): ToolTelemetry {
    const tool = this.tools.value(name);
    let counted = false;
    return {
      gate: (g) => {
        counted = true;
        this.toolCalls.inc({ tool, decision: g.decision });
      },
      // Decided after a restart: its gate decision was counted before it.
      approval: () => {
        counted = true;
      },
      sandbox: (s) => this.sandbox(s),
      end: () => {
        if (!counted) this.toolCalls.inc({ tool, decision: 'not_gated' });
        counted = true;
      },
    };
  }

  private sandbox(s: SandboxReport): void {
    this.sandboxRuns.inc({ sandbox: s.boxed ? 'bubblewrap' : 'none' });
    if (s.killed) this.sandboxKills.inc({ reason: s.killed });
    for (const l of s.limits) this.sandboxLimits.inc({ limit: l });
  }

  /** One model API call (./wrap.ts). */
  modelCall(model: string, seconds: number, outcome: string, usage?: Usage): void {
    const m = this.models.value(model);
    this.modelSeconds.observe({ model: m, outcome }, seconds);
    if (!usage) return;
    this.modelTokens.inc({ model: m, type: 'input' }, usage.inputTokens);
    this.modelTokens.inc({ model: m, type: 'output' }, usage.outputTokens);
    this.modelTokens.inc({ model: m, type: 'cache_read' }, usage.cacheReadTokens);
    this.modelTokens.inc({ model: m, type: 'cache_write' }, usage.cacheWriteTokens);
    if (usage.costKnown) this.modelCost.inc({ model: m }, usage.costUSD);
    else this.modelCostUnknown.inc({ model: m });
  }

  /** One store call (./wrap.ts); `operation` is `repository.method`, a closed set. */
  storeCall(operation: string, seconds: number, ok: boolean): void {
    this.storeSeconds.observe({ operation, outcome: ok ? 'ok' : 'error' }, seconds);
  }
}
