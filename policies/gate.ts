/**
 * The gate: one decision for one proposed tool call — allow, ask a human, or deny with a reason.
 *
 * Order (DESIGN.md "The gate"):
 *   1. shell denylist (execute_command): absolute, no approval overrides it;
 *   2. a request carrying options (a picker) always goes to a human;
 *   3. per-command allowlist (every simple command must match, and none may carry an option that runs
 *      other code, writes files or changes its directory or configuration), per-tool allowlist;
 *   4. the tier: the tool's own, or for `unknown` the classifier's verdict on the command alone;
 *   5. an approver bound for this platform? ask : decline, naming the config key that would fix it.
 *      An ask offers "Always approve" only when its key would cover the asked command itself: a command
 *      key (binary + subcommand) for a single simple command with no risky option (./shell/option-risk.ts),
 *      no unsafe assignment and no redirect; the tool name for other tools; nothing for a picker.
 *      `describeAlways` is the card's wording of what that key then covers.
 * The allowlists are consulted before the tier only to spare a classifier call; the outcome is the
 * same as checking them after. The policy is a function, read at decision time, never captured.
 */
import { tierCovers, type Tier, type ToolTier } from './tiers.js';
import { analyzeCommand, commandApprovalKey, isCommandAllowlisted, type ShellAnalysis } from './shell/index.js';

export interface AgentPolicy {
  name: string;
  tier: Tier;
  autoApprovedTools: readonly string[];
  autoApprovedCommands: readonly string[];
  /** Approver ids per platform (`role:<id>` on Discord). */
  approvers: Readonly<Record<string, readonly string[] | undefined>>;
  /**
   * Where nobody can be bound as an approver (an unattended headless run): what would let the call
   * run, said in the decline instead of "bind an approver".
   */
  noApproverFix?: string;
}

export interface GateRequest {
  toolName: string;
  toolTier: ToolTier;
  platform: string;
  /** The command, for shell tools. */
  command?: string;
  hasOptions: boolean;
}

export interface GateDeps {
  /** Rates a command for `unknown` tools; sees the command alone. `note` says why, when it failed closed. */
  classify(command: string): Promise<{ tier: Tier; note?: string }>;
  analyze?: (command: string) => Promise<ShellAnalysis>;
}

export type GateDecision =
  | { action: 'allow'; tier: Tier; why: string }
  | {
      action: 'ask';
      tier: Tier;
      why: string;
      /** What "Always approve" would add: a command key, the tool name, or null (not offered). */
      always: AlwaysKey | null;
    }
  | { action: 'deny'; absolute: boolean; reason: string; rule?: string };

export type AlwaysKey = { kind: 'command'; key: string } | { kind: 'tool'; name: string };

/**
 * What an "Always" click will cover, for the card: a short button label and a sentence. Plain text, no
 * backticks: labels and status lines show them literally on every surface.
 */
export function describeAlways(always: AlwaysKey): { label: string; covers: string } {
  if (always.kind === 'tool') {
    return {
      label: `Always allow ${always.name}`,
      covers: `“Always” lets this agent run ${always.name} from now on without asking, with any input.`,
    };
  }
  return {
    label: `Always allow “${always.key}”`,
    covers:
      `“Always” adds “${always.key}” to this agent's allowlist: from now on “${always.key}” runs without asking ` +
      `with any arguments, but never with options that run other code, write files or change its directory or ` +
      `configuration, never with unsafe variables, redirects to files or substitutions, and never chained with ` +
      `a command the allowlist does not cover.`,
  };
}

export async function decide(req: GateRequest, readPolicy: () => AgentPolicy, deps: GateDeps): Promise<GateDecision> {
  const analyze = deps.analyze ?? analyzeCommand;
  let analysis: ShellAnalysis | undefined;
  if (req.command !== undefined) {
    analysis = await analyze(req.command);
    if (analysis.denied) {
      return { action: 'deny', absolute: true, rule: analysis.denied.rule, reason: analysis.denied.reason };
    }
  }
  const policy = readPolicy();

  if (req.hasOptions) {
    return askOrDecline(req, policy, req.toolTier === 'unknown' ? 'high-risk' : req.toolTier, 'it offers choices, which a human must pick', null);
  }
  if (analysis && isCommandAllowlisted(analysis, policy.autoApprovedCommands)) {
    return { action: 'allow', tier: 'low-risk', why: 'every command in it is in autoApprovedCommands' };
  }
  if (policy.autoApprovedTools.includes(req.toolName)) {
    return { action: 'allow', tier: req.toolTier === 'unknown' ? 'high-risk' : req.toolTier, why: `${req.toolName} is in autoApprovedTools` };
  }

  let tier: Tier;
  let note = '';
  if (req.toolTier !== 'unknown') tier = req.toolTier;
  else if (policy.tier === 'high-risk') tier = 'high-risk'; // everything is covered: no classifier call
  else if (req.command === undefined) tier = 'high-risk';
  else {
    const verdict = await deps.classify(req.command);
    tier = verdict.tier;
    if (verdict.note) note = ` (${verdict.note})`;
  }

  if (tierCovers(policy.tier, tier)) {
    return { action: 'allow', tier, why: `rated ${tier}, within the agent's tier (${policy.tier})` };
  }
  let always: AlwaysKey | null;
  if (req.command !== undefined) {
    const key = await commandApprovalKey(req.command);
    always = key ? { kind: 'command', key } : null;
  } else always = { kind: 'tool', name: req.toolName };
  return askOrDecline(req, policy, tier, `rated ${tier}${note}, above the agent's tier (${policy.tier})`, always);
}

function askOrDecline(
  req: GateRequest,
  policy: AgentPolicy,
  tier: Tier,
  why: string,
  always: Extract<GateDecision, { action: 'ask' }>['always'],
): GateDecision {
  const approvers = policy.approvers[req.platform] ?? [];
  if (approvers.length > 0) return { action: 'ask', tier, why, always };
  const key = `agents.${policy.name}.approvers.${req.platform}`;
  const fixes = [policy.noApproverFix ?? `bind an approver for ${req.platform} (add their user id to ${key} in gatehouse.yaml)`];
  if (!req.hasOptions) {
    if (req.command !== undefined) fixes.push(`add the command to agents.${policy.name}.autoApprovedCommands`);
    else fixes.push(`add ${req.toolName} to agents.${policy.name}.autoApprovedTools`);
    fixes.push(`raise agents.${policy.name}.tier to ${tier}`);
  }
  return {
    action: 'deny',
    absolute: false,
    reason:
      `Declined: ${req.toolName} needs approval (${why}) and ${policy.noApproverFix ? 'nobody is there to approve it' : `no approver is bound for ${req.platform} here`}, ` +
      `so nobody can approve it. Do not retry it; find another way with the tools you may use, or tell the user. ` +
      `An operator could: ${fixes.join('; or ')}.`,
  };
}
