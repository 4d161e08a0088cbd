/**
 * `agents.<name>.subagents`: what spawn_subagent may give a sub-agent and how many it may start.
 *
 * Contract:
 * - The schema is the config boundary (bot/config/schema.ts takes it as one key); `subagentLimits`
 *   fills the defaults, so the tool never sees an unset limit.
 * - `tools` caps the sub-agent's toolset further; it never widens it: a name the parent lacks is not
 *   offered whatever this list says (./toolset.ts).
 */
import { z } from 'zod';

/** YAML integers arrive as BigInt. */
const num = (v: unknown) => (typeof v === 'bigint' ? Number(v) : v);
const int = (min: number, max: number, hint = '') =>
  z.preprocess(
    num,
    z
      .number()
      .int(`expected a whole number from ${min} to ${max}${hint}`)
      .min(min, `expected a whole number from ${min} to ${max}${hint}`)
      .max(max, `expected a whole number from ${min} to ${max}${hint}`),
  );

const DEFAULT_MAX_DEPTH = 1;
const DEFAULT_MAX_PER_RUN = 4;

export const subagentsSchema = z.strictObject({
  /** The most a sub-agent may get (besides being a subset of the parent's toolset); unset: the parent's. */
  tools: z.array(z.string().min(1, 'a tool name must not be empty')).optional(),
  /** Sub-agents inside sub-agents: 1 (default) lets the agent start sub-agents that cannot start their own. */
  maxDepth: int(1, 5).optional(),
  /** Sub-agents started in one run, at every depth together. */
  maxPerRun: int(1, 100).optional(),
  /** Model calls of one sub-agent; unset: the agent's maxIterations. */
  maxTurns: int(1, 100_000).optional(),
});

export type SubagentsConfig = z.output<typeof subagentsSchema>;

export interface SubagentLimits {
  tools?: readonly string[];
  maxDepth: number;
  maxPerRun: number;
  maxTurns: number;
}

/** The limits in force for an agent: its `subagents` (or none) over the defaults. */
export function subagentLimits(cfg: SubagentsConfig | undefined, agent: { maxIterations: number }): SubagentLimits {
  return {
    ...(cfg?.tools ? { tools: cfg.tools } : {}),
    maxDepth: cfg?.maxDepth ?? DEFAULT_MAX_DEPTH,
    maxPerRun: cfg?.maxPerRun ?? DEFAULT_MAX_PER_RUN,
    maxTurns: cfg?.maxTurns ?? agent.maxIterations,
  };
}

/**
 * A `subagents.tools` name the agent lacks would silently never be offered: a config error at its
 * path instead. MCP tools (`mcp_<server>_<tool>`) are known only once the server answers, so a name
 * under a configured server passes.
 */
export function subagentToolProblems(
  cfg: SubagentsConfig | undefined,
  opts: { path: string; tools: readonly string[]; mcpServers: readonly string[] },
): Array<{ path: string; message: string }> {
  return (cfg?.tools ?? []).flatMap((name, i) =>
    opts.tools.includes(name) || opts.mcpServers.some((s) => name.startsWith(`mcp_${s}_`))
      ? []
      : [{ path: `${opts.path}.tools[${i}]`, message: `${JSON.stringify(name)} is not in this agent's tools; a sub-agent only gets tools its parent has` }],
  );
}
