/**
 * `gatehouse policy check [--agent NAME] [--classify] [--json] -- "<command>"`: what the gate would do
 * with a shell command for an agent, without running it. Operators use it to test a policy before
 * deploying. Without --classify no model is called (and no ANTHROPIC_API_KEY is needed: a CI machine
 * can check a policy without one): a command the denylist, the allowlists and the agent's tier do not
 * settle is reported as NOT RATED (tier unknown), with the decision for each tier the classifier could
 * give it, never as a guessed ASK.
 *
 * Exit code: 1 when the decision is DENY (denylist, decline for want of an approver, no
 * execute_command), 0 otherwise; 2 for a usage error, 1 for a config error (on stderr).
 *
 * The per-tool policy is explained too: the `commandRules` entry that denies or asks (with its reason),
 * the `toolPolicy` entry for execute_command, and `rule:` names what settled the decision in the
 * README's precedence (denylist rule, agents.<a>.commandRules[i], agents.<a>.toolPolicy["<key>"],
 * picker, autoApprovedCommands, autoApprovedTools, tier, no approver bound).
 * `--tool NAME` checks a call of any other tool (built-in or mcp_<server>_<tool>) the same way.
 *
 * --json prints one object: { command, agent, platform, denied, reason?, rule?, approvalKey,
 * allowlisted, tier, tierSource, classifierDetail?, hasTool, sandbox, decision, byTier?, rule, why }
 * (`rule` is the denylist's rule when denied by it, else what settled the decision); with --tool:
 * { tool, agent, platform, toolTier, mcpServer?, toolPolicy, hasTool, decision, rule, why }.
 * decision: "allow" | "ask" | "deny", or "depends" when not rated and the tiers lead to different
 * decisions (byTier then maps each tier to its decision). `denied` is the denylist's verdict alone.
 * tierSource: 'not-rated' (no --classify, tier null), 'classifier', 'classifier-failed' (the call
 * failed and the gate fell back to high-risk; classifierDetail says why), 'allowlist', 'agent-tier', 'none'.
 */
import { classifierCompletionFrom, createAnthropicModel } from '../../agent/model/anthropic.js';
import { decide, type AgentPolicy } from '../../policies/gate.js';
import { createCommandClassifier } from '../../policies/classifier.js';
import { allowlistMiss, analyzeCommand, commandApprovalKey, isCommandAllowlisted, type ShellAnalysis } from '../../policies/shell/index.js';
import { TIERS, type Tier } from '../../policies/tiers.js';
import type { CliIO } from './io.js';
import { ConfigError, formatConfigError, loadConfig } from '../config/index.js';
import { builtinRegistry, builtinToolNames } from '../../agent/tools/catalog.js';
import { allowRuleMatcher, findCommandRule, matchToolPolicy } from '../../policies/tool-policy.js';
import type { AgentConfig } from '../config/index.js';

/** The ratings the classifier can give a command. */
const RATINGS: readonly Tier[] = TIERS;

const USAGE =
  'Usage: gatehouse policy check [--agent NAME] [--platform NAME] [--classify] [--json] -- "<command>"\n' +
  '       gatehouse policy check [--agent NAME] [--platform NAME] [--json] --tool NAME';

