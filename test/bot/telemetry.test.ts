/**
 * The metrics registry and its labels (bot/telemetry/metrics.ts), the measuring wrappers
 * (bot/telemetry/wrap.ts) and the observability settings (bot/telemetry/env.ts).
 */
import { GatehouseMetrics, BoundedLabel, MAX_LABEL_VALUES } from '../../bot/telemetry/metrics.js';
import { measuredModel, measuredStore } from '../../bot/telemetry/wrap.js';
import { readMetricsEnv, readTraceEnv, type ConfigProblemLike } from '../../bot/telemetry/env.js';
import { ModelError, type ModelClient } from '../../agent/model/types.js';
import type { Store } from '../../agent/store/types.js';
import { emptyUsage } from '../../agent/model/pricing.js';

const metrics = () => new GatehouseMetrics({ processMetrics: false });
const text = async (m: GatehouseMetrics) => (await m.render()).body;

test('a label fed from outside keeps its first values, sanitised and cut, and counts the rest as "other"', () => {
  const l = new BoundedLabel(3);
  expect(l.value('mcp__github__create_issue')).toBe('mcp__github__create_issue');
  expect(l.value('weird name/with"quotes\n')).toBe('weird_name_with_quotes_');
  expect(l.value('x'.repeat(100))).toBe('x'.repeat(64));
  expect(l.value('fourth')).toBe('other');
  expect(l.value('mcp__github__create_issue')).toBe('mcp__github__create_issue');
});

