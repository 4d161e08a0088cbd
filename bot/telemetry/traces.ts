/**
 * OpenTelemetry traces of runs, following the GenAI semantic conventions at the version pinned in
 * SEMCONV_VERSION (the @opentelemetry/semantic-conventions package of that version, installed
 * exactly; the tracer carries its schema URL). One trace per run:
 *
 *   invoke_agent {agent}            gen_ai.operation.name=invoke_agent, gen_ai.agent.name, gen_ai.conversation.id (a hash)
 *     chat {model}                  one per model call of the loop: gen_ai.request.model, gen_ai.usage.*
 *     execute_tool {tool}           one per tool call: gen_ai.tool.name, gen_ai.tool.call.id, and the gate inside:
 *                                   gatehouse.gate.* (decision, tier, rule), gatehouse.approval.* (outcome,
 *                                   approver, wait_ms), gatehouse.sandbox.* (boxed, killed, limits_hit), each
 *                                   also an event at the moment it happened
 *
 * Contract:
 * - No message text, system prompt, tool argument or tool result leaves the process unless
 *   `captureContent` (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true); then they go as
 *   gen_ai.system_instructions, gen_ai.input.messages, gen_ai.output.messages,
 *   gen_ai.tool.call.arguments and gen_ai.tool.call.result (JSON strings).
 * - gen_ai.conversation.id is the first 32 hex digits of the SHA-256 of the conversation key (stable
 *   across restarts, so a conversation's runs can be grouped; not the key itself).
 * - Spans are batched (BatchSpanProcessor) and sent over OTLP/HTTP JSON; `shutdown()` flushes what is
 *   left, giving up after 5 s. An unreachable collector costs dropped spans, never a failed run.
 * - Loaded only when traces are configured (nothing of OpenTelemetry is imported otherwise).
 */
import { createHash } from 'node:crypto';
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from '@opentelemetry/semantic-conventions/incubating';
import { ModelError } from '../../agent/model/types.js';
import type { ChatTelemetry, RunTelemetry, Telemetry, ToolTelemetry } from '../../agent/telemetry/types.js';
import type { TraceSettings } from './env.js';
import { SEMCONV_SCHEMA_URL } from './semconv.js';

export function conversationId(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 32);
}

function json(v: unknown): string {
  try {
    return JSON.stringify(v) ?? 'null';
  } catch {
    return '"(not serialisable)"';
  }
}

export interface Traces extends Pick<Telemetry, 'run'> {
  /** Sends what is batched and stops (at shutdown). */
  shutdown(): Promise<void>;
  forceFlush(): Promise<void>;
}