export async function policyCommand(args: string[], io: CliIO): Promise<number> {
  // Only before `--`: after it, `-h` belongs to the command being checked (grep -h).
  const options = args.includes('--') ? args.slice(0, args.indexOf('--')) : args;
  if (options.includes('--help') || options.includes('-h')) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (args[0] !== 'check') {
    io.stderr.write(`${USAGE}\n`);
    return 2;
  }
  let agentName: string | undefined;
  let platform = 'console';
  let classify = false;
  let json = false;
  let toolName: string | undefined;
  const words: string[] = [];
  for (let i = 1; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      words.push(...args.slice(i + 1));
      break;
    }
    if (a === '--agent' || a === '--platform' || a === '--tool') {
      const value = args[++i];
      if (value === undefined || value.startsWith('--')) {
        io.stderr.write(`${a} needs a value.\n${USAGE}\n`);
        return 2;
      }
      if (a === '--agent') agentName = value;
      else if (a === '--tool') toolName = value;
      else platform = value;
    } else if (a === '--classify') classify = true;
    else if (a === '--json') json = true;
    else if (a.startsWith('--')) {
      io.stderr.write(`Unknown option ${a}.\n${USAGE}\n`);
      return 2;
    } else words.push(a);
  }
  const command = words.join(' ');
  if (toolName !== undefined && command.trim() !== '') {
    io.stderr.write(`Give either --tool NAME or a command, not both.\n${USAGE}\n`);
    return 2;
  }
  if (toolName === undefined && command.trim() === '') {
    io.stderr.write(`No command given.\n${USAGE}\n`);
    return 2;
  }
  let config;
  try {
    // Without --classify no model is called, so a machine without an API key (CI) can still check.
    const env = classify ? io.env : { ...io.env, ANTHROPIC_API_KEY: io.env.ANTHROPIC_API_KEY ?? 'not-needed-without-classify' };
    config = loadConfig({ env, cwd: io.cwd, knownTools: builtinToolNames() });
  } catch (err) {
    io.stderr.write((err instanceof ConfigError ? formatConfigError(err) : String(err)) + '\n');
    return 1;
  }
  const agent = config.agents[agentName ?? config.defaultAgent];
  if (!agent) {
    io.stderr.write(`No agent "${agentName}". Agents: ${Object.keys(config.agents).join(', ')}.\n`);
    return 2;
  }
  // A typo here would silently read as "no approver bound" and report a decline.
  if (!Object.hasOwn(agent.approvers, platform)) {
    io.stderr.write(`No platform "${platform}". Platforms: ${Object.keys(agent.approvers).join(', ')}.\n${USAGE}\n`);
    return 2;
  }

  if (toolName !== undefined) return checkTool(toolName, agent, platform, json, io);

  const analysis = await analyzeCommand(command);
  const approvalKey = await commandApprovalKey(command);
  const allowlisted = !analysis.denied && isCommandAllowlisted(analysis, agent.autoApprovedCommands, allowRuleMatcher(agent.commandRules));
  type TierSource = 'classifier' | 'classifier-failed' | 'not-rated' | 'agent-tier' | 'allowlist' | 'none';
  // Set from inside the gate's classify callback, hence an object (flow analysis cannot see into it).
  const seen: { tierSource: TierSource; classifiedTier?: Tier; classifierDetail?: string } = { tierSource: 'none' };
  const policy = () => policyOf(agent);
  const call = { toolName: 'execute_command', toolTier: 'unknown' as const, platform, command, hasOptions: false };
  const analyze = async () => analysis;
  const classifyFn = async (cmd: string): Promise<{ tier: Tier }> => {
    if (!classify) {
      // Not rated: the decision per possible rating is worked out below.
      seen.tierSource = 'not-rated';
      return { tier: 'high-risk' };
    }
    const model = createAnthropicModel({
      apiKey: config.anthropic.apiKey ?? 'not-needed',
      ...(config.anthropic.baseURL ? { baseURL: config.anthropic.baseURL } : {}),
      maxRetries: 1,
    });
    const verdict = await createCommandClassifier({ complete: classifierCompletionFrom(model, agent.classifierModel) }).classify(cmd);
    // A failed call (bad key, unknown model, timeout) must not read as the classifier's judgement.
    seen.tierSource = verdict.source === 'fail-closed' ? 'classifier-failed' : 'classifier';
    if (verdict.detail !== undefined) seen.classifierDetail = verdict.detail;
    seen.classifiedTier = verdict.tier;
    return { tier: verdict.tier };
  };
  const decision = await decide(call, policy, { classify: classifyFn, analyze });
  // What each rating the classifier could give would lead to (only when it was not asked).
  let byTier: Record<Tier, 'allow' | 'ask' | 'deny'> | undefined;
  if (seen.tierSource === 'not-rated') {
    byTier = {} as Record<Tier, 'allow' | 'ask' | 'deny'>;
    for (const t of RATINGS) byTier[t] = (await decide(call, policy, { classify: async () => ({ tier: t }), analyze })).action;
  }
  if (allowlisted && decision.action === 'allow' && decision.rule === 'autoApprovedCommands') seen.tierSource = 'allowlist';
  else if (seen.tierSource === 'none' && agent.tier === 'high-risk' && !analysis.denied) seen.tierSource = 'agent-tier';
  const tierSource = seen.tierSource;
  const tier = tierSource === 'not-rated' ? null : decision.action === 'deny' ? (seen.classifiedTier ?? null) : decision.tier;
  const hasTool = agent.tools.includes('execute_command');
  const noTool = `agent ${agent.name} does not have execute_command (add it to agents.${agent.name}.tools), so it cannot run any command`;
  const outcomes = byTier ? [...new Set(Object.values(byTier))] : [decision.action];
  const gateAction: 'allow' | 'ask' | 'deny' | 'depends' = outcomes.length === 1 ? outcomes[0]! : 'depends';
  const action = hasTool ? gateAction : 'deny';
  const dependsText = byTier ? RATINGS.map((t) => `${t} -> ${byTier[t].toUpperCase()}`).join(', ') : '';
  const gateText = decision.action === 'deny' ? decision.reason : decision.why;
  const gateWhy =
    gateAction === 'depends'
      ? 'the classifier rates the command (alone, never the chat) when the agent runs it; --classify asks it now'
      : byTier
        ? `not rated, but every rating gives the same decision (${dependsText}): ${gateText}`
        : gateText;
  const why = hasTool ? gateWhy : `${noTool}; with it, the gate would ${gateAction === 'depends' ? 'decide by the rating' : gateAction}: ${gateWhy}`;
  const result = {
    command,
    agent: agent.name,
    platform,
    denied: analysis.denied !== null,
    ...(analysis.denied ? { reason: analysis.denied.reason, rule: analysis.denied.rule } : {}),
    approvalKey: approvalKey ?? '',
    allowlisted,
    tier,
    tierSource,
    ...(seen.classifierDetail !== undefined ? { classifierDetail: seen.classifierDetail } : {}),
    hasTool,
    sandbox: agent.sandbox,
    decision: action,
    ...(byTier ? { byTier } : {}),
    rule: ruleOf(decision),
    why,
  };
  const exitCode = action === 'deny' ? 1 : 0;
  if (json) {
    io.stdout.write(JSON.stringify(result) + '\n');
    return exitCode;
  }
  const lines = [
    `command:      ${command}`,
    `agent:        ${agent.name} (tier ${agent.tier}) on ${platform}`,
    `denylist:     ${analysis.denied ? `BLOCKED by rule ${analysis.denied.rule}: ${analysis.denied.reason}` : 'passes'}`,
    `approval key: ${approvalKey ?? `(none: ${noKeyReason(analysis)})`}`,
    `allowlist:    ${allowlisted ? (isCommandAllowlisted(analysis, agent.autoApprovedCommands) ? 'matches autoApprovedCommands' : 'matches an allow commandRule') : `no match (${allowlistMiss(analysis, agent.autoApprovedCommands, allowRuleMatcher(agent.commandRules)) ?? 'not allowlisted'})`}`,
    `commandRules: ${describeCommandRules(agent, analysis)}`,
    `toolPolicy:   ${describeToolPolicy(agent, 'execute_command')}`,
    `tier:         ${
      tierSource === 'not-rated'
        ? 'unknown (not rated: the classifier rates it when it runs; --classify asks it now)'
        : `${tier ?? '-'}${
            tierSource === 'classifier'
              ? ' (classifier)'
              : tierSource === 'classifier-failed'
                ? ` (the classifier failed, so high-risk: ${seen.classifierDetail ?? 'no detail'})`
                : ''
          }`
    }`,
    `decision:     ${action === 'depends' ? `DEPENDS ON THE RATING: ${dependsText}` : action.toUpperCase()}`,
    `rule:         ${action === 'depends' ? 'tier (by the rating)' : ruleOf(decision)}`,
    `sandbox:      ${agent.sandbox === 'none' ? 'none (runs on the host, unconfined)' : `bubblewrap (network ${agent.sandboxNetwork ? 'on' : agent.sandboxEgress ? `only through the egress proxy to ${agent.sandboxEgress.join(', ')}` : 'off'})`}`,
  ];
  // A denylisted command's reason is already on the denylist line: printed once.
  if (!analysis.denied) lines.push(`why:          ${result.why}`);
  io.stdout.write(lines.join('\n') + '\n');
  return exitCode;
}

