/**
 * MCP in one piece for the composition root (bot/service/app.ts): the manager, the registry wrapper that
 * offers each agent its MCP tools, the first-run listing hook, and shutdown.
 *
 * Contract: building this connects nothing and reads only the store (boxed stdio servers get their
 * folders under `box.stateRoot` when they first start); see ./manager.ts for the
 * connection rules and ./tools.ts for how a tool looks to the model and on a card. Once a server is
 * listed, a toolPolicy entry naming one of its tools exactly (`mcp_github_create_issue`) that the
 * server does not offer is logged as a warning naming the key (config cannot know it earlier).
 */
import type { CacheRepo } from '../store/types.js';
import type { BoxSettings } from './launch.js';
import type { ToolRegistry } from '../tools/registry.js';
import { isGlob } from '../../policies/tool-policy.js';
import { mcpToolName, type McpServerConfig } from './config.js';
import { McpManager } from './manager.js';
import { mcpToolsFor, RegistryWithMcp } from './tools.js';
import type { Log } from '../log.js';
import { messageOf } from '../log.js';

export interface McpAgentView {
  mcpServers?: Readonly<Record<string, McpServerConfig>>;
  toolPolicy?: Readonly<Record<string, string>>;
}

export interface Mcp {
  manager: McpManager;
  /** `base` plus the agent's MCP tools, as known at each toolset() call. */
  registry(base: ToolRegistry, agent: string): ToolRegistry;
  /** Before a run: list the agent's servers that were never listed (bounded wait, never throws). */
  prepare(agent: string): Promise<void>;
  close(): Promise<void>;
}

export async function createMcp(opts: {
  agents: () => Readonly<Record<string, McpAgentView>>;
  kv?: CacheRepo;
  log: Log;
  /** Boxed stdio servers: where their folders go (the data folder's mcp/) and what the box hides. */
  box?: Partial<BoxSettings>;
}): Promise<Mcp> {
  const servers = (agent: string) => opts.agents()[agent]?.mcpServers;
  const manager = new McpManager({
    servers,
    ...(opts.kv ? { kv: opts.kv } : {}),
    ...(opts.box ? { box: opts.box } : {}),
    log: opts.log,
    onListed: (agent, server, tools) => {
      const offered = new Set(tools.map((t) => mcpToolName(server, t.name)));
      for (const key of Object.keys(opts.agents()[agent]?.toolPolicy ?? {})) {
        if (isGlob(key) || !key.startsWith(`mcp_${server}_`) || offered.has(key)) continue;
        opts.log(
          'warn',
          `agents.${agent}.toolPolicy["${key}"]: MCP server ${server} offers no such tool (its tools: ${[...offered].join(', ') || 'none'}); the entry does nothing`,
        );
      }
    },
  });
  await manager.load(Object.keys(opts.agents()));
  return {
    manager,
    registry: (base, agent) => new RegistryWithMcp(base, () => mcpToolsFor(manager, agent, servers(agent) ?? {})),
    prepare: async (agent) => {
      try {
        await manager.prune(agent);
        await manager.ensureListed(agent);
      } catch (err) {
        opts.log('warn', `MCP listing for agent ${agent}: ${messageOf(err)}`);
      }
    },
    close: () => manager.close(),
  };
}
