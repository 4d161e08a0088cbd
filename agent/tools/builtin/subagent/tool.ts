/**
 * spawn_subagent (low-risk): the model hands a task to a sub-agent with its own transcript and a
 * subset of its tools, and gets the sub-agent's final answer as the result.
 *
 * Contract:
 * - Works through ToolContext.subagents (./host.ts), which the run provides; without it (outside a
 *   run) it refuses with a ToolError.
 * - Its propose half checks the toolset and the limits (nothing starts, nothing is counted), so a
 *   spawn that would be refused never puts a card before anyone; its card shows the task and tools.
 * - longRunning: no tool timeout (the sub-agent's own calls have theirs; the run timeout and /stop
 *   end it through the call's signal).
 */
import { z } from 'zod';
import type { Tool, ToolContext } from '../../types.js';
import { ToolError } from '../../types.js';
import { SPAWN_SUBAGENT } from './toolset.js';

export const SpawnSubagentInput = z.strictObject({
  task: z.string().min(1).max(20_000).describe('The whole task, self-contained: the sub-agent sees nothing of this conversation but this text.'),
  tools: z.array(z.string().min(1)).max(100).optional().describe('The tools it may use, by name: a subset of yours. Leave out to give it all it may have.'),
});
export type SpawnSubagentInput = z.infer<typeof SpawnSubagentInput>;

function runnerOf(ctx: ToolContext): NonNullable<ToolContext['subagents']> {
  if (!ctx.subagents) throw new ToolError('spawn_subagent works only inside a conversation run.');
  return ctx.subagents;
}

export function spawnSubagentTool(): Tool<SpawnSubagentInput> {
  return {
    name: SPAWN_SUBAGENT,
    description:
      'Hands a self-contained task to a sub-agent: it works with its own, empty transcript and the tools you name (a subset of yours, ' +
      'under the same approvals and policy), and its final answer comes back as this result. Use it for a side task whose steps ' +
      'would clutter this conversation. It cannot ask the user anything. The number of sub-agents per run is limited.',
    input: SpawnSubagentInput,
    tier: 'low-risk',
    longRunning: true,
    async propose(input, ctx) {
      const c = runnerOf(ctx).check(input.tools);
      if (!c.ok) throw new ToolError(c.reason);
      return {
        summary: `sub-agent: ${input.task.replace(/\s+/g, ' ').slice(0, 120)}`,
        preview: `Task:\n${input.task}\n\nTools: ${c.tools.join(', ') || '(none)'}`,
      };
    },
    async execute(input, ctx) {
      return runnerOf(ctx).run(input.task, input.tools, ctx.signal);
    },
  };
}
