/**
 * The executor: runs the tool calls of one assistant turn and returns one tool_result per call, in
 * the calls' order. It never throws for a call: an unknown tool, invalid arguments, a refusal, a
 * denial, a timeout, an exception or a /stop all become error results the model can react to.
 *
 * One call: lookup -> input validation (model-supplied `_selectedOptionId` stripped) -> propose ->
 * gate (judging the proposal's own `tier` when the tool set one, else the tool's) -> (ask: card, wait
 * for the decision) -> execute, with a timeout unless the tool is longRunning. Up to 10 calls of a
 * turn run at once. Several approvals in one turn also get an "Approve all / Deny all" card; pickers
 * are left out of it (each needs its own choice).
 *
 * Durability: every step that matters is recorded in `CallStates` (persisted by the runner) before it
 * happens: `awaiting` (the card's request id), `started` (about to execute: from here the call runs at
 * most once; a restart reports it as interrupted instead of running it again), `done` (the result).
 * Tools that only wait on a human (`needsHuman`) are re-run on resume; their question is reused.
 *
 * Workspace limit (./workspace-quota.ts, when the batch has one): a writing call is refused while the
 * workspace is over the agent's limit (checked before its card and again before it runs), and every
 * call of a workspace-changing tool is followed by a measurement that the result reports when over.
 */
import { z } from 'zod';
import PQueue from 'p-queue';
import type { AgentPolicy, GateDecision } from '../../policies/gate.js';
import { decide, describeAlways } from '../../policies/gate.js';
import type { Tier } from '../../policies/tiers.js';
import { newToken, type ApprovalBroker, type Decision } from '../approvals.js';
import type { Audit } from '../audit.js';
import type { AgentEvent } from '../events.js';
import type { ToolResultBlock, ToolUseBlock } from '../messages.js';
import { describeInput, summarizeCall } from './summary.js';
import type { WorkspaceQuota } from './workspace-quota.js';
import { noToolTelemetry, type RunTelemetry, type ToolTelemetry } from '../telemetry/types.js';
import { DEFAULT_TOOL_TIMEOUT_MS, ToolError, type AnyTool, type Proposal, type ToolContext, type ToolResult } from './types.js';
import { linkedController } from '../abort.js';

export const MAX_PARALLEL_CALLS = 10;

const ProposalSchema = z.object({
  summary: z.string(),
  preview: z.string().optional(),
  options: z.array(z.object({ id: z.string(), label: z.string() })).optional(),
  command: z.string().optional(),
  tier: z.enum(['read-only', 'low-risk', 'high-risk']).optional(),
  data: z.unknown().optional(),
});

export const CallState = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('awaiting'),
    requestId: z.string(),
    input: z.unknown(),
    proposal: ProposalSchema,
    tier: z.enum(['read-only', 'low-risk', 'high-risk']),
    always: z.union([z.object({ kind: z.literal('command'), key: z.string() }), z.object({ kind: z.literal('tool'), name: z.string() }), z.null()]),
  }),
  z.object({ status: z.literal('started'), questionId: z.string().optional() }),
  z.object({
    status: z.literal('done'),
    result: z.object({ content: z.union([z.string(), z.array(z.unknown())]), isError: z.boolean().optional() }),
  }),
]);
export type CallState = z.infer<typeof CallState>;

/** Per-call records for one batch, persisted by the runner on every change. */
export interface CallStates {
  get(callId: string): CallState | undefined;
  set(callId: string, state: CallState): Promise<void>;
}