/** Why "Always approve" is not offered for the command. */
function noKeyReason(analysis: ShellAnalysis): string {
  if (analysis.denied) return 'the denylist blocks it';
  if (analysis.compound || analysis.hasSubstitution || analysis.hasFileRedirect) {
    return 'a command that chains, pipes, substitutes or redirects to a file cannot be always-approved as a whole';
  }
  const key = analysis.approvalKeys[0] ?? '';
  const miss = key === '' ? 'it runs no command' : allowlistMiss(analysis, [key]);
  return `no key would cover it: ${miss ?? 'it runs no command'}`;
}

/** The rule that settled a decision, in the README's precedence terms. */
function ruleOf(d: { action: string; rule?: string }): string {
  return d.rule ?? (d.action === 'deny' ? 'denylist' : 'tier');
}

function describeToolPolicy(agent: AgentConfig, tool: string): string {
  const m = matchToolPolicy(agent.toolPolicy, tool);
  return m ? `${m.value} (agents.${agent.name}.toolPolicy["${m.pattern}"])` : 'no entry';
}

function describeCommandRules(agent: AgentConfig, analysis: ShellAnalysis): string {
  if (agent.commandRules.length === 0) return 'none';
  if (analysis.denied) return 'not consulted (the denylist blocks it)';
  const hits = (['deny', 'ask'] as const)
    .map((p) => findCommandRule(agent.commandRules, analysis, p))
    .filter((h) => h !== null)
    .map(
      (h) =>
        `${h.rule.policy} by agents.${agent.name}.commandRules[${h.index}] (match "${h.rule.match}" on \`${h.simple}\`${h.rule.reason ? `; reason: ${h.rule.reason}` : ''})`,
    );
  return hits.length > 0 ? hits.join('; ') : 'no deny or ask rule matches';
}

