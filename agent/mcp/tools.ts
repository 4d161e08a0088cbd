/**
 * MCP tools as Gatehouse tools: `mcp_<server>_<tool>`, tier high-risk (they can change things elsewhere;
 * toolPolicy lowers or raises that), the server's argument schema passed to the model as given and the
 * arguments forwarded untouched (only "is it an object" is checked here: the server validates).
 *
 * The card (propose) shows the server, the tool and the arguments as pretty JSON, cut at
 * MAX_CARD_ARGS characters with a note saying how much was left out. Nothing connects in propose.
 * Names from a server reach the card and the model only as quoted data (listing.ts `quoted`), and
 * only names the listing accepted are offered at all (listing.ts); descriptions arrive cleaned.
 */
import { z } from 'zod';
import { ToolRegistry } from '../tools/registry.js';
import type { AnyTool, Proposal } from '../tools/types.js';
import { mcpToolName, quoted, type McpToolInfo } from './listing.js';
import type { McpManager } from './manager.js';

const MAX_CARD_ARGS = 2500;
/** Beyond the server's own timeout: our message ("did not answer within ...") wins over the executor's. */
const TIMEOUT_SLACK_MS = 5_000;

const argsObject = z.custom<Record<string, unknown>>(
  (v) => v !== null && typeof v === 'object' && !Array.isArray(v),
  "expected an object with the tool's arguments",
);

function prettyArgs(args: unknown, max = MAX_CARD_ARGS): string {
  const json = JSON.stringify(args, null, 2) ?? 'null';
  if (json.length <= max) return json;
  return `${json.slice(0, max)}\n… (arguments cut for this card: ${json.length - max} more characters not shown; the tool receives them all)`;
}

function mcpTool(manager: McpManager, agent: string, server: string, info: McpToolInfo, timeoutMs: number): AnyTool {
  const name = mcpToolName(server, info.name);
  return {
    name,
    description: `[MCP server ${quoted(server)}, tool ${quoted(info.name)}] ${info.description ?? ''}`.trim(),
    input: argsObject as z.ZodType<unknown>,
    jsonSchema: info.inputSchema,
    tier: 'high-risk',
    timeoutMs: timeoutMs + TIMEOUT_SLACK_MS,
    async propose(input): Promise<Proposal> {
      return { summary: `MCP server ${quoted(server)}, tool ${quoted(info.name)}`, preview: prettyArgs(input) };
    },
    execute(input, ctx) {
      return manager.call(agent, server, info.name, input as Record<string, unknown>, ctx.signal);
    },
  };
}

/** The agent's MCP tools from what is known now (cached listing or config); built per call, cheap. */
export function mcpToolsFor(manager: McpManager, agent: string, servers: Readonly<Record<string, { timeoutMs: number }>>): AnyTool[] {
  const out: AnyTool[] = [];
  const seen = new Set<string>();
  for (const [server, cfg] of Object.entries(servers)) {
    for (const info of manager.knownTools(agent, server) ?? []) {
      const tool = mcpTool(manager, agent, server, info, cfg.timeoutMs);
      if (seen.has(tool.name)) continue; // two server names that clean up to the same one: first wins
      seen.add(tool.name);
      out.push(tool);
    }
  }
  return out;
}

/** A registry that offers the built-in tools of `base` plus the agent's MCP tools of the moment. */
export class RegistryWithMcp extends ToolRegistry {
  constructor(
    private readonly base: ToolRegistry,
    private readonly mcpTools: () => AnyTool[],
  ) {
    super();
  }

  override names(): string[] {
    return [...this.base.names(), ...this.mcpTools().map((t) => t.name)];
  }

  override get(name: string): AnyTool | undefined {
    return this.base.get(name) ?? this.mcpTools().find((t) => t.name === name);
  }

  override toolset(names: readonly string[], opts: { humanAvailable: boolean }): Map<string, AnyTool> {
    const set = this.base.toolset(names, opts);
    for (const t of this.mcpTools()) if (!set.has(t.name)) set.set(t.name, t);
    return set;
  }
}
