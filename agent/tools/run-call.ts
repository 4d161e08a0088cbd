/**
 * Running one call that may run, and shaping what it returns (for ./executor.ts).
 *
 * Contract:
 * - Checked again at run time: the run's abort (a /stop: the call does not run) and the workspace
 *   limit (it may have filled while a card waited; a refusal is audited as limit_refused).
 * - `started` is recorded before the tool runs: from then on a restart reports the call instead of
 *   running it twice. Then a tool_started event, the run (with the tool's timeout, default
 *   DEFAULT_TOOL_TIMEOUT_MS, unless it is longRunning; a timeout aborts the tool), the workspace
 *   measurement (a result over the limit says so), `done` with the result, and tool_finished with
 *   the result's first line (a JSON result's fields, at most 160 characters).
 * - A /stop is linked to the tool's own signal at once, so it reaches a tool started during the
 *   event's await. A tool that finishes despite the stop keeps its real result.
 * - A throw becomes an error result: a timeout's message, `<tool> failed: ...` for a ToolError,
 *   `<tool> failed unexpectedly: ...` for anything else, `<tool> was interrupted` after a stop.
 */
import type { ToolResultBlock, ToolUseBlock } from '../context/messages.js';
import type { ToolTelemetry } from '../telemetry/types.js';
import { linkedController } from '../run/abort.js';
import type { BatchContext } from './batch-context.js';
import { describeInput, summarizeCall } from './summary.js';
import { DEFAULT_TOOL_TIMEOUT_MS, ToolError, type AnyTool, type Proposal, type ToolResult } from './types.js';
import { messageOf } from '../log.js';

export async function execute(
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

export async function quotaRefusal(tool: AnyTool, input: unknown, ctx: BatchContext): Promise<ToolResult | null> {
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

export function withTimeout<T>(p: Promise<T>, ms: number, ac: AbortController, name: string): Promise<T> {
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

export function errorResult(toolName: string, err: unknown): ToolResult {
  if (err instanceof ToolTimeout) return { content: err.message, isError: true };
  if (err instanceof ToolError) return { content: `${toolName} failed: ${err.message}`, isError: true };
  const message = messageOf(err);
  return { content: `${toolName} failed unexpectedly: ${message}`, isError: true };
}

export function toBlock(id: string, r: ToolResult): ToolResultBlock {
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
