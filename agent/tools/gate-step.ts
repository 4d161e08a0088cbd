/**
 * Preparing one call of a batch (./executor.ts): everything up to the point where it either has a
 * result, may run, or must ask a human.
 *
 * Contract:
 * - A call already `done` before a restart returns its recorded result; one recorded `awaiting`
 *   waits on its card again (or, when the card was never stored, asks again under the same id); one
 *   recorded `started` is reported as interrupted, not run again (except tools that only wait on a
 *   human, `needsHuman`, which re-run and reuse their question).
 * - Then: lookup (an unknown tool is an error result naming the available ones), input validation
 *   (the model-supplied `_selectedOptionId` is stripped first: a picker's choice comes only from an
 *   approver's click), the workspace limit (./workspace-quota.ts: a writing call over the limit is
 *   refused before a card asks anyone), `propose` (with the tool's timeout and the run's abort),
 *   then the gate, judging the proposal's own `tier` when the tool set one, else the tool's.
 * - Every gate decision is audited (gate_decision, with `origin` for a sub-agent's calls) and
 *   observed in telemetry; a deny becomes a tool_declined event and an error result.
 * - Never throws for a call: a failure is an error result the model can react to.
 */
import type { z } from 'zod';
import type { GateDecision } from '../../policies/gate.js';
import { decide } from '../../policies/gate.js';
import type { ToolUseBlock } from '../context/messages.js';
import type { ToolTelemetry } from '../telemetry/types.js';
import { linkedController } from '../run/abort.js';
import type { BatchContext, CallState } from './batch-context.js';
import { errorResult, quotaRefusal, withTimeout } from './run-call.js';
import { summarizeCall } from './summary.js';
import { DEFAULT_TOOL_TIMEOUT_MS, type AnyTool, type Proposal, type ToolResult } from './types.js';

export type Prepared =
  | { kind: 'result'; result: ToolResult }
  | { kind: 'run'; tool: AnyTool; input: unknown; proposal?: Proposal }
  | { kind: 'ask'; tool: AnyTool; input: unknown; proposal: Proposal; decision: Extract<GateDecision, { action: 'ask' }>; requestId?: string }
  | { kind: 'awaiting'; tool: AnyTool; state: Extract<CallState, { status: 'awaiting' }> };

export async function prepare(call: ToolUseBlock, ctx: BatchContext, observed: ToolTelemetry): Promise<Prepared> {
  const prior = ctx.states.get(call.id);
  const tool = ctx.tools.get(call.name);
  if (prior?.status === 'done') return { kind: 'result', result: prior.result as ToolResult };
  if (!tool) {
    return {
      kind: 'result',
      result: { content: `Unknown tool "${call.name}". Available tools: ${[...ctx.tools.keys()].join(', ') || 'none'}.`, isError: true },
    };
  }
  if (prior?.status === 'awaiting') {
    if (await ctx.broker.get(prior.requestId)) return { kind: 'awaiting', tool, state: prior };
    // Crashed between recording the wait and storing the card: ask again, under the same id.
    return {
      kind: 'ask',
      tool,
      input: prior.input,
      proposal: prior.proposal as Proposal,
      decision: { action: 'ask', tier: prior.tier, why: 'asked again after a restart', always: prior.always },
      requestId: prior.requestId,
    };
  }
  if (prior?.status === 'started' && !tool.needsHuman) {
    return {
      kind: 'result',
      result: {
        content: `${tool.name} was interrupted by a restart of the bot after it started; it may have partly run and was not run again. Check its effects before retrying.`,
        isError: true,
      },
    };
  }
  if (ctx.signal.aborted) return { kind: 'result', result: { content: `${tool.name} did not run: the run was stopped.`, isError: true } };

  // The picker choice comes only from an approver's click, never from the model.
  const rawInput = stripReserved(call.input);
  const parsed = tool.input.safeParse(rawInput);
  if (!parsed.success) {
    return {
      kind: 'result',
      result: { content: `Invalid arguments for ${tool.name}: ${formatZodError(parsed.error)}. Fix them and call again.`, isError: true },
    };
  }
  const input = parsed.data;
  // Over the workspace limit: refused before a card asks anyone for a write that could not run.
  const overQuota = await quotaRefusal(tool, input, ctx);
  if (overQuota) return { kind: 'result', result: overQuota };
  let proposal: Proposal | undefined;
  if (tool.propose) {
    try {
      const { controller: ac, unlink } = linkedController(ctx.signal);
      try {
        proposal = await withTimeout(tool.propose(input, ctx.toolContext(call.id, ac.signal)), tool.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS, ac, tool.name);
      } finally {
        unlink();
      }
    } catch (err) {
      return { kind: 'result', result: errorResult(tool.name, err) };
    }
  }
  const decision = await decide(
    {
      toolName: tool.name,
      toolTier: proposal?.tier ?? tool.tier,
      platform: ctx.platform,
      hasOptions: (proposal?.options?.length ?? 0) > 0,
      ...(proposal?.command !== undefined ? { command: proposal.command } : {}),
    },
    ctx.policy,
    { classify: (c) => ctx.classify(c) },
  );
  auditDecision(ctx, tool.name, decision, observed);
  if (decision.action === 'deny') {
    // Denylist reasons already open with "Blocked by the shell denylist"; do not say it twice.
    const content = decision.absolute && !decision.reason.startsWith('Blocked') ? `Blocked: ${decision.reason}` : decision.reason;
    await ctx.emit({ type: 'tool_declined', runId: ctx.runId, callId: call.id, tool: tool.name, reason: content });
    return { kind: 'result', result: { content, isError: true } };
  }
  if (decision.action === 'ask') return { kind: 'ask', tool, input, proposal: proposal ?? { summary: summarizeCall(tool.name, input, 200) }, decision };
  return { kind: 'run', tool, input, ...(proposal ? { proposal } : {}) };
}

const originOf = (ctx: BatchContext) => (ctx.origin ? { origin: 'sub-agent' as const } : {});

function auditDecision(ctx: BatchContext, tool: string, d: GateDecision, observed: ToolTelemetry): void {
  const base = { event: 'gate_decision' as const, conversation: ctx.conversationKey, agent: ctx.agentName, runId: ctx.runId, tool, ...originOf(ctx) };
  if (d.action === 'deny') {
    // A decline (nobody to approve) is a deny the operator can fix; its reason names the config key.
    const rule = d.rule ?? (d.absolute ? 'absolute' : /no approver is bound/.test(d.reason) ? 'no approver bound' : 'denied');
    observed.gate({ decision: 'deny', rule });
    ctx.audit?.({ ...base, decision: 'deny', rule });
    return;
  }
  const approvalKey = d.action === 'ask' && d.always ? (d.always.kind === 'command' ? d.always.key : d.always.name) : undefined;
  observed.gate({ decision: d.action, tier: d.tier, rule: d.why });
  ctx.audit?.({ ...base, decision: d.action, tier: d.tier, rule: d.why, ...(approvalKey !== undefined ? { approvalKey } : {}) });
}

function stripReserved(input: unknown): unknown {
  if (input && typeof input === 'object' && !Array.isArray(input) && '_selectedOptionId' in input) {
    const { _selectedOptionId: _ignored, ...rest } = input as Record<string, unknown>;
    return rest;
  }
  return input;
}

function formatZodError(err: z.ZodError): string {
  return err.issues.map((i) => `${i.path.length ? i.path.join('.') : '(input)'}: ${i.message}`).join('; ');
}
