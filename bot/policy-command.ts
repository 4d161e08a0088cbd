/**
 * `gatehouse policy check [--agent NAME] [--classify] [--json] -- "<command>"`: what the gate would do
 * with a shell command for an agent, without running it. Operators use it to test a policy before
 * deploying. Without --classify no model is called: a command the allowlists and the agent's tier do
 * not settle is assumed high-risk (what the classifier returns when it fails), and the output says so.
 *
 * --json prints one object: { command, agent, platform, denied, reason?, rule?, approvalKey,
 * allowlisted, tier, tierSource, decision: "allow"|"ask"|"deny", why }.
 */
import { classifierCompletionFrom, createAnthropicModel } from '../agent/model.js';
import { decide } from '../policies/gate.js';
import { createCommandClassifier } from '../policies/classifier.js';
import { analyzeCommand, commandApprovalKey, isCommandAllowlisted } from '../policies/shell/index.js';
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
    if (a === '--agent') agentName = args[++i];
    else if (a === '--platform') platform = args[++i] ?? '';
    else if (a === '--classify') classify = true;
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
    config = loadConfig({ env: io.env, cwd: io.cwd, knownTools: builtinToolNames() });
  } catch (err) {
    io.stderr.write((err instanceof ConfigError ? formatConfigError(err) : String(err)) + '\n');
    return 1;
  }
  const agent = config.agents[agentName ?? config.defaultAgent];
  if (!agent) {
    io.stderr.write(`No agent "${agentName}". Agents: ${Object.keys(config.agents).join(', ')}.\n`);
    return 2;
  }

  const analysis = await analyzeCommand(command);
  const approvalKey = await commandApprovalKey(command);
  const allowlisted = !analysis.denied && isCommandAllowlisted(analysis, agent.autoApprovedCommands);
  type TierSource = 'classifier' | 'assumed' | 'agent-tier' | 'allowlist' | 'none';
  // Set from inside the gate's classify callback, hence an object (flow analysis cannot see into it).
  const seen: { tierSource: TierSource; classifiedTier?: Tier } = { tierSource: 'none' };
  const classifyFn = async (cmd: string): Promise<{ tier: Tier }> => {
    if (!classify) {
      seen.tierSource = 'assumed';
      return { tier: 'high-risk' };
    }
    const model = createAnthropicModel({
      apiKey: config.anthropic.apiKey ?? 'not-needed',
      ...(config.anthropic.baseURL ? { baseURL: config.anthropic.baseURL } : {}),
      maxRetries: 1,
    });
    const verdict = await createCommandClassifier({ complete: classifierCompletionFrom(model, agent.classifierModel) }).classify(cmd);
    seen.tierSource = 'classifier';
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
    decision: decision.action,
    why: decision.action === 'deny' ? decision.reason : decision.why,
  };
  if (json) {
    io.stdout.write(JSON.stringify(result) + '\n');
    return 0;
  }
  const lines = [
    `command:      ${command}`,
    `agent:        ${agent.name} (tier ${agent.tier}) on ${platform}`,
    `denylist:     ${analysis.denied ? `BLOCKED by rule ${analysis.denied.rule}: ${analysis.denied.reason}` : 'passes'}`,
    `approval key: ${approvalKey ?? '(none: a compound command cannot be always-approved as a whole)'}`,
    `allowlist:    ${allowlisted ? 'matches autoApprovedCommands' : 'no match'}`,
    `tier:         ${tier ?? '-'}${tierSource === 'assumed' ? ' (assumed: run with --classify to ask the classifier)' : tierSource === 'classifier' ? ' (classifier)' : ''}`,
    `decision:     ${decision.action.toUpperCase()}`,
    `why:          ${result.why}`,
  ];
  io.stdout.write(lines.join('\n') + '\n');
  return 0;
}