export interface BatchContext {
  runId: string;
  conversationKey: string;
  platform: string;
  agentName: string;
  /** Who started the run (their platform user id), stored with its approvals (requesterMayApprove). */
  starterId?: string;
  tools: ReadonlyMap<string, AnyTool>;
  /** The tool context for one call (its own abort signal). */
  toolContext(callId: string, signal: AbortSignal): ToolContext;
  policy(): AgentPolicy;
  classify(command: string): Promise<{ tier: Tier; note?: string }>;
  broker: ApprovalBroker;
  approvalTimeoutMs: number;
  emit(event: AgentEvent): Promise<void>;
  /** Aborted by /stop or the run timeout. */
  signal: AbortSignal;
  states: CallStates;
  /** Persists an "Always approve" (command key or tool) for this agent. */
  addAlways(always: { kind: 'command'; key: string } | { kind: 'tool'; name: string }): Promise<void>;
  /**
   * Calls `recheck` after every "Always" added for this agent (from any conversation) until the returned
   * function is called; `addAlways` resolves after the re-checks. Without it, only this batch re-checks.
   */
  watchAllowlist?(recheck: () => Promise<void>): () => void;
  /** Waiting on a human does not count against the run's timeout. */
  humanWait<T>(wait: () => Promise<T>): Promise<T>;
  /** The audit trail: one gate_decision per decided call, limit_refused for workspace-limit refusals. */
  audit?: Audit;
  /** The agent's workspace size limit; absent: no limit. */
  workspaceQuota?: WorkspaceQuota;
  /** The run's trace and metrics: one `tool` per call, with its gate decision and approval. */
  telemetry?: RunTelemetry;
  /** Where the calls come from when not the run's own model (a sub-agent): its cards say so first, its audit records `origin`. */
  origin?: { title: string; line: string };
}

type Prepared =
  | { kind: 'result'; result: ToolResult }
  | { kind: 'run'; tool: AnyTool; input: unknown; proposal?: Proposal }
  | { kind: 'ask'; tool: AnyTool; input: unknown; proposal: Proposal; decision: Extract<GateDecision, { action: 'ask' }>; requestId?: string }
  | { kind: 'awaiting'; tool: AnyTool; state: Extract<CallState, { status: 'awaiting' }> };

