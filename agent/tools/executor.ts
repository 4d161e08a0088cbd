/**
 * The executor: runs the tool calls of one assistant turn and returns one tool_result per call, in
 * the calls' order. It never throws for a call: an unknown tool, invalid arguments, a refusal, a
 * denial, a timeout, an exception or a /stop all become error results the model can react to.
 *
 * Contract:
 * - Three phases. 1: every call is prepared (./gate-step.ts: lookup, validation, workspace limit,
 *   propose, gate), in parallel. 2: the calls the gate sent to a human get their cards, in order
 *   (./approval-step.ts, with "Approve all / Deny all" for several). 3: each call waits for its
 *   decision (waiting on a human does not count against the run's timeout) and runs
 *   (./run-call.ts), in parallel; results keep the calls' order. Up to MAX_PARALLEL_CALLS at once.
 * - An "Always" decides its own card only; every other pending card of the batch goes through the
 *   gate again (here, and through `watchAllowlist` when one is added in another conversation of the
 *   agent); a queued approval is re-checked before waiting, as an Always given earlier may cover it.
 * - Durability (./batch-context.ts): `awaiting`, `started` and `done` are recorded before each
 *   happens, so a restart neither loses a card nor runs a started call twice.
 * - One telemetry observation per call not already done before a restart, ended with its result.
 */
import PQueue from 'p-queue';
import type { ToolResultBlock, ToolUseBlock } from '../context/messages.js';
import { noToolTelemetry } from '../telemetry/types.js';
import { askForApprovals, coveredNow, refusedResult, reportDecision } from './approval-step.js';
import type { BatchContext } from './batch-context.js';
import { prepare } from './gate-step.js';
import { execute, toBlock } from './run-call.js';
import type { Proposal, ToolResult } from './types.js';

export { CallState, type BatchContext, type CallStates } from './batch-context.js';

const MAX_PARALLEL_CALLS = 10;

export async function runToolBatch(calls: readonly ToolUseBlock[], ctx: BatchContext): Promise<ToolResultBlock[]> {
  const queue = new PQueue({ concurrency: MAX_PARALLEL_CALLS });
  const limit = <T>(fn: () => Promise<T>): Promise<T> => queue.add(fn) as Promise<T>;
  // One observation per call not already done before a restart.
  const observed = calls.map((c) =>
    ctx.telemetry && ctx.states.get(c.id)?.status !== 'done' ? ctx.telemetry.tool({ callId: c.id, name: c.name, input: c.input }) : noToolTelemetry,
  );
  // Phase 1: prepare every call (propose + gate), in parallel.
  const prepared = await Promise.all(calls.map((c, i) => limit(() => prepare(c, ctx, observed[i]!))));

  // Phase 2: cards for the calls that need a human, in order, so the chat reads top to bottom.
  const { asks, askedAt } = await askForApprovals(calls, prepared, ctx);

  // Phase 3: wait for decisions and execute, in parallel; results keep the calls' order.
  const pendingAsks = new Set(asks.map((a) => a.state.requestId));
  const recheckOthers = async () => {
    for (const a of asks) {
      if (!pendingAsks.has(a.state.requestId)) continue;
      const p = prepared[a.index]!;
      if (p.kind !== 'awaiting') continue;
      if (await coveredNow(p.tool, a.state, ctx)) {
        await ctx.broker.settle(a.state.requestId, { outcome: 'approved', at: Date.now(), by: 'policy', note: 'covered by an Always approve given meanwhile' });
      }
    }
  };
  // An "Always" decides its own card only; each other pending card, here or in another conversation
  // of the agent, goes through the gate again.
  const unwatch = asks.length > 0 ? ctx.watchAllowlist?.(recheckOthers) : undefined;
  // A queued approval is re-checked before waiting: an Always given earlier may already cover it.
  await recheckOthers().catch((err: unknown) => {
    unwatch?.();
    throw err;
  });

  const results = await Promise.all(
    calls.map((call, i) =>
      limit(async (): Promise<ToolResult> => {
        const p = prepared[i]!;
        if (p.kind === 'result') return p.result;
        if (p.kind === 'run') return execute(call, p.tool, p.input, { ...(p.proposal ? { proposal: p.proposal } : {}) }, ctx, observed[i]!);
        if (p.kind === 'awaiting') {
          const decision = await ctx.humanWait(() => ctx.broker.wait(p.state.requestId, ctx.signal));
          pendingAsks.delete(p.state.requestId);
          await reportDecision(call, p.tool, decision, askedAt.get(p.state.requestId), ctx, observed[i]!);
          if (decision.outcome === 'always' && p.state.always) {
            await ctx.addAlways(p.state.always); // re-checks this batch too when it watches the allowlist
            if (!unwatch) await recheckOthers();
          }
          if (decision.outcome !== 'approved' && decision.outcome !== 'always') return refusedResult(p.tool.name, decision, ctx.signal);
          const prep: { proposal: Proposal; selectedOptionId?: string } = { proposal: p.state.proposal as Proposal };
          if (decision.selectedOptionId !== undefined) prep.selectedOptionId = decision.selectedOptionId;
          return execute(call, p.tool, p.state.input, prep, ctx, observed[i]!);
        }
        return { content: 'internal error: unprepared call', isError: true };
      }).then((r) => {
        observed[i]!.end({ ok: r.isError !== true, result: r.content });
        return r;
      }),
    ),
  ).finally(() => unwatch?.());
  return calls.map((call, i) => toBlock(call.id, results[i]!));
}
