/**
 * `mcpServers` in an agent's config: the zod schema (bot/config/index.ts adds it with one line) and the
 * resolution into `McpServerConfig` (environment references filled in, cwd absolute).
 *
 * Contract:
 * - `mcpServers: { <name>: { command, args?, env?, cwd?, sandbox?, network?, readPaths?, timeoutMs?, tools? } | { url, headers?, timeoutMs?, tools? } }`.
 *   A server name is 1-32 letters, digits and "-" (no "_": the model sees `mcp_<server>_<tool>`, which
 *   must say unambiguously which server a tool belongs to, and fit 64 characters).
 * - A command server runs in the sandbox by default (`sandbox: bubblewrap`, manager.ts says how), with
 *   no network unless `network: true`. `sandbox: none` runs it on the host with the bot's rights: the
 *   explicit opt-out, logged as a warning at every start. `readPaths` (absolute, or relative to the
 *   config file's folder) are host paths the box shows read-only (visibility.ts says what it shows on
 *   its own); bot/config/index.ts refuses one (and a boxed server's `cwd`) that holds the bot's config, .env
 *   or store. All three keys are errors on an url server.
 * - A declared tool's name follows the listing's rules (listing.ts): 1-64 of [A-Za-z0-9_-], and
 *   `mcp_<server>_<tool>` at most 64 characters; else a config error at its path.
 * - Values in `env` and `headers` may reference environment variables as `${NAME}` (e.g.
 *   `Authorization: "Bearer ${GITHUB_TOKEN}"`), so no secret sits in the YAML; `$${` writes a literal `${`.
 *   A referenced variable that is not set is a config error naming the key and the variable.
 * - `tools` declares tools before the server was ever listed (a name, or { name, description,
 *   inputSchema }); the last successful listing, cached in the store, takes precedence over it.
 * - `timeoutMs` (default 60000) bounds each call; starting and listing get at least 30 s (manager.ts).
 */
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';

import { cleanDescription, schemaProblem, toolNameProblem, type McpToolInfo } from './listing.js';

export { mcpToolName } from './listing.js';

export const DEFAULT_MCP_TIMEOUT_MS = 60_000;
export const MCP_SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,31}$/;
const MCP_SANDBOX_MODES = ['bubblewrap', 'none'] as const;
type McpSandboxMode = (typeof MCP_SANDBOX_MODES)[number];

interface McpServerBase {
  timeoutMs: number;
  tools?: McpToolInfo[];
}
export type McpServerConfig =
  | (McpServerBase & {
      kind: 'stdio';
      command: string;
      args: string[];
      env: Record<string, string>;
      cwd?: string;
      /** bubblewrap: in the box (its own writable folder, see manager.ts); none: on the host. */
      sandbox: McpSandboxMode;
      /** Network inside the box (ignored under sandbox: none, where the host's is used). */
      network: boolean;
      /** Host paths the box shows read-only (absolute; ignored under sandbox: none). */
      readPaths?: string[];
    })
  | (McpServerBase & { kind: 'http'; url: string; headers: Record<string, string> });

const declaredTool = z.union([
  z.string().min(1),
  z.strictObject({
    name: z.string().min(1),
    description: z.string().optional(),
    inputSchema: z.record(z.string(), z.unknown()).optional(),
  }),
]);

const timeoutMs = z.preprocess((v) => (typeof v === 'bigint' ? Number(v) : v), z.number().int().min(1).max(2_147_483_647));

const serverEntry = z
  .strictObject({
    command: z.string().min(1).optional(),
    args: z.array(z.preprocess((v) => (typeof v === 'bigint' || typeof v === 'number' ? String(v) : v), z.string())).optional(),
    env: z
      .record(
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name'),
        z.preprocess((v) => (typeof v === 'bigint' || typeof v === 'number' ? String(v) : v), z.string()),
      )
      .optional(),
    cwd: z.string().min(1).optional(),
    url: z.string().min(1).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    sandbox: z.enum(MCP_SANDBOX_MODES).optional(),
    network: z.boolean().optional(),
    readPaths: z.array(z.string().min(1)).optional(),
    timeoutMs: timeoutMs.optional(),
    tools: z.array(declaredTool).optional(),
  })
  .superRefine((s, ctx) => {
    if ((s.command === undefined) === (s.url === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'give either command (a local server over stdio) or url (Streamable HTTP), not both or neither' });
      return;
    }
    if (s.url !== undefined) {
      for (const k of ['args', 'env', 'cwd'] as const) {
        if (s[k] !== undefined) ctx.addIssue({ code: 'custom', path: [k], message: `${k} only applies to a command server; an url server takes headers` });
      }
      for (const k of ['sandbox', 'network', 'readPaths'] as const) {
        if (s[k] !== undefined)
          ctx.addIssue({ code: 'custom', path: [k], message: `${k} only applies to a command server (it runs here); an url server runs elsewhere` });
      }
      if (!/^https?:\/\/[^/\s]+/i.test(s.url))
        ctx.addIssue({ code: 'custom', path: ['url'], message: `expected an http:// or https:// URL, got ${JSON.stringify(s.url)}` });
    } else if (s.headers !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['headers'], message: 'headers only apply to an url server; a command server takes env' });
    }
  });