test('an MCP server naming a thousand tools adds at most MAX_LABEL_VALUES tool label values', async () => {
  const m = metrics();
  const run = m.run({ runId: 'r', agent: 'default', conversation: 'telegram:1', model: 'm', resumed: false });
  for (let i = 0; i < 1000; i++) run.tool({ callId: `c${i}`, name: `srv__tool_${i}`, input: {} }).gate({ decision: 'allow', rule: 'tier' });
  const tools = new Set([...(await text(m)).matchAll(/gatehouse_tool_calls_total\{tool="([^"]*)"/g)].map((x) => x[1]));
  expect(tools.size).toBe(MAX_LABEL_VALUES + 1);
  expect(tools.has('other')).toBe(true);
  expect(await text(m)).toContain(`gatehouse_tool_calls_total{tool="other",decision="allow"} ${1000 - MAX_LABEL_VALUES}`);
});

test('two apps in one process have their own registries', async () => {
  const a = metrics();
  const b = metrics();
  a.messageIn('telegram');
  a.messageRefused('telegram', 'stranger');
  expect(await text(a)).toContain('gatehouse_messages_received_total{platform="telegram"} 1');
  expect(await text(a)).toContain('gatehouse_messages_refused_total{platform="telegram",reason="stranger"} 1');
  expect(await text(b)).not.toContain('platform="telegram"');
});

test('runs: started, finished by outcome, duration from the injected clock; a call refused before the gate is not_gated', async () => {
  let now = 1_000;
  const m = new GatehouseMetrics({ processMetrics: false, now: () => now });
  const run = m.run({ runId: 'r', agent: 'ops', conversation: 'slack:T:C', model: 'm', resumed: true });
  expect(await text(m)).toContain('gatehouse_runs_active{agent="ops"} 1');
  run.tool({ callId: 'a', name: 'nope', input: {} }).end({ ok: false, result: 'Unknown tool' });
  const resumedCall = run.tool({ callId: 'b', name: 'write_file', input: {} });
  resumedCall.approval({ outcome: 'approved' });
  resumedCall.end({ ok: true, result: 'ok' });
  now += 2_500;
  run.end({ outcome: 'timeout', usage: emptyUsage() });
  run.end({ outcome: 'timeout', usage: emptyUsage() }); // once only
  const out = await text(m);
  expect(out).toContain('gatehouse_runs_started_total{agent="ops",resumed="true"} 1');
  expect(out).toContain('gatehouse_runs_finished_total{agent="ops",outcome="timeout"} 1');
  expect(out).toContain('gatehouse_run_duration_seconds_sum{agent="ops",outcome="timeout"} 2.5');
  expect(out).toContain('gatehouse_runs_active{agent="ops"} 0');
  expect(out).toContain('gatehouse_tool_calls_total{tool="nope",decision="not_gated"} 1');
  expect(out).not.toContain('tool="write_file"'); // decided after a restart: its gate was counted before
  expect(out).not.toContain('slack:T:C');
});

test('approvals, sandbox kills and limits, and the scrape-time gauges; a failing source keeps the last value', async () => {
  const m = metrics();
  m.approvalDecided({ kind: 'approval', outcome: 'denied', waitMs: 42_000 });
  const run = m.run({ runId: 'r', agent: 'a', conversation: 'k', model: 'm', resumed: false });
  run.tool({ callId: 'c', name: 'execute_command', input: {} }).sandbox({ boxed: true, killed: 'timeout', limits: [] });
  run.tool({ callId: 'd', name: 'execute_command', input: {} }).sandbox({ boxed: true, killed: 'cpu', limits: ['cpu', 'memory'] });
  let pending: () => Promise<number> = async () => 3;
  m.setSources({ pendingApprovals: () => pending(), queue: () => ({ depth: 2, oldestWaitMs: 1_500 }) });
  let out = await text(m);
  expect(out).toContain('gatehouse_approvals_decided_total{kind="approval",outcome="denied"} 1');
  expect(out).toContain('gatehouse_approval_wait_seconds_sum{kind="approval",outcome="denied"} 42');
  expect(out).toContain('gatehouse_sandbox_commands_total{sandbox="bubblewrap"} 2');
  expect(out).toContain('gatehouse_sandbox_kills_total{reason="timeout"} 1');
  expect(out).toContain('gatehouse_sandbox_kills_total{reason="cpu"} 1');
  expect(out).toContain('gatehouse_sandbox_limits_hit_total{limit="memory"} 1');
  expect(out).toContain('gatehouse_approvals_pending 3');
  expect(out).toContain('gatehouse_turn_queue_depth 2');
  expect(out).toContain('gatehouse_turn_queue_oldest_wait_seconds 1.5');
  pending = async () => {
    throw new Error('store down');
  };
  out = await text(m);
  expect(out).toContain('gatehouse_approvals_pending 3');
});

test('the measured model records latency, tokens and cost by model, and error codes; results and errors pass through', async () => {
  const m = metrics();
  let now = 0;
  const usage = { ...emptyUsage(), inputTokens: 10, outputTokens: 5, costUSD: 0.25, costKnown: true };
  const inner: ModelClient = {
    async complete(req) {
      now += 1_000;
      if (req.model === 'bad') throw new ModelError('rate_limited', 'busy', 'detail');
      return { content: [{ type: 'text', text: 'hi' }], stopReason: 'end_turn', usage };
    },
  };
  const model = measuredModel(inner, m, () => now);
  const req = { model: 'claude-x', system: '', messages: [], tools: [], maxTokens: 10 };
  expect((await model.complete(req)).content).toEqual([{ type: 'text', text: 'hi' }]);
  await expect(model.complete({ ...req, model: 'bad' })).rejects.toBeInstanceOf(ModelError);
  const out = await text(m);
  expect(out).toContain('gatehouse_model_request_duration_seconds_sum{model="claude-x",outcome="ok"} 1');
  expect(out).toContain('gatehouse_model_request_duration_seconds_count{model="bad",outcome="rate_limited"} 1');
  expect(out).toContain('gatehouse_model_tokens_total{model="claude-x",type="input"} 10');
  expect(out).toContain('gatehouse_model_tokens_total{model="claude-x",type="output"} 5');
  expect(out).toContain('gatehouse_model_cost_usd_total{model="claude-x"} 0.25');
});

test('the measured store times repository calls by operation, keeps `this` and private state, and passes errors through', async () => {
  class Runs {
    #rows = ['a'];
    async queuedTurns() {
      return this.#rows;
    }
    async dropTurn(): Promise<void> {
      throw new Error('locked');
    }
  }
  const runs = new Runs();
  const store = { engine: 'sqlite', description: 'sqlite:///x', runs, ping: async () => undefined, close: async () => undefined } as unknown as Store;
  const m = metrics();
  const measured = measuredStore(store, m);
  expect(measured.engine).toBe('sqlite');
  expect(await measured.runs.queuedTurns()).toEqual(['a']);
  await expect(measured.runs.dropTurn('k', 'id')).rejects.toThrow('locked');
  await measured.ping();
  await measured.close();
  const out = await text(m);
  expect(out).toContain('gatehouse_store_operation_duration_seconds_count{operation="runs.queuedTurns",outcome="ok"} 1');
  expect(out).toContain('gatehouse_store_operation_duration_seconds_count{operation="runs.dropTurn",outcome="error"} 1');
  expect(out).toContain('gatehouse_store_operation_duration_seconds_count{operation="ping",outcome="ok"} 1');
  expect(out).not.toContain('operation="close"');
});

describe('settings', () => {
  const problems = (): ConfigProblemLike[] => [];

  test('/metrics: open on loopback, a token required when exposed, a short token refused, off on request', () => {
    let p = problems();
    expect(readMetricsEnv({}, '127.0.0.1', p)).toEqual({ enabled: true });
    expect(readMetricsEnv({}, '::1', p)).toEqual({ enabled: true });
    expect(p).toEqual([]);
    p = problems();
    readMetricsEnv({}, '0.0.0.0', p);
    expect(p.map((x) => x.path)).toEqual(['GATEHOUSE_METRICS_TOKEN']);
    p = problems();
    expect(readMetricsEnv({ GATEHOUSE_METRICS_TOKEN: 'a'.repeat(20) }, '0.0.0.0', p)).toEqual({ enabled: true, token: 'a'.repeat(20) });
    expect(p).toEqual([]);
    p = problems();
    readMetricsEnv({ GATEHOUSE_METRICS_TOKEN: 'tok3n' }, '127.0.0.1', p);
    expect(p[0]!.path).toBe('GATEHOUSE_METRICS_TOKEN');
    expect(p[0]!.message).not.toContain('tok3n');
    p = problems();
    expect(readMetricsEnv({ GATEHOUSE_METRICS: 'off' }, '0.0.0.0', p)).toEqual({ enabled: false });
    expect(p).toEqual([]);
    readMetricsEnv({ GATEHOUSE_METRICS: 'maybe' }, '127.0.0.1', p);
    expect(p[0]!.path).toBe('GATEHOUSE_METRICS');
  });

  test('traces: off without an endpoint; the base endpoint gets /v1/traces, the traces one is used as is', () => {
    const p = problems();
    expect(readTraceEnv({}, p)).toBeUndefined();
    expect(readTraceEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }, p)).toMatchObject({
      url: 'http://c:4318/v1/traces',
      serviceName: 'gatehouse',
      captureContent: false,
    });
    expect(readTraceEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:1/x' }, p)?.url).toBe('http://t:1/x');
    expect(readTraceEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }, p)).toBeUndefined();
    expect(readTraceEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }, p)).toBeUndefined();
    expect(
      readTraceEnv(
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
          OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20s3cret,x-team=ops',
          OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod',
          OTEL_SERVICE_NAME: 'gh',
          OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
        },
        p,
      ),
    ).toMatchObject({
      headers: { authorization: 'Bearer s3cret', 'x-team': 'ops' },
      resourceAttributes: { 'deployment.environment': 'prod' },
      serviceName: 'gh',
      captureContent: true,
    });
    expect(p).toEqual([]);
  });

  test('traces: an unsupported protocol, a bad URL or bad headers are problems naming the variable, without the secret', () => {
    const p = problems();
    readTraceEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, p);
    readTraceEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'c:4318' }, p);
    readTraceEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'justasecretvalue' }, p);
    expect(p.map((x) => x.path)).toEqual(['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_HEADERS']);
    expect(JSON.stringify(p)).not.toContain('justasecretvalue');
  });
});

