/**
 * `gatehouse policy check [--agent NAME] [--classify] [--json] -- "<command>"`: what the gate would do
 * with a shell command for an agent, without running it. Operators use it to test a policy before
 * deploying. Without --classify no model is called: a command the allowlists and the agent's tier do
 * not settle is assumed high-risk (what the classifier returns when it fails), and the output says so;
 * and no ANTHROPIC_API_KEY is needed (a CI machine can check a policy without one).
 *
 * --json prints one object: { command, agent, platform, denied, reason?, rule?, approvalKey,
 * allowlisted, tier, tierSource, classifierDetail?, hasTool, sandbox, decision: "allow"|"ask"|"deny", why }.
 * `denied` is the denylist's verdict alone; `decision` is deny also for a decline (no approver bound
 * for --platform) and for an agent without execute_command. tierSource 'classifier-failed': the
 * classifier call failed and the gate fell back to high-risk (classifierDetail says why).
 */
import { classifierCompletionFrom, createAnthropicModel } from '../agent/model.js';
import { decide } from '../policies/gate.js';
import { createCommandClassifier } from '../policies/classifier.js';
import { allowlistMiss, analyzeCommand, commandApprovalKey, isCommandAllowlisted, type ShellAnalysis } from '../policies/shell/index.js';
import type { Tier } from '../policies/tiers.js';
import type { CliIO } from './cli.js';
import { ConfigError, formatConfigError, loadConfig } from './config.js';
import { builtinToolNames } from '../agent/tools/catalog.js';

const USAGE = 'Usage: gatehouse policy check [--agent NAME] [--platform NAME] [--classify] [--json] -- "<command>"';

export async function policyCommand(args: string[], io: CliIO): Promise<number> {
  if (args[0] !== 'check') {
    io.stderr.write(`${USAGE}\n`);
    return 2;
  }
  let agentName: string | undefined;
  let platform = 'console';
  let classify = false;
  let json = false;
  const words: string[] = [];
  for (let i = 1; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      words.push(...args.slice(i + 1));
      break;
    }
    if (a === '--agent' || a === '--platform') {
      const value = args[++i];
      if (value === undefined || value.startsWith('--')) {
        io.stderr.write(`${a} needs a value.\n${USAGE}\n`);
        return 2;
      }
      if (a === '--agent') agentName = value;
      else platform = value;
    } else if (a === '--classify') classify = true;
    else if (a === '--json') json = true;
    else if (a.startsWith('--')) {
      io.stderr.write(`Unknown option ${a}.\n${USAGE}\n`);
      return 2;
    } else words.push(a);
  }
  const command = words.join(' ');
  if (command.trim() === '') {
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

  const analysis = await analyzeCommand(command);
  const approvalKey = await commandApprovalKey(command);
  const allowlisted = !analysis.denied && isCommandAllowlisted(analysis, agent.autoApprovedCommands);
  type TierSource = 'classifier' | 'classifier-failed' | 'assumed' | 'agent-tier' | 'allowlist' | 'none';
  // Set from inside the gate's classify callback, hence an object (flow analysis cannot see into it).
  const seen: { tierSource: TierSource; classifiedTier?: Tier; classifierDetail?: string } = { tierSource: 'none' };
  const classifyFn = async (cmd: string): Promise<{ tier: Tier }> => {
    if (!classify) {
      seen.tierSource = 'assumed';
      seen.classifiedTier = 'high-risk';
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
  const decision = await decide(
    { toolName: 'execute_command', toolTier: 'unknown', platform, command, hasOptions: false },
    () => ({
      name: agent.name,
      tier: agent.tier,
      autoApprovedTools: agent.autoApprovedTools,
      autoApprovedCommands: agent.autoApprovedCommands,
      approvers: agent.approvers,
    }),
    { classify: classifyFn, analyze: async () => analysis },
  );
  if (allowlisted) seen.tierSource = 'allowlist';
  else if (seen.tierSource === 'none' && agent.tier === 'high-risk' && !analysis.denied) seen.tierSource = 'agent-tier';
  const tierSource = seen.tierSource;
  const tier = decision.action === 'deny' ? (seen.classifiedTier ?? null) : decision.tier;
  // The gate judges the command as if the agent could run it; without the tool it never runs.
  const hasTool = agent.tools.includes('execute_command');
  const noTool = `agent ${agent.name} does not have execute_command (add it to agents.${agent.name}.tools), so it cannot run any command`;
  const action = hasTool ? decision.action : 'deny';
  const why = decision.action === 'deny' ? decision.reason : hasTool ? decision.why : `${noTool}; with it, the gate would ${decision.action}: ${decision.why}`;
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
    why,
  };
  if (json) {
    io.stdout.write(JSON.stringify(result) + '\n');
    return 0;
  }
  const lines = [
    `command:      ${command}`,
    `agent:        ${agent.name} (tier ${agent.tier}) on ${platform}`,
    `denylist:     ${analysis.denied ? `BLOCKED by rule ${analysis.denied.rule}: ${analysis.denied.reason}` : 'passes'}`,
    `approval key: ${approvalKey ?? `(none: ${noKeyReason(analysis)})`}`,
    `allowlist:    ${allowlisted ? 'matches autoApprovedCommands' : `no match (${allowlistMiss(analysis, agent.autoApprovedCommands) ?? 'not allowlisted'})`}`,
    `tier:         ${tier ?? '-'}${
      tierSource === 'assumed'
        ? ' (assumed: run with --classify to ask the classifier)'
        : tierSource === 'classifier'
          ? ' (classifier)'
          : tierSource === 'classifier-failed'
            ? ` (the classifier failed, so high-risk: ${seen.classifierDetail ?? 'no detail'})`
            : ''
    }`,
    `decision:     ${action.toUpperCase()}`,
    `sandbox:      ${agent.sandbox === 'none' ? 'none (runs on the host, unconfined)' : `bubblewrap (network ${agent.sandboxNetwork ? 'on' : 'off'})`}`,
    `why:          ${result.why}`,
  ];
  io.stdout.write(lines.join('\n') + '\n');
  return 0;
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
