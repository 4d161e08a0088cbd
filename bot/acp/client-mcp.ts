/**
 * The MCP servers an ACP editor passes in session/new and session/load, as the agent's MCP servers
 * for this `gatehouse acp` process.
 *
 * Contract:
 * - `clientMcpServers(list, taken)` turns the editor's list into McpServerConfig entries named after
 *   the editor's names, made valid (letters, digits and "-", at most 32) and unique against `taken`
 *   (the agent's own servers keep their names; a clash gets "-2", "-3"...). The same editor server
 *   (same command and args, or url) passed again maps to the name it already has.
 * - stdio servers run on the host with the editor user's rights, as the editor itself would run
 *   them (they are the editor's choice; the bot's own servers stay boxed); their env and the http
 *   servers' headers are taken literally (no `${NAME}` is filled from this process's environment).
 * - SSE servers are not supported (initialize says `mcpCapabilities: { http: true, sse: false }`):
 *   they are returned in `refused` with the reason, as is an entry of a shape this does not know.
 * - Their tools are ordinary MCP tools: `mcp_<server>_<tool>`, high-risk, so every call is asked of the
 *   editor unless toolPolicy or --approval-policy says otherwise.
 */
import { z } from 'zod';
import { DEFAULT_MCP_TIMEOUT_MS, MCP_SERVER_NAME, type McpServerConfig } from '../../agent/mcp/config.js';

const NameValue = z.object({ name: z.string(), value: z.string() });
const Stdio = z.object({ name: z.string(), command: z.string().min(1), args: z.array(z.string()).default([]), env: z.array(NameValue).default([]) });
const Http = z.object({ type: z.literal('http'), name: z.string(), url: z.string().url(), headers: z.array(NameValue).default([]) });

export interface ClientServers {
  added: Record<string, McpServerConfig>;
  refused: Array<{ name: string; reason: string }>;
}

function validName(raw: string): string {
  const cleaned = raw
    .replace(/[^A-Za-z0-9-]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 32)
    .replace(/-+$/, '');
  return cleaned === '' ? 'client' : cleaned;
}

function uniqueName(wanted: string, taken: ReadonlySet<string>): string {
  if (!taken.has(wanted)) return wanted;
  for (let i = 2; ; i++) {
    const suffix = `-${i}`;
    const name = `${wanted.slice(0, 32 - suffix.length)}${suffix}`;
    if (!taken.has(name)) return name;
  }
}

const identity = (s: McpServerConfig): string => (s.kind === 'stdio' ? JSON.stringify([s.command, ...s.args]) : s.url);

/**
 * `known`: the editor's servers this process already added (name -> config), so a second session
 * passing the same server reuses it; `taken`: every server name the agent has.
 */
export function clientMcpServers(list: readonly unknown[], taken: ReadonlySet<string>, known: Readonly<Record<string, McpServerConfig>>): ClientServers {
  const added: Record<string, McpServerConfig> = {};
  const refused: ClientServers['refused'] = [];
  const names = new Set(taken);
  const byIdentity = new Map(Object.entries(known).map(([name, s]) => [identity(s), name]));
  for (const entry of list) {
    const type = (entry as { type?: unknown } | null)?.type;
    const label = String((entry as { name?: unknown } | null)?.name ?? '(unnamed)');
    let server: McpServerConfig;
    if (type === 'sse') {
      refused.push({ name: label, reason: 'SSE MCP servers are not supported; give it as an http or stdio server' });
      continue;
    }
    const http = Http.safeParse(entry);
    const stdio = type === undefined || type === 'stdio' ? Stdio.safeParse(entry) : undefined;
    if (http.success) {
      server = {
        kind: 'http',
        url: http.data.url,
        headers: Object.fromEntries(http.data.headers.map((h) => [h.name, h.value])),
        timeoutMs: DEFAULT_MCP_TIMEOUT_MS,
      };
    } else if (stdio?.success) {
      server = {
        kind: 'stdio',
        command: stdio.data.command,
        args: stdio.data.args,
        env: Object.fromEntries(stdio.data.env.filter((e) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(e.name)).map((e) => [e.name, e.value])),
        sandbox: 'none',
        network: true,
        timeoutMs: DEFAULT_MCP_TIMEOUT_MS,
      };
    } else {
      refused.push({ name: label, reason: 'not an MCP server entry this agent understands (stdio with a command, or http with a url)' });
      continue;
    }
    const existing = byIdentity.get(identity(server));
    if (existing !== undefined) continue;
    const name = uniqueName(validName(label), names);
    if (!MCP_SERVER_NAME.test(name)) {
      refused.push({ name: label, reason: `no valid server name could be made of ${JSON.stringify(label)}` });
      continue;
    }
    names.add(name);
    byIdentity.set(identity(server), name);
    added[name] = server;
  }
  return { added, refused };
}
