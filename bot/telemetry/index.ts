/**
 * The app's telemetry: Prometheus metrics always (served at /metrics unless GATEHOUSE_METRICS=off),
 * OpenTelemetry traces when configured (./traces.ts, loaded only then). `telemetry` is what agent/
 * and the router are given (agent/telemetry/types.ts); `measuredModel` / `measuredStore` wrap the
 * model client and the store.
 *
 * Contract: one instance per app (its own prom-client Registry); `shutdown()` flushes the spans
 * still batched and is safe to call twice. A reporter that throws is ignored (logged once at warn).
 */
import type { ModelClient } from '../../agent/model/types.js';
import type { Store } from '../../agent/store/types.js';
import {
  noChatTelemetry as noChat,
  noRunTelemetry as noRun,
  noToolTelemetry as noTool,
  type Telemetry,
  type ToolTelemetry,
} from '../../agent/telemetry/types.js';
import type { Log } from '../../agent/log.js';
import type { TraceSettings } from './env.js';
import { GatehouseMetrics } from './metrics.js';
import type { Traces } from './traces.js';
import { measuredModel, measuredStore } from './wrap.js';
import { messageOf } from '../../agent/log.js';

export interface AppTelemetry {
  telemetry: Telemetry;
  metrics: GatehouseMetrics;
  traces?: Traces;
  measuredModel(model: ModelClient): ModelClient;
  measuredStore(store: Store): Store;
  shutdown(): Promise<void>;
}

export async function createTelemetry(opts: { traces?: TraceSettings; version: string; log?: Log; processMetrics?: boolean }): Promise<AppTelemetry> {
  const metrics = new GatehouseMetrics({ ...(opts.processMetrics !== undefined ? { processMetrics: opts.processMetrics } : {}) });
  const traces = opts.traces ? (await import('./traces.js')).startTraces(opts.traces, opts.version) : undefined;
  let warned = false;
  const guard =
    <A extends unknown[]>(fn: (...a: A) => void) =>
    (...a: A): void => {
      try {
        fn(...a);
      } catch (err) {
        if (!warned) opts.log?.('warn', `telemetry: a metric or span could not be recorded (${messageOf(err)}); runs go on`);
        warned = true;
      }
    };
  const telemetry = traces ? fanOut(metrics, traces, guard) : guarded(metrics, guard);
  let shut: Promise<void> | undefined;
  return {
    telemetry,
    metrics,
    ...(traces ? { traces } : {}),
    measuredModel: (m) => measuredModel(m, metrics),
    measuredStore: (s) => measuredStore(s, metrics),
    shutdown: () =>
      (shut ??= traces
        ? traces.shutdown().catch((err: unknown) => opts.log?.('warn', `telemetry: could not send the last spans: ${messageOf(err)}`))
        : Promise.resolve()),
  };
}

type Guard = <A extends unknown[]>(fn: (...a: A) => void) => (...a: A) => void;

function guarded(t: Telemetry, guard: Guard): Telemetry {
  return fanOut(t, undefined, guard);
}

/** Both reporters get every report; neither can throw into the run. */
function fanOut(a: Telemetry, b: Pick<Telemetry, 'run'> | undefined, guard: Guard): Telemetry {
  const safe = <T>(make: () => T, fallback: T): T => {
    try {
      return make();
    } catch {
      return fallback;
    }
  };
  const tools = (x: ToolTelemetry, y: ToolTelemetry): ToolTelemetry => ({
    gate: guard((g) => (x.gate(g), y.gate(g))),
    approval: guard((p) => (x.approval(p), y.approval(p))),
    sandbox: guard((s) => (x.sandbox(s), y.sandbox(s))),
    end: guard((r) => (x.end(r), y.end(r))),
  });
  return {
    run: (r) => {
      const x = safe(() => a.run(r), noRun);
      const y = b ? safe(() => b.run(r), noRun) : noRun;
      return {
        chat: (c) => {
          const p = safe(() => x.chat(c), noChat);
          const q = safe(() => y.chat(c), noChat);
          return { end: guard((e) => (p.end(e), q.end(e))) };
        },
        tool: (t) =>
          tools(
            safe(() => x.tool(t), noTool),
            safe(() => y.tool(t), noTool),
          ),
        end: guard((e) => (x.end(e), y.end(e))),
      };
    },
    messageIn: guard((p) => a.messageIn(p)),
    messageRefused: guard((p, r) => a.messageRefused(p, r)),
    approvalDecided: guard((d) => a.approvalDecided(d)),
  };
}