const serverName = z.string().superRefine((s, ctx) => {
  if (!MCP_SERVER_NAME.test(s)) {
    ctx.addIssue({
      code: 'custom',
      message: `MCP server names are 1-32 letters, digits or "-" (no "_": tools are named mcp_<server>_<tool>), got ${JSON.stringify(s)}`,
    });
  }
});

/** The schema of an agent's `mcpServers` key. */
export const mcpServersSchema = z.record(serverName, serverEntry);
export type RawMcpServers = z.output<typeof mcpServersSchema>;

export interface Problem {
  path: string;
  message: string;
}

const REF = /\$\$\{|\$\{([^}]*)\}/g;

/** Fills `${NAME}` from env; missing or malformed references become problems at `path`. */
function interpolateEnv(value: string, env: Readonly<Record<string, string | undefined>>, path: string, problems: Problem[]): string {
  return value.replace(REF, (whole, name: string | undefined) => {
    if (whole === '$${') return '${';
    if (name === undefined || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      problems.push({ path, message: `${JSON.stringify(whole)} is not a valid reference; write \${NAME} with an environment variable name` });
      return '';
    }
    const v = env[name];
    if (v === undefined) {
      problems.push({
        path,
        message: `refers to the environment variable ${name}, which is not set; set it in .env or the environment, or remove the reference`,
      });
      return '';
    }
    return v;
  });
}

/**
 * Resolves one agent's `mcpServers` (references filled, cwd and readPaths absolute against baseDir).
 * `botFileIn(p)` names the bot's file that `p` holds (config, .env, store), if any: such a readPaths
 * entry, or a boxed server's cwd (bound read-only), is a problem at its key.
 */
export function resolveMcpServers(
  raw: RawMcpServers | undefined,
  opts: {
    env: Readonly<Record<string, string | undefined>>;
    baseDir: string;
    path: string;
    problems: Problem[];
    botFileIn?: (p: string) => string | undefined;
  },
): Record<string, McpServerConfig> {
  const out: Record<string, McpServerConfig> = {};
  for (const [name, s] of Object.entries(raw ?? {})) {
    const at = `${opts.path}.${name}`;
    const base: McpServerBase = { timeoutMs: s.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS };
    if (s.tools) {
      base.tools = [];
      s.tools.forEach((t, i) => {
        const info: McpToolInfo =
          typeof t === 'string'
            ? { name: t, inputSchema: { type: 'object' } }
            : {
                name: t.name,
                ...(t.description !== undefined ? { description: cleanDescription(t.description) } : {}),
                inputSchema: t.inputSchema ?? { type: 'object' },
              };
        const problem = toolNameProblem(name, info.name) ?? schemaProblem(info.inputSchema);
        if (problem) opts.problems.push({ path: `${at}.tools[${i}]`, message: problem });
        else base.tools!.push(info);
      });
    }
    if (s.url !== undefined) {
      const headers: Record<string, string> = {};
      for (const [h, v] of Object.entries(s.headers ?? {})) headers[h] = interpolateEnv(v, opts.env, `${at}.headers.${h}`, opts.problems);
      out[name] = { ...base, kind: 'http', url: s.url, headers };
    } else {
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(s.env ?? {})) env[k] = interpolateEnv(v, opts.env, `${at}.env.${k}`, opts.problems);
      out[name] = {
        ...base,
        kind: 'stdio',
        command: s.command!,
        args: s.args ?? [],
        env,
        ...(s.cwd !== undefined ? { cwd: isAbsolute(s.cwd) ? s.cwd : resolve(opts.baseDir, s.cwd) } : {}),
        sandbox: s.sandbox ?? 'bubblewrap',
        network: s.network ?? false,
        ...(s.readPaths !== undefined ? { readPaths: [...new Set(s.readPaths.map((p) => (isAbsolute(p) ? p : resolve(opts.baseDir, p))))] } : {}),
      };
      const stdio = out[name] as Extract<McpServerConfig, { kind: 'stdio' }>;
      if (opts.botFileIn) boxViewProblems(at, stdio, opts.botFileIn, opts.problems);
    }
  }
  return out;
}

/** A boxed server sees its readPaths and its cwd: neither may hold the bot's own files. */
function boxViewProblems(at: string, s: Extract<McpServerConfig, { kind: 'stdio' }>, botFileIn: (p: string) => string | undefined, problems: Problem[]): void {
  const shown: Array<[string, string]> = (s.readPaths ?? []).map((p, i) => [`${at}.readPaths[${i}]`, p]);
  if (s.sandbox === 'bubblewrap' && s.cwd !== undefined) shown.push([`${at}.cwd`, s.cwd]);
  for (const [key, p] of shown) {
    const held = botFileIn(p);
    if (held === undefined) continue;
    const fix = key.endsWith('.cwd')
      ? 'Give it a folder of its own, or leave cwd unset (it then starts in its own folder)'
      : "Name a folder that holds none of them (e.g. the server's own folder)";
    problems.push({
      path: key,
      message: `${p} contains ${held}; the MCP server's box shows it read-only, with the bot's files next to it (backups, logs). ${fix}`,
    });
  }
}