/** `--tool NAME`: what the gate would do with a call of a (non-shell) tool. */
async function checkTool(toolName: string, agent: AgentConfig, platform: string, json: boolean, io: CliIO): Promise<number> {
  const mcpServer = Object.keys(agent.mcpServers).find((s) => toolName.startsWith(`mcp_${s}_`));
  const builtin = builtinRegistry().get(toolName);
  if (!builtin && !mcpServer) {
    const known = [...builtinToolNames(), ...Object.keys(agent.mcpServers).map((s) => `mcp_${s}_*`)];
    io.stderr.write(`No tool "${toolName}" for agent ${agent.name}. Known: ${known.join(', ')}.\n`);
    return 2;
  }
  if (toolName === 'execute_command') {
    io.stderr.write(`execute_command depends on the command: use gatehouse policy check -- "<command>".\n`);
    return 2;
  }
  const toolTier = builtin ? builtin.tier : 'high-risk';
  const hasTool = mcpServer !== undefined || agent.tools.includes(toolName);
  const decision = await decide({ toolName, toolTier, platform, hasOptions: false }, () => policyOf(agent), { classify: async () => ({ tier: 'high-risk' }) });
  const action = hasTool ? decision.action : 'deny';
  const gateText = decision.action === 'deny' ? decision.reason : decision.why;
  const why = hasTool ? gateText : `agent ${agent.name} does not have ${toolName} (add it to agents.${agent.name}.tools); with it: ${gateText}`;
  const result = {
    tool: toolName,
    agent: agent.name,
    platform,
    toolTier,
    ...(mcpServer ? { mcpServer } : {}),
    toolPolicy: matchToolPolicy(agent.toolPolicy, toolName),
    hasTool,
    decision: action,
    rule: ruleOf(decision),
    why,
  };
  if (json) io.stdout.write(JSON.stringify(result) + '\n');
  else {
    io.stdout.write(
      [
        `tool:         ${toolName}${mcpServer ? ` (MCP server ${mcpServer})` : ''}, tier ${toolTier}`,
        `agent:        ${agent.name} (tier ${agent.tier}) on ${platform}`,
        `toolPolicy:   ${describeToolPolicy(agent, toolName)}`,
        `decision:     ${action.toUpperCase()}`,
        `rule:         ${ruleOf(decision)}`,
        `why:          ${why}`,
      ].join('\n') + '\n',
    );
  }
  return action === 'deny' ? 1 : 0;
}

/** The gate's view of an agent as configured (no runtime Always entries: this explains the config). */
function policyOf(agent: AgentConfig): AgentPolicy {
  return {
    name: agent.name,
    tier: agent.tier,
    autoApprovedTools: agent.autoApprovedTools,
    autoApprovedCommands: agent.autoApprovedCommands,
    approvers: agent.approvers,
    toolPolicy: agent.toolPolicy,
    commandRules: agent.commandRules,
  };
}
