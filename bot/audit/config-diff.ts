/**
 * What a configuration holds and how a reload changed it, in the audit trail's words
 * (agent/audit.ts ConfigChanges): agents, routes, approvers (`agent.platform:id`) and access entries
 * (`platform.list:id`). Ids only; prompts, models and limits count as "agent changed".
 */
import type { ConfigChanges } from '../../agent/audit.js';
import type { Config } from '../config/index.js';

type Shape = Pick<Config, 'agents' | 'routes' | 'access'>;

/** `agent.platform:id` for every bound approver (the host operator's `cli` list included). */
export function approverEntries(c: Shape): string[] {
  const out: string[] = [];
  for (const [name, agent] of Object.entries(c.agents)) {
    for (const [platform, ids] of Object.entries(agent.approvers as Record<string, readonly string[] | undefined>)) {
      for (const id of ids ?? []) out.push(`${name}.${platform}:${id}`);
    }
  }
  return out;
}

/** `platform.list:id` for every access entry (users, chats, channels, guilds). */
export function accessEntries(c: Shape): string[] {
  const out: string[] = [];
  for (const platform of ['telegram', 'slack', 'discord'] as const) {
    for (const [list, ids] of Object.entries(c.access[platform] as Record<string, readonly string[]>)) {
      for (const id of ids) out.push(`${platform}.${list}:${id}`);
    }
  }
  return out;
}

const routeEntries = (c: Shape): string[] => c.routes.map((r) => `${r.match} -> ${r.agent}`);

function diff(before: string[], after: string[]): { added: string[]; removed: string[] } {
  const b = new Set(before);
  const a = new Set(after);
  return { added: after.filter((x) => !b.has(x)), removed: before.filter((x) => !a.has(x)) };
}

/** Everything but approvers (reported on their own) and the resolved workspace path. */
function agentBody(agent: Config['agents'][string]): string {
  const { approvers: _a, ...rest } = agent;
  return JSON.stringify(rest);
}

export function configChanges(before: Shape, after: Shape): ConfigChanges {
  const agents = diff(Object.keys(before.agents), Object.keys(after.agents));
  const changed = Object.keys(after.agents).filter((n) => before.agents[n] !== undefined && agentBody(before.agents[n]!) !== agentBody(after.agents[n]!));
  return {
    agents: { ...agents, changed },
    routes: diff(routeEntries(before), routeEntries(after)),
    approvers: diff(approverEntries(before), approverEntries(after)),
    access: diff(accessEntries(before), accessEntries(after)),
  };
}
