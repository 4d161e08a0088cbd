/**
 * `toolPolicy` and `commandRules` in an agent's config: zod schemas (bot/config/index.ts adds them with one
 * line each) and the check of toolPolicy's tool names against the tools that exist.
 *
 * Contract:
 * - `toolPolicy` keys are tool names or globs (`*`, `?`); values allow | ask | deny.
 *   An exact name must be a built-in tool or `mcp_<server>_<tool>` for one of the agent's mcpServers
 *   (the tool part is checked once the server was listed: agent/mcp warns about names it does not offer).
 *   A glob must match a built-in tool or start with `mcp_`. Anything else is a config error that lists
 *   the known names.
 * - `commandRules` entries: { match, policy: deny | ask | allow, reason? }. `match` is an approval key
 *   (`git push`) or a glob over one simple command (`git push *--force*`); an operator that chains,
 *   pipes, substitutes or redirects can never match one simple command, so it is refused.
 */
import { z } from 'zod';
import { globToRegExp, isGlob, POLICY_VALUES } from '../../policies/tool-policy.js';
import type { ConfigProblem } from './env.js';

export const toolPolicySchema = z.record(z.string().min(1), z.enum(POLICY_VALUES));

export const commandRulesSchema = z.array(
  z.strictObject({
    match: z.string().superRefine((s, ctx) => {
      if (s.trim() === '') ctx.addIssue({ code: 'custom', message: 'must not be empty' });
      else if (/[;&|<>`$()\n]/.test(s)) {
        ctx.addIssue({
          code: 'custom',
          message: `${JSON.stringify(s)} would never match: a rule matches one simple command (an approval key like "git push", or a glob like "git push *--force*"), and commands are split at ; && || | before matching`,
        });
      }
    }),
    policy: z.enum(POLICY_VALUES),
    reason: z.string().optional(),
  }),
);

/** Problems with toolPolicy's keys, at `path` (e.g. `agents.ops.toolPolicy`). */
export function toolPolicyProblems(
  toolPolicy: Readonly<Record<string, string>> | undefined,
  opts: { path: string; knownTools: readonly string[]; mcpServers: readonly string[] },
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const known = [...opts.knownTools].sort();
  const mcpHint = opts.mcpServers.length > 0 ? `, and mcp_<server>_<tool> for ${opts.mcpServers.map((s) => `mcp_${s}_*`).join(', ')}` : '';
  for (const key of Object.keys(toolPolicy ?? {})) {
    const at = /^[A-Za-z0-9_-]+$/.test(key) ? `${opts.path}.${key}` : `${opts.path}[${JSON.stringify(key)}]`;
    if (key.startsWith('mcp_')) {
      if (isGlob(key)) continue; // fine whatever the servers list later
      if (opts.mcpServers.some((s) => key.startsWith(`mcp_${s}_`) && key.length > `mcp_${s}_`.length)) continue;
      problems.push({
        path: at,
        message: `${JSON.stringify(key)} names no MCP server of this agent; MCP tools are mcp_<server>_<tool>${opts.mcpServers.length ? ` with <server> one of ${opts.mcpServers.join(', ')}` : ' and this agent has no mcpServers'}`,
      });
      continue;
    }
    if (isGlob(key)) {
      const re = globToRegExp(key);
      if (!known.some((t) => re.test(t)))
        problems.push({ path: at, message: `the glob ${JSON.stringify(key)} matches no known tool; known tools: ${known.join(', ')}${mcpHint}` });
      continue;
    }
    if (!known.includes(key)) problems.push({ path: at, message: `unknown tool ${JSON.stringify(key)}; known tools: ${known.join(', ')}${mcpHint}` });
  }
  return problems;
}