export async function runToolBatch(calls: readonly ToolUseBlock[], ctx: BatchContext): Promise<ToolResultBlock[]> {
  const queue = new PQueue({ concurrency: MAX_PARALLEL_CALLS });
  const limit = <T>(fn: () => Promise<T>): Promise<T> => queue.add(fn) as Promise<T>;
  // One observation per call not already done before a restart.
  const observed = calls.map((c) =>
    ctx.telemetry && ctx.states.get(c.id)?.status !== 'done' ? ctx.telemetry.tool({ callId: c.id, name: c.name, input: c.input }) : noToolTelemetry,
  );
  const askedAt = new Map<string, number>();
  // Phase 1: prepare every call (propose + gate), in parallel.
  const prepared = await Promise.all(calls.map((c, i) => limit(() => prepare(c, ctx, observed[i]!))));

  // Phase 2: cards for the calls that need a human, in order, so the chat reads top to bottom.
  const asks: Array<{ index: number; state: Extract<CallState, { status: 'awaiting' }> }> = [];
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
          const asked = askedAt.get(p.state.requestId);
          observed[i]!.approval({
            outcome: decision.outcome,
            ...(decision.by !== undefined ? { approver: decision.by } : {}),
            ...(asked !== undefined ? { waitMs: Math.max(0, decision.at - asked) } : {}),
          });
          await ctx.emit({
            type: 'approval_resolved',
            runId: ctx.runId,
            callId: call.id,
            tool: p.tool.name,
            outcome:
              decision.outcome === 'always' ? 'always' : decision.outcome === 'approved' ? 'approved' : decision.outcome === 'expired' ? 'expired' : 'denied',
            ...(decision.by ? { by: decision.byName ?? decision.by } : {}),
          });
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

async function coveredNow(tool: AnyTool, state: Extract<CallState, { status: 'awaiting' }>, ctx: BatchContext): Promise<boolean> {
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

function refusedResult(toolName: string, d: Decision, signal: AbortSignal): ToolResult {
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

async function prepare(call: ToolUseBlock, ctx: BatchContext, observed: ToolTelemetry): Promise<Prepared> {
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

async function execute(
  call: ToolUseBlock,
  tool: AnyTool,
  input: unknown,
  prepared: { proposal?: Proposal; selectedOptionId?: string },
  ctx: BatchContext,
  observed: ToolTelemetry,
): Promise<ToolResult> {
  if (ctx.signal.aborted) return { content: `${tool.name} did not run: the run was stopped.`, isError: true };
  // Again at run time: the workspace may have filled while the card waited.
  const overQuota = await quotaRefusal(tool, input, ctx);
  if (overQuota) return overQuota;
  const prior = ctx.states.get(call.id);
  // Recorded before running: from here on, a restart reports the call instead of running it twice.
  await ctx.states.set(call.id, prior?.status === 'started' ? prior : { status: 'started' });
  await ctx.emit({
    type: 'tool_started',
    runId: ctx.runId,
    callId: call.id,
    tool: tool.name,
    summary: prepared.proposal?.summary ?? summarizeCall(tool.name, input),
  });
  // A /stop during the awaits above (the tool_started event) must still reach the tool: linked at once.
  const { controller: ac, unlink } = linkedController(ctx.signal);
  let result: ToolResult;
  try {
    const run = tool.execute(input, { ...ctx.toolContext(call.id, ac.signal), telemetry: observed }, prepared);
    result = tool.longRunning ? await run : await withTimeout(run, tool.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS, ac, tool.name);
    if (ctx.signal.aborted && !result.isError) {
      // Finished despite the stop: keep its real result, the model should know it ran.
    }
  } catch (err) {
    result = ctx.signal.aborted ? { content: `${tool.name} was interrupted: the run was stopped.`, isError: true } : errorResult(tool.name, err);
  } finally {
    unlink();
  }
  if (ctx.workspaceQuota) {
    const quota = ctx.workspaceQuota;
    result = await quota.afterRun(tool, result).catch(() => result);
  }
  await ctx.states.set(call.id, { status: 'done', result });
  await ctx.emit({ type: 'tool_finished', runId: ctx.runId, callId: call.id, tool: tool.name, ok: !result.isError, summary: firstLine(result) });
  return result;
}

async function quotaRefusal(tool: AnyTool, input: unknown, ctx: BatchContext): Promise<ToolResult | null> {
  if (!ctx.workspaceQuota) return null;
  const message = await ctx.workspaceQuota.refusal(tool, input).catch(() => null);
  if (!message) return null;
  ctx.audit?.({
    event: 'limit_refused',
    limit: 'workspace_limit',
    conversation: ctx.conversationKey,
    platform: ctx.platform,
    agent: ctx.agentName,
    runId: ctx.runId,
    tool: tool.name,
  });
  return { content: message, isError: true };
}

class ToolTimeout extends Error {}

function withTimeout<T>(p: Promise<T>, ms: number, ac: AbortController, name: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      ac.abort();
      reject(new ToolTimeout(`${name} timed out after ${Math.round(ms / 1000)} s and was stopped.`));
    }, ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

function errorResult(toolName: string, err: unknown): ToolResult {
  if (err instanceof ToolTimeout) return { content: err.message, isError: true };
  if (err instanceof ToolError) return { content: `${toolName} failed: ${err.message}`, isError: true };
  const message = err instanceof Error ? err.message : String(err);
  return { content: `${toolName} failed unexpectedly: ${message}`, isError: true };
}

function stripReserved(input: unknown): unknown {
  if (input && typeof input === 'object' && !Array.isArray(input) && '_selectedOptionId' in input) {
    const { _selectedOptionId: _ignored, ...rest } = input as Record<string, unknown>;
    return rest;
  }
  return input;
}

export function formatZodError(err: z.ZodError): string {
  return err.issues.map((i) => `${i.path.length ? i.path.join('.') : '(input)'}: ${i.message}`).join('; ');
}

function toBlock(id: string, r: ToolResult): ToolResultBlock {
  const block: ToolResultBlock = { type: 'tool_result', tool_use_id: id, content: r.content };
  if (r.isError) block.is_error = true;
  return block;
}

function firstLine(r: ToolResult): string {
  const text = typeof r.content === 'string' ? r.content : r.content.map((b) => (b.type === 'text' ? b.text : '[image]')).join(' ');
  let line = text.split('\n', 1)[0] ?? '';
  // A tool that answers in JSON: a status line shows its fields, not its punctuation.
  if (/^\s*[[{]/.test(line)) {
    try {
      line = describeInput(JSON.parse(text) as unknown) || line;
    } catch {
      // not JSON after all: shown as it is
    }
  }
  return line.length > 160 ? line.slice(0, 157) + '...' : line;
}
