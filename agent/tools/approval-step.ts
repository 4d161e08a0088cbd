/**
 * The approval step of a batch (./executor.ts): the cards for the calls the gate sent to a human,
 * the re-check when an "Always" is added meanwhile, and what a decision turns into.
 *
 * Contract:
 * - Cards are posted in the calls' order, so the chat reads top to bottom. Each call's wait is
 *   recorded (`awaiting`, with its request id) before its card exists: a crash in between re-posts
 *   the same request after the restart instead of leaving a card nobody waits for. Each card says
 *   why it asks and, when "Always" is offered, exactly what it would cover; a sub-agent's calls say
 *   where they come from first. Each card is an approval_asked event.
 * - Several new approvals in one turn also get an "Approve all / Deny all" card; pickers are left
 *   out of it (each needs its own choice).
 * - `coveredNow`: a waiting call is judged again against the allowlists only (no new classifier
 *   call), so an "Always" given meanwhile settles the cards it now covers; a picker never is.
 * - `reportDecision`: the decision is observed in telemetry (approver, wait) and emitted as
 *   approval_resolved. `refusedResult`: what the model is told when the call will not run.
 */
import type { GateDecision } from '../../policies/gate.js';
import { decide, describeAlways } from '../../policies/gate.js';
import { newToken, type Decision } from '../approvals/index.js';
import type { ToolUseBlock } from '../context/messages.js';
import type { ToolTelemetry } from '../telemetry/types.js';
import type { BatchContext, CallState } from './batch-context.js';
import type { Prepared } from './gate-step.js';
import type { AnyTool, ToolResult } from './types.js';

export type AwaitingState = Extract<CallState, { status: 'awaiting' }>;

/**
 * Posts the cards of the calls that need a human and turns them into `awaiting` (in `prepared`).
 * Returns every call that waits (new or from before a restart) and when each new card was asked.
 */
export async function askForApprovals(
  calls: readonly ToolUseBlock[],
  prepared: Prepared[],
  ctx: BatchContext,
): Promise<{ asks: Array<{ index: number; state: AwaitingState }>; askedAt: Map<string, number> }> {
  const askedAt = new Map<string, number>();
  const asks: Array<{ index: number; state: AwaitingState }> = [];
  const newlyAsked: string[] = [];
  for (let i = 0; i < calls.length; i++) {
    const p = prepared[i]!;
    const call = calls[i]!;
    if (p.kind === 'ask') {
      // The wait is recorded before the card exists: a crash in between re-posts the same request
      // after the restart instead of leaving a card nobody waits for.
      const requestId = p.requestId ?? newToken();
      const state = { status: 'awaiting' as const, requestId, input: p.input, proposal: p.proposal, tier: p.decision.tier, always: p.decision.always };
      await ctx.states.set(call.id, state);
      await ctx.broker.askApproval({
        requestId,
        conversationKey: ctx.conversationKey,
        platform: ctx.platform,
        agentName: ctx.agentName,
        runId: ctx.runId,
        title: ctx.origin ? `${ctx.origin.title}: approve ${p.tool.name}?` : `Approve ${p.tool.name}?`,
        body: ctx.origin ? `${ctx.origin.line}\n${cardBody(p.proposal.summary, p.decision)}` : cardBody(p.proposal.summary, p.decision),
        ...(p.proposal.preview !== undefined ? { preview: p.proposal.preview } : {}),
        alwaysLabel: alwaysLabel(p.decision.always),
        ...(p.proposal.options ? { options: p.proposal.options } : {}),
        timeoutMs: ctx.approvalTimeoutMs,
        ...(ctx.starterId !== undefined ? { starterId: ctx.starterId } : {}),
      });
      askedAt.set(requestId, Date.now());
      await ctx.emit({ type: 'approval_asked', runId: ctx.runId, callId: call.id, tool: p.tool.name, summary: p.proposal.summary });
      prepared[i] = { kind: 'awaiting', tool: p.tool, state };
      asks.push({ index: i, state });
      // A picker needs its own choice: "Approve all" cannot make it, so it is not among the members.
      if (!p.proposal.options?.length) newlyAsked.push(requestId);
    } else if (p.kind === 'awaiting') {
      asks.push({ index: i, state: p.state });
    }
  }
  if (newlyAsked.length > 1) {
    await ctx.broker.askApproveAll(
      {
        conversationKey: ctx.conversationKey,
        platform: ctx.platform,
        agentName: ctx.agentName,
        runId: ctx.runId,
        title: `${ctx.origin ? `${ctx.origin.title}: ` : ''}${newlyAsked.length} calls wait for approval`,
        body: 'Decide them one by one above, or all at once here.',
        timeoutMs: ctx.approvalTimeoutMs,
        ...(ctx.starterId !== undefined ? { starterId: ctx.starterId } : {}),
      },
      newlyAsked,
    );
  }
  return { asks, askedAt };
}

/** The decision on a waiting call, observed and told to the run's listeners. */
export async function reportDecision(
  call: ToolUseBlock,
  tool: AnyTool,
  decision: Decision,
  askedAtMs: number | undefined,
  ctx: BatchContext,
  observed: ToolTelemetry,
): Promise<void> {
  observed.approval({
    outcome: decision.outcome,
    ...(decision.by !== undefined ? { approver: decision.by } : {}),
    ...(askedAtMs !== undefined ? { waitMs: Math.max(0, decision.at - askedAtMs) } : {}),
  });
  await ctx.emit({
    type: 'approval_resolved',
    runId: ctx.runId,
    callId: call.id,
    tool: tool.name,
    outcome: decision.outcome === 'always' ? 'always' : decision.outcome === 'approved' ? 'approved' : decision.outcome === 'expired' ? 'expired' : 'denied',
    ...(decision.by ? { by: decision.byName ?? decision.by } : {}),
  });
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function alwaysLabel(always: Extract<GateDecision, { action: 'ask' }>['always']): string | null {
  return always ? describeAlways(always).label : null;
}

/** The card says why it asks and, when "Always" is offered, exactly what it would cover. */
function cardBody(summary: string, d: Extract<GateDecision, { action: 'ask' }>): string {
  const lines = [summary, `${capitalize(d.why)}.`];
  if (d.always) lines.push(describeAlways(d.always).covers);
  return lines.join('\n');
}

export async function coveredNow(tool: AnyTool, state: AwaitingState, ctx: BatchContext): Promise<boolean> {
  if (state.proposal.options && state.proposal.options.length > 0) return false;
  const d = await decide(
    {
      toolName: tool.name,
      toolTier: state.proposal.tier ?? tool.tier,
      platform: ctx.platform,
      hasOptions: false,
      ...(state.proposal.command !== undefined ? { command: state.proposal.command } : {}),
    },
    ctx.policy,
    // Re-check against allowlists only: no new classifier call, a non-allowlisted call stays asked.
    { classify: async () => ({ tier: 'high-risk' }) },
  );
  return d.action === 'allow';
}

export function refusedResult(toolName: string, d: Decision, signal: AbortSignal): ToolResult {
  if (signal.aborted) return { content: `${toolName} did not run: the run was stopped.`, isError: true };
  switch (d.outcome) {
    case 'expired':
      return { content: `${toolName} did not run: nobody approved it before the approval expired. Treat it as denied.`, isError: true };
    default:
      return {
        content: `${toolName} did not run: ${d.by ? `denied by ${d.byName ?? d.by}` : 'denied'}${d.note ? ` (${d.note})` : ''}. Do not retry the same call; ask the user what to do instead.`,
        isError: true,
      };
  }
}
