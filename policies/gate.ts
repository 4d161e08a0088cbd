/**
 * The gate: one decision for one proposed tool call — allow, ask a human, or deny with a reason.
 *
 * Precedence (README "Per-tool policy"), first that applies decides:
 *   denylist > deny > picker > ask > allow > autoApprovedCommands > tier
 *   1. denylist: the shell denylist and this agent's `commandRules` with `policy: deny` (execute_command):
 *      absolute, no approval overrides it;
 *   2. deny: `toolPolicy` says deny for this tool (exact name or glob): never runs, the model is told
 *      it is forbidden here;
 *   3. picker: a request carrying options always goes to a human (never auto-approved);
 *   4. ask: `toolPolicy` ask, or a `commandRules` ask matching one simple command: a human decides even
 *      within the tier (declined when no approver is bound); "Always" is not offered (the rule would
 *      outrank it);
 *   5. allow: `toolPolicy` allow: runs without asking, whatever its tier;
 *   6. allowlists: autoApprovedCommands and `commandRules` allow (every simple command must match, and
 *      none may carry an option that runs other code, writes files or changes its directory or
 *      configuration), autoApprovedTools (and what "Always approve" added to them);
 *   7. the tier: the tool's own, or for `unknown` the classifier's verdict on the command alone;
 *      above it: an approver bound for this platform? ask : decline, naming the config key that would fix it.
 *      An ask offers "Always approve" only when its key would cover the asked command itself: a command
 *      key (binary + subcommand) for a single simple command with no risky option (./shell/option-risk.ts),
 *      no unsafe assignment and no redirect; the tool name for other tools; nothing for a picker.
 *      `describeAlways` is the card's wording of what that key then covers.
 * Every decision names the rule that settled it (`rule`), which `gatehouse policy check` prints.
 * The allowlists are consulted before the tier only to spare a classifier call; the outcome is the
 * same as checking them after. The policy is a function, read at decision time, never captured.
 */
