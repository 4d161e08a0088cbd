/**
 * Which tools a sub-agent gets: a subset of its parent's, never more.
 *
 * Contract:
 * - The base is the parent's toolset as this run has it (after the parent's own filtering: a tool
 *   that needs a human where none is, is already gone). Nothing outside it is ever offered.
 * - Never offered to a sub-agent: tools that ask a human (ask_user_question, ask_file_picker: a
 *   sub-agent never asks the user), the context tools (they act on the parent's transcript), and
 *   spawn_subagent once the next level would reach `maxDepth`.
 * - `subagents.tools` in config caps it further. The call names the tools it wants (unset: all that
 *   are left); a name outside what is left refuses the whole spawn, with the reason per name, so
 *   the model can call again with a list that works.
 */
import type { AnyTool } from '../../types.js';
import type { SubagentLimits } from './config.js';

export const SPAWN_SUBAGENT = 'spawn_subagent';
/** They work on the parent's transcript and window, which the sub-agent does not have. */
const PARENT_TRANSCRIPT_TOOLS = new Set(['context_info', 'summarize_context']);

export type ToolsetChoice = { ok: true; tools: Map<string, AnyTool> } | { ok: false; reason: string };

export function subagentToolset(opts: {
  parent: ReadonlyMap<string, AnyTool>;
  requested?: readonly string[];
  limits: SubagentLimits;
  /** The depth of the sub-agent being started (1: started by the run's own model). */
  depth: number;
  agentName: string;
}): ToolsetChoice {
  const key = `agents.${opts.agentName}.subagents`;
  const why = (name: string): string | undefined => {
    const tool = opts.parent.get(name);
    if (!tool) return `${name} is not in this agent's toolset; a sub-agent only gets tools its parent has`;
    if (tool.needsHuman) return `${name} asks the user, and a sub-agent never asks the user questions`;
    if (PARENT_TRANSCRIPT_TOOLS.has(name)) return `${name} works on the parent's own transcript, which a sub-agent does not have`;
    if (name === SPAWN_SUBAGENT && opts.depth >= opts.limits.maxDepth) {
      return `${name}: a sub-agent at depth ${opts.depth} cannot start its own (${key}.maxDepth is ${opts.limits.maxDepth})`;
    }
    if (opts.limits.tools && !opts.limits.tools.includes(name)) return `${name} is not in ${key}.tools`;
    return undefined;
  };
  if (opts.requested) {
    const problems = [...new Set(opts.requested)].flatMap((n) => {
      const w = why(n);
      return w ? [w] : [];
    });
    if (problems.length > 0) return { ok: false, reason: `Not started: ${problems.join('; ')}. Call again without those tools.` };
  }
  const tools = new Map<string, AnyTool>();
  for (const name of opts.requested ?? [...opts.parent.keys()]) {
    const tool = opts.parent.get(name);
    if (tool && why(name) === undefined) tools.set(name, tool);
  }
  return { ok: true, tools };
}
