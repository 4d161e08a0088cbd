/**
 * A /stop that lands while the executor is announcing a call (the awaited tool_started event) still
 * reaches the tool: the call is interrupted instead of running to its end. Before agent/run/abort.ts, the
 * tool's signal was linked to the run's after that await, an 'abort' listener on an already-aborted
 * signal never fires, and a `sleep 30` ran its 30 s out (seen in CI as a /stop that did nothing).
 * Also the helpers themselves.
 */
import { z } from 'zod';
import { linkedController, whenAborted } from '../../../agent/run/abort.js';
import { ApprovalBroker, InProcessDecisionBus } from '../../../agent/approvals/index.js';
import type { AgentEvent } from '../../../agent/events.js';
import { openSqliteStore } from '../../../agent/store/sqlite/index.js';
import type { Store } from '../../../agent/store/types.js';
import { runToolBatch, type BatchContext, type CallState } from '../../../agent/tools/executor.js';
import type { AnyTool, ToolContext } from '../../../agent/tools/types.js';

let store: Store;
beforeEach(async () => {
  store = await openSqliteStore({ path: ':memory:', log: () => undefined });
});
afterEach(async () => {
  await store.close();
});

/** Rejects when its signal aborts; never settles otherwise. */
function waitsForStop(seen: { signalAborted?: boolean }): AnyTool {
  return {
    name: 'wait_for_stop',
    description: 'waits until stopped',
    input: z.object({}),
    tier: 'read-only',
    execute: (_input: unknown, ctx: ToolContext) =>
      // A tool that missed the stop would wait here forever (the test would time out).
      new Promise((_resolve, reject) => {
        seen.signalAborted = ctx.signal.aborted;
        ctx.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        if (ctx.signal.aborted) reject(new Error('aborted'));
      }),
  } as AnyTool;
}

function batch(run: AbortController, tool: AnyTool, events: AgentEvent[]): BatchContext {
  const states = new Map<string, CallState>();
  return {
    runId: 'run-1',
    conversationKey: 'telegram:1',
    platform: 'telegram',
    agentName: 'default',
    tools: new Map([[tool.name, tool]]),
    toolContext: (_callId, signal) =>
      ({ workspace: '/tmp', signal, conversationKey: 'telegram:1', agentName: 'default', envAllowlist: [], state: {} }) as unknown as ToolContext,
    policy: () => ({ name: 'default', tier: 'read-only', autoApprovedTools: [], autoApprovedCommands: [], approvers: {} }),
    classify: async () => ({ tier: 'high-risk' }),
    broker: new ApprovalBroker({
      approvals: store.approvals,
      bus: new InProcessDecisionBus(),
      outputs: () => ({ emit: async () => undefined, streamsText: false, postCard: async () => 'card', updateCard: async () => undefined }),
      approversOf: () => [],
    }),
    approvalTimeoutMs: 60_000,
    // The /stop arrives while the executor awaits the announcement of the call.
    emit: async (event) => {
      events.push(event);
      if (event.type === 'tool_started') {
        await Promise.resolve();
        run.abort();
      }
    },
    signal: run.signal,
    states: { get: (id) => states.get(id), set: async (id, s) => void states.set(id, s) },
    addAlways: async () => undefined,
    humanWait: (wait) => wait(),
  };
}

test('a /stop during the tool_started announcement interrupts the call', async () => {
  const run = new AbortController();
  const seen: { signalAborted?: boolean } = {};
  const events: AgentEvent[] = [];
  const results = await runToolBatch([{ type: 'tool_use', id: 'call-1', name: 'wait_for_stop', input: {} }], batch(run, waitsForStop(seen), events));
  expect(events.map((e) => e.type)).toContain('tool_started');
  expect(seen.signalAborted).toBe(true);
  expect(results).toHaveLength(1);
  expect(results[0]).toMatchObject({ tool_use_id: 'call-1', is_error: true });
  expect(JSON.stringify(results[0]!.content)).toContain('was interrupted: the run was stopped');
});

describe('agent/run/abort.ts', () => {
  test('whenAborted calls at once on a signal that already aborted, once on a later abort, never after unsubscribing', () => {
    const done = new AbortController();
    done.abort();
    let calls = 0;
    whenAborted(done.signal, () => calls++);
    expect(calls).toBe(1);

    const later = new AbortController();
    whenAborted(later.signal, () => calls++);
    const off = whenAborted(later.signal, () => (calls += 100));
    off();
    later.abort();
    later.abort();
    expect(calls).toBe(2);
    expect(() => whenAborted(undefined, () => calls++)()).not.toThrow();
    expect(calls).toBe(2);
  });

  test('linkedController follows its parent, with its reason, even when linked after the abort; unlink stops following', () => {
    const parent = new AbortController();
    parent.abort(new Error('stopped'));
    const { controller } = linkedController(parent.signal);
    expect(controller.signal.aborted).toBe(true);
    expect((controller.signal.reason as Error).message).toBe('stopped');

    const live = new AbortController();
    const { controller: child, unlink } = linkedController(live.signal);
    unlink();
    live.abort();
    expect(child.signal.aborted).toBe(false);
  });
});