export function startTraces(settings: TraceSettings, version: string): Traces {
  // A collector that does not answer must not hold a shutdown for long (the drain has its own budget).
  const exporter = new OTLPTraceExporter({ url: settings.url, headers: settings.headers, timeoutMillis: 5_000 });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ ...settings.resourceAttributes, [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: version }),
    spanProcessors: [new BatchSpanProcessor(exporter, settings.scheduleDelayMs !== undefined ? { scheduledDelayMillis: settings.scheduleDelayMs } : {})],
  });
  const tracer = provider.getTracer('gatehouse', version, { schemaUrl: SEMCONV_SCHEMA_URL });
  const capture = settings.captureContent;
  return {
    run: (r) => runSpan(tracer, capture, r),
    forceFlush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

function runSpan(tracer: Tracer, capture: boolean, r: Parameters<Telemetry['run']>[0]): RunTelemetry {
  const span = tracer.startSpan(`invoke_agent ${r.agent}`, {
    kind: SpanKind.INTERNAL,
    attributes: {
      [ATTR_GEN_AI_OPERATION_NAME]: 'invoke_agent',
      [ATTR_GEN_AI_PROVIDER_NAME]: 'anthropic',
      [ATTR_GEN_AI_AGENT_NAME]: r.agent,
      [ATTR_GEN_AI_REQUEST_MODEL]: r.model,
      [ATTR_GEN_AI_CONVERSATION_ID]: conversationId(r.conversation),
      'gatehouse.run.id': r.runId,
      'gatehouse.run.resumed': r.resumed,
    },
  });
  const parent = trace.setSpan(context.active(), span);
  let ended = false;
  return {
    chat: (c) => chatSpan(tracer, parent, capture, c),
    tool: (t) => toolSpan(tracer, parent, capture, t),
    end: (e) => {
      if (ended) return;
      ended = true;
      span.setAttributes({
        [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: e.usage.inputTokens,
        [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: e.usage.outputTokens,
        'gatehouse.run.outcome': e.outcome,
        ...(e.usage.costKnown ? { 'gatehouse.cost_usd': e.usage.costUSD } : {}),
      });
      if (e.outcome === 'failed' || e.outcome === 'timeout') span.setStatus({ code: SpanStatusCode.ERROR, message: e.outcome });
      span.end();
    },
  };
}

function chatSpan(tracer: Tracer, parent: ReturnType<typeof context.active>, capture: boolean, c: Parameters<RunTelemetry['chat']>[0]): ChatTelemetry {
  const attributes: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: 'chat',
    [ATTR_GEN_AI_PROVIDER_NAME]: 'anthropic',
    [ATTR_GEN_AI_REQUEST_MODEL]: c.model,
    [ATTR_GEN_AI_REQUEST_MAX_TOKENS]: c.maxTokens,
  };
  if (capture) {
    attributes[ATTR_GEN_AI_SYSTEM_INSTRUCTIONS] = json([{ type: 'text', content: c.system }]);
    attributes[ATTR_GEN_AI_INPUT_MESSAGES] = json(c.messages);
  }
  const span = tracer.startSpan(`chat ${c.model}`, { kind: SpanKind.CLIENT, attributes }, parent);
  let ended = false;
  return {
    end: (r) => {
      if (ended) return;
      ended = true;
      if (r.usage) {
        span.setAttributes({
          [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: r.usage.inputTokens,
          [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: r.usage.outputTokens,
          [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: r.usage.cacheReadTokens,
          [ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS]: r.usage.cacheWriteTokens,
        });
      }
      if (r.stopReason) span.setAttribute(ATTR_GEN_AI_RESPONSE_FINISH_REASONS, [r.stopReason]);
      if (capture && r.content) span.setAttribute(ATTR_GEN_AI_OUTPUT_MESSAGES, json([{ role: 'assistant', content: r.content }]));
      if (r.error !== undefined) {
        const type = r.error instanceof ModelError ? r.error.code : 'error';
        span.setAttribute('error.type', type);
        span.setStatus({ code: SpanStatusCode.ERROR, message: type });
      }
      span.end();
    },
  };
}

function toolSpan(tracer: Tracer, parent: ReturnType<typeof context.active>, capture: boolean, t: Parameters<RunTelemetry['tool']>[0]): ToolTelemetry {
  const attributes: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
    [ATTR_GEN_AI_TOOL_NAME]: t.name,
    [ATTR_GEN_AI_TOOL_CALL_ID]: t.callId,
    [ATTR_GEN_AI_TOOL_TYPE]: 'function',
  };
  if (capture) attributes[ATTR_GEN_AI_TOOL_CALL_ARGUMENTS] = json(t.input);
  const span: Span = tracer.startSpan(`execute_tool ${t.name}`, { kind: SpanKind.INTERNAL, attributes }, parent);
  let ended = false;
  return {
    gate: (g) => {
      const a: Attributes = { 'gatehouse.gate.decision': g.decision, 'gatehouse.gate.rule': g.rule, ...(g.tier ? { 'gatehouse.gate.tier': g.tier } : {}) };
      span.setAttributes(a);
      span.addEvent('gatehouse.gate.decision', a);
    },
    approval: (ap) => {
      const a: Attributes = {
        'gatehouse.approval.outcome': ap.outcome,
        ...(ap.approver !== undefined ? { 'gatehouse.approval.approver': ap.approver } : {}),
        ...(ap.waitMs !== undefined ? { 'gatehouse.approval.wait_ms': ap.waitMs } : {}),
      };
      span.setAttributes(a);
      span.addEvent('gatehouse.approval.decided', a);
    },
    sandbox: (s) => {
      const a: Attributes = {
        'gatehouse.sandbox.boxed': s.boxed,
        'gatehouse.sandbox.limits_hit': s.limits,
        ...(s.killed ? { 'gatehouse.sandbox.killed': s.killed } : {}),
      };
      span.setAttributes(a);
      if (s.killed || s.limits.length > 0) span.addEvent('gatehouse.sandbox.limit', a);
    },
    end: (r) => {
      if (ended) return;
      ended = true;
      if (capture) span.setAttribute(ATTR_GEN_AI_TOOL_CALL_RESULT, json(r.result));
      if (!r.ok) {
        span.setAttribute('error.type', 'tool_error');
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}