test('a reload that changes the metrics token or the trace endpoint says a restart applies it', async () => {
  const { reloadConfig } = await import('../../bot/service/reload.js');
  const { loadConfig } = await import('../../bot/config/index.js');
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'gh-telemetry-reload-'));
  try {
    const load = (env: Record<string, string>) =>
      loadConfig({ env: { ANTHROPIC_API_KEY: 'k', GATEHOUSE_STORE: `sqlite://${join(dir, 's.sqlite')}`, ...env }, cwd: dir, knownTools: [] });
    const live = load({});
    expect(reloadConfig(live, () => load({})).needsRestart).toEqual([]);
    const r = reloadConfig(live, () => load({ GATEHOUSE_METRICS_TOKEN: 'b'.repeat(20), OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }));
    expect(r.needsRestart).toEqual(['GATEHOUSE_METRICS/GATEHOUSE_METRICS_TOKEN', 'OTEL_*']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('spend by agent and kind as each run ends, and budget refusals by scope', async () => {
  const m = metrics();
  const usage = { ...emptyUsage(), inputTokens: 100, outputTokens: 20, cacheReadTokens: 5, costUSD: 0.25, costKnown: true };
  m.run({ runId: 'r1', agent: 'ops', conversation: 'k', model: 'm', resumed: false }).end({ outcome: 'completed', usage });
  m.run({ runId: 'r2', agent: 'ops', conversation: 'k', model: 'm', resumed: false }).end({ outcome: 'failed', usage: emptyUsage(), budgetLimit: 'user_day' });
  // An unpriced run adds tokens, not dollars.
  m.run({ runId: 'r3', agent: 'ops', conversation: 'k', model: 'm', resumed: false }).end({ outcome: 'completed', usage: { ...usage, costKnown: false } });
  const out = await text(m);
  expect(out).toContain('gatehouse_agent_spend_total{agent="ops",kind="usd"} 0.25');
  expect(out).toContain('gatehouse_agent_spend_total{agent="ops",kind="tokens"} 250');
  expect(out).toContain('gatehouse_budget_refusals_total{scope="user_day"} 1');
});