import { tierCovers, type Tier, type ToolTier } from './tiers.js';
import { analyzeCommand, commandApprovalKey, isCommandAllowlisted, type ShellAnalysis } from './shell/index.js';
import { allowRuleMatcher, findCommandRule, matchToolPolicy, type CommandRule, type ToolPolicy } from './tool-policy.js';

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
  /** Per tool or glob: allow | ask | deny (./tool-policy.ts). */
  toolPolicy?: ToolPolicy;
  /** Per simple command: deny | ask | allow, with a reason (./tool-policy.ts). */
  commandRules?: readonly CommandRule[];
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
  | { action: 'allow'; tier: Tier; why: string; rule?: string }
  | {
      action: 'ask';
      tier: Tier;
      why: string;
      rule?: string;
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
  const ruleName = (i: number) => `agents.${policy.name}.commandRules[${i}]`;
  const because = (reason: string | undefined) => (reason ? ` (reason: ${reason})` : '');
  const asTier: Tier = req.toolTier === 'unknown' ? 'high-risk' : req.toolTier;

  // 1. This agent's own additions to the denylist.
  if (analysis) {
    const hit = findCommandRule(policy.commandRules, analysis, 'deny');
    if (hit) {
      return {
        action: 'deny',
        absolute: true,
        rule: ruleName(hit.index),
        reason:
          `Blocked by ${ruleName(hit.index)} (match "${hit.rule.match}" on \`${hit.simple}\`)${because(hit.rule.reason)}. ` +
          `This rule is absolute for this agent: approval cannot override it. Do not retry it; find another way or tell the user.`,
      };
    }
  }
  // 2. toolPolicy deny.
  const toolRule = matchToolPolicy(policy.toolPolicy, req.toolName);
  const toolRuleName = toolRule ? `agents.${policy.name}.toolPolicy["${toolRule.pattern}"]` : '';
  if (toolRule?.value === 'deny') {
    return {
      action: 'deny',
      absolute: true,
      rule: toolRuleName,
      reason: `Forbidden: ${req.toolName} is not allowed for this agent here (${toolRuleName}: deny). No approval can change that; do not retry it, use another tool or tell the user.`,
    };
  }
  // 3. A picker always goes to a human.
  if (req.hasOptions) {
    return askOrDecline(req, policy, asTier, 'it offers choices, which a human must pick', null, 'picker');
  }
  // 4. Forced asks.
  if (toolRule?.value === 'ask') {
    return askOrDecline(req, policy, asTier, `approval required by ${toolRuleName} (ask), even within the tier`, null, toolRuleName);
  }
  if (analysis) {
    const hit = findCommandRule(policy.commandRules, analysis, 'ask');
    if (hit) {
      return askOrDecline(
        req,
        policy,
        asTier,
        `approval required by ${ruleName(hit.index)} (match "${hit.rule.match}" on \`${hit.simple}\`)${because(hit.rule.reason)}`,
        null,
        ruleName(hit.index),
      );
    }
  }
  // 5. toolPolicy allow (the denylist and pickers were settled above).
  if (toolRule?.value === 'allow') {
    return { action: 'allow', tier: asTier, why: `${toolRuleName} allows it without asking`, rule: toolRuleName };
  }
  // 6. Allowlists.
  if (analysis && isCommandAllowlisted(analysis, policy.autoApprovedCommands, allowRuleMatcher(policy.commandRules))) {
    return { action: 'allow', tier: 'low-risk', why: 'every command in it is in autoApprovedCommands or an allow commandRule', rule: 'autoApprovedCommands' };
  }
  if (policy.autoApprovedTools.includes(req.toolName)) {
    return { action: 'allow', tier: asTier, why: `${req.toolName} is in autoApprovedTools`, rule: 'autoApprovedTools' };
  }

  // 7. The tier.
  let tier: Tier;
  let note = '';
  if (req.toolTier !== 'unknown') tier = req.toolTier;
  else if (policy.tier === 'high-risk')
    tier = 'high-risk'; // everything is covered: no classifier call
  else if (req.command === undefined) tier = 'high-risk';
  else {
    const verdict = await deps.classify(req.command);
    tier = verdict.tier;
    if (verdict.note) note = ` (${verdict.note})`;
  }

  if (tierCovers(policy.tier, tier)) {
    return { action: 'allow', tier, why: `rated ${tier}, within the agent's tier (${policy.tier})`, rule: 'tier' };
  }
  let always: AlwaysKey | null;
  if (req.command !== undefined) {
    const key = await commandApprovalKey(req.command);
    always = key ? { kind: 'command', key } : null;
  } else always = { kind: 'tool', name: req.toolName };
  return askOrDecline(req, policy, tier, `rated ${tier}${note}, above the agent's tier (${policy.tier})`, always, 'tier');
}

function askOrDecline(
  req: GateRequest,
  policy: AgentPolicy,
  tier: Tier,
  why: string,
  always: Extract<GateDecision, { action: 'ask' }>['always'],
  rule: string,
): GateDecision {
  const approvers = policy.approvers[req.platform] ?? [];
  if (approvers.length > 0) return { action: 'ask', tier, why, always, rule };
  const key = `agents.${policy.name}.approvers.${req.platform}`;
  const fixes = [policy.noApproverFix ?? `bind an approver for ${req.platform} (add their user id to ${key} in gatehouse.yaml)`];
  if (rule !== 'tier' && rule !== 'picker') fixes.push(`change ${rule}`);
  else if (!req.hasOptions) {
    if (req.command !== undefined) fixes.push(`add the command to agents.${policy.name}.autoApprovedCommands`);
    else fixes.push(`add ${req.toolName} to agents.${policy.name}.autoApprovedTools`);
    fixes.push(`raise agents.${policy.name}.tier to ${tier}`);
  }
  return {
    action: 'deny',
    absolute: false,
    rule: 'no approver bound',
    reason:
      `Declined: ${req.toolName} needs approval (${why}) and ${policy.noApproverFix ? 'nobody is there to approve it' : `no approver is bound for ${req.platform} here`}, ` +
      `so nobody can approve it. Do not retry it; find another way with the tools you may use, or tell the user. ` +
      `An operator could: ${fixes.join('; or ')}.`,
  };
}
