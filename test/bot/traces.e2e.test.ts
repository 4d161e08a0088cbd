/**
 * Traces end to end: a real bot (startBot, fake Telegram and Anthropic behind the real clients) with
 * OTEL_EXPORTER_OTLP_ENDPOINT pointing at a fake OTLP/HTTP receiver on 127.0.0.1. A tool call that
 * needs approval is approved; at stop the batched spans are flushed, and the receiver has one trace
 * per run: invoke_agent -> chat and execute_tool, the gate's decision, tier, rule, approver and wait
 * on the execute_tool span. Message text and tool arguments are absent by default and present with
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
 */
import { startFakeOtlpReceiver, type FakeOtlpReceiver, type ReceivedSpan } from '../fakes/otlp-receiver.js';
import { SEMCONV_SCHEMA_URL } from '../../bot/telemetry/semconv.js';
import { conversationId } from '../../bot/telemetry/traces.js';
import { ARGUMENT_WORD, MESSAGE_WORD, owner, scriptedConversation, startTelemetryBot, type TelemetryBot } from './telemetry-bot.js';

let receiver: FakeOtlpReceiver;
let t: TelemetryBot | undefined;

beforeEach(async () => {
  receiver = await startFakeOtlpReceiver();
});
afterEach(async () => {
  await t?.close();
  t = undefined;
  await receiver.close();
});

/** Runs the conversation and stops the bot (which flushes the spans). */
async function traced(env: Record<string, string>): Promise<ReceivedSpan[]> {
  t = await startTelemetryBot({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gatehouse-test', ...env });
  await scriptedConversation(t);
  await t.close();
  return receiver.spans;
}

const attr = (s: ReceivedSpan, k: string) => s.attributes[k];

test('one trace per run, invoke_agent -> chat / execute_tool, with the gate inside; no content by default', async () => {
  const spans = await traced({});
  expect(receiver.contentTypes.every((c) => c.startsWith('application/json'))).toBe(true);
  const runs = spans.filter((s) => s.name === 'invoke_agent default');
  expect(runs).toHaveLength(2); // the plain message and the approved write
  for (const run of runs) {
    expect(run.parentSpanId).toBe('');
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'default',
      'gen_ai.request.model': 'claude-sonnet-5-5',
      'gen_ai.conversation.id': conversationId(`telegram:${owner.id}`),
      'gatehouse.run.outcome': 'completed',
    });
    expect(attr(run, 'gen_ai.usage.input_tokens')).toBeGreaterThan(0);
    expect(run.resource['service.name']).toBe('gatehouse-test');
    expect(run.scope).toMatchObject({ name: 'gatehouse', schemaUrl: SEMCONV_SCHEMA_URL });
  }
  expect(new Set(runs.map((r) => r.traceId)).size).toBe(2);

  // The write: two model calls and one tool call, all children of its run span.
  const write = runs.find((r) => spans.some((s) => s.parentSpanId === r.spanId && s.name.startsWith('execute_tool')))!;
  const children = spans.filter((s) => s.parentSpanId === write.spanId);
  expect(children.every((c) => c.traceId === write.traceId)).toBe(true);
  const chats = children.filter((c) => c.name === 'chat claude-sonnet-5-5');
  expect(chats).toHaveLength(2);
  for (const c of chats) {
    expect(c.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'claude-sonnet-5-5' });
    expect(attr(c, 'gen_ai.usage.output_tokens')).toBeGreaterThan(0);
  }
  expect(chats.map((c) => attr(c, 'gen_ai.response.finish_reasons'))).toEqual([['tool_use'], ['end_turn']]);
  const tool = children.find((c) => c.name === 'execute_tool write_file')!;
  expect(tool.attributes).toMatchObject({
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': 'write_file',
    'gatehouse.gate.decision': 'ask',
    'gatehouse.gate.tier': 'low-risk',
    'gatehouse.approval.outcome': 'approved',
    'gatehouse.approval.approver': String(owner.id),
  });
  expect(typeof attr(tool, 'gen_ai.tool.call.id')).toBe('string');
  expect(typeof attr(tool, 'gatehouse.gate.rule')).toBe('string');
  expect(attr(tool, 'gatehouse.approval.wait_ms')).toBeGreaterThanOrEqual(0);
  expect(tool.events.map((e) => e.name)).toEqual(['gatehouse.gate.decision', 'gatehouse.approval.decided']);
  expect(tool.status.code).not.toBe(2); // not an error

  // The other run: one chat, no tool.
  const plain = runs.find((r) => r !== write)!;
  expect(spans.filter((s) => s.parentSpanId === plain.spanId).map((s) => s.name)).toEqual(['chat claude-sonnet-5-5']);

  const sent = receiver.bodies.join('\n');
  expect(sent).not.toContain(MESSAGE_WORD);
  expect(sent).not.toContain(ARGUMENT_WORD);
  expect(sent).not.toContain(`telegram:${owner.id}`);
  expect(Object.keys(tool.attributes)).not.toContain('gen_ai.tool.call.arguments');
}, 60_000);

test('with content capture on, message text and tool arguments are on the spans', async () => {
  const spans = await traced({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' });
  const tool = spans.find((s) => s.name === 'execute_tool write_file')!;
  expect(String(attr(tool, 'gen_ai.tool.call.arguments'))).toContain(ARGUMENT_WORD);
  expect(typeof attr(tool, 'gen_ai.tool.call.result')).toBe('string');
  const chats = spans.filter((s) => s.name.startsWith('chat ') && s.traceId === tool.traceId);
  expect(String(attr(chats[0]!, 'gen_ai.input.messages'))).toContain(MESSAGE_WORD);
  expect(String(attr(chats[1]!, 'gen_ai.output.messages'))).toContain('Wrote plan.md.');
  expect(typeof attr(chats[0]!, 'gen_ai.system_instructions')).toBe('string');
}, 60_000);

test('a collector that refuses connections costs the spans, not the runs: the bot answers and stops', async () => {
  const gone = receiver.url;
  await receiver.close();
  t = await startTelemetryBot({ OTEL_EXPORTER_OTLP_ENDPOINT: gone, OTEL_BSP_SCHEDULE_DELAY: '10' });
  await scriptedConversation(t);
  await t.close();
  receiver = await startFakeOtlpReceiver(); // for afterEach
}, 60_000);
