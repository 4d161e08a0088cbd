/**
 * Route resolution: which agent serves a conversation (`routes:` and `defaultAgent` of gatehouse.yaml).
 *
 * Contract:
 * - `resolveRoutes` checks every route's agent and `defaultAgent` against the resolved agents,
 *   appending a problem per unknown name (`routes[2].agent: unknown agent "opz" (did you mean "ops"?)`).
 *   No `defaultAgent`: the agent named `default`, else the only agent; several and none named
 *   `default` is a problem at `defaultAgent`.
 * - `agentForConversation`: the first route whose `match` equals the key or is a prefix of it ending
 *   at a ':' boundary wins; no match: defaultAgent. It returns the live AgentConfig.
 */
import { didYouMean } from './problems.js';
import type { ConfigProblem } from './problems.js';
import type { FileConfig, Route } from './schema.js';

export type { Route };
import type { AgentConfig } from './agents.js';

/** What routing reads of bot/config/index.ts's Config (the live object: agents may change). */
export interface RoutedConfig {
  agents: Record<string, AgentConfig>;
  routes: readonly Route[];
  defaultAgent: string;
}

/** The routes and the default agent, checked against `agents`; problems are appended to `problems`. */
export function resolveRoutes(
  file: Pick<FileConfig, 'routes' | 'defaultAgent'>,
  agents: Record<string, AgentConfig>,
  problems: ConfigProblem[],
): { routes: Route[]; defaultAgent: string } {
  const names = Object.keys(agents);
  // Copies: the live config's routes are its own (bot/service/reload.ts replaces them).
  const routes: Route[] = (file.routes ?? []).map((r) => ({ ...r }));
  routes.forEach((r, i) => {
    if (r.agent !== '' && !Object.hasOwn(agents, r.agent)) {
      problems.push({
        path: `routes[${i}].agent`,
        message: `unknown agent ${JSON.stringify(r.agent)}${didYouMean(r.agent, names)}; defined agents: ${names.join(', ')}`,
      });
    }
  });

  let defaultAgent: string;
  if (file.defaultAgent !== undefined) {
    defaultAgent = file.defaultAgent;
    if (!Object.hasOwn(agents, defaultAgent)) {
      problems.push({
        path: 'defaultAgent',
        message: `unknown agent ${JSON.stringify(defaultAgent)}${didYouMean(defaultAgent, names)}; defined agents: ${names.join(', ')}`,
      });
    }
  } else if (Object.hasOwn(agents, 'default')) defaultAgent = 'default';
  else if (names.length === 1) defaultAgent = names[0]!;
  else {
    defaultAgent = names[0] ?? 'default';
    problems.push({
      path: 'defaultAgent',
      message: `required when there are several agents and none is named "default"; set it to one of: ${names.join(', ')}`,
    });
  }
  return { routes, defaultAgent };
}

/**
 * The agent that serves a conversation: the first route whose `match` equals the key or is a prefix
 * of it ending at a ':' boundary (`telegram:-100` matches `telegram:-100` and `telegram:-100:7`, not
 * `telegram:-1001`); a bare platform name matches every key of that platform. No match: defaultAgent.
 * Returns the live AgentConfig. Throws if the chosen agent was removed from `config.agents`.
 */
export function agentForConversation(config: RoutedConfig, key: string): AgentConfig {
  let name = config.defaultAgent;
  for (const r of config.routes) {
    if (key === r.match || key.startsWith(`${r.match}:`)) {
      name = r.agent;
      break;
    }
  }
  const agent = Object.hasOwn(config.agents, name) ? config.agents[name] : undefined;
  if (!agent) throw new Error(`No agent named "${name}" for conversation ${key}; check routes and defaultAgent in the configuration`);
  return agent;
}
