/**
 * Risk tiers. A tool declares one; an agent's `tier` is the highest tier that runs without asking.
 * `unknown` is only ever a tool's declaration (execute_command): the command decides, through the
 * shell analysis and the classifier, and the verdict is then one of the three real tiers.
 */
export const TIERS = ['read-only', 'low-risk', 'high-risk'] as const;
export type Tier = (typeof TIERS)[number];
export type ToolTier = Tier | 'unknown';

const RANK: Record<Tier, number> = { 'read-only': 0, 'low-risk': 1, 'high-risk': 2 };

/** True when a call rated `callTier` may run without asking under an agent configured at `agentTier`. */
export function tierCovers(agentTier: Tier, callTier: Tier): boolean {
  return RANK[callTier] <= RANK[agentTier];
}
