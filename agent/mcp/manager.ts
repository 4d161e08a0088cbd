/**
 * MCP connections of every agent: lazy, shared, and closed with their processes.
 *
 * Contract:
 * - Nothing connects at start. `load()` reads the last successful listings from the store (no server is
 *   contacted); `tools(agent)` offers `mcp_<server>_<tool>` from that cache, else from the tools the
 *   config declares. A server with neither is listed on the agent's first run (`ensureListed`, which
 *   waits at most LIST_WAIT_MS and never throws: a failure is logged and the run goes on without it).
 * - One connection per (agent, server), opened on the first call or listing, reused by every
 *   conversation of the agent. A connection whose server config changed (reload) is replaced on its
 *   next use; one whose server was removed is closed by `prune` (before each run of the agent).
 * - Every successful listing (at connect) is written to the store and replaces the cached one.
 * - `call` never throws at the model: failures come back as error results that say what happened:
 *   not startable (the command and its stderr tail; for a boxed server whose stderr says something was
 *   not found, which path and the fix: its `readPaths` or `sandbox: none`, visibility.ts), crashed
 *   mid-call (the next call starts it again), timed out (timeoutMs), tool gone (no longer listed), or
 *   the server's own error. The result is converted in the document worker within its own budget
 *   (result.ts): text capped at MAX_OUTPUT_BYTES with the same truncation marker as execute_command;
 *   over budget, an error result naming the server, the tool and the budget.
 *   An abort (run stopped, executor timeout) is passed to the SDK, which cancels the request.
 * - Starting (handshake + listing) gets max(timeoutMs, START_TIMEOUT_MS) in all; each call gets timeoutMs.
 * - A listing is outside data (listing.ts): invalid tools are refused (never offered; one warning per
 *   listing names them, quoted), and the listing stops at MAX_LIST_PAGES pages, MAX_LISTED_TOOLS
 *   tools, MAX_LISTING_BYTES or the start deadline, keeping what it has (one warning; the "tool gone"
 *   error then says the listing was cut). Cached listings are checked the same way when loaded.
 *   Pages are requested with a plain `tools/list` request: the SDK's listTools would compile every
 *   listed outputSchema (a server's) with ajv, which nothing here needs.
 * - Stdio servers start as launch.ts says: in the sandbox, in their own folder under `box.stateRoot`
 *   (default: a fresh folder in the system temp dir), unless their config says `sandbox: none`,
 *   which is logged as a warning at every start. One message from a server is at most
 *   MAX_MESSAGE_BYTES (stdio: the process is stopped; HTTP: the response is not read further).
 * - `close()` closes every connection; stdio servers are stopped with their whole process group (a
 *   boxed one with its whole box).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { CacheRepo } from '../store/types.js';
import type { ToolResult } from '../tools/types.js';
import { cappedFetch } from './capped-fetch.js';
import type { McpServerConfig } from './config.js';
import type { BoxSettings } from './launch.js';
import { acceptTools, oneLine, MAX_LIST_PAGES, MAX_LISTED_TOOLS, MAX_LISTING_BYTES, refusalSummary, type McpToolInfo, type RawTool } from './listing.js';
import { MAX_MESSAGE_BYTES } from './envelope.js';
import type { ProcessTransport } from './process-transport.js';

/** The SDK side (./sdk.ts), imported with the first connection. */
type Sdk = typeof import('./sdk.js');
import { invisibleHint } from './visibility.js';
import { CallResultPassThrough, convertResult } from './result.js';
import type { Log } from '../log.js';
import { messageOf } from '../log.js';
import { linkedController } from '../run/abort.js';
/** Starting and listing get at least this long (`npx` may download first); calls get timeoutMs. */
const START_TIMEOUT_MS = 30_000;
/** How long a first run waits for a server that was never listed. */
const LIST_WAIT_MS = 10_000;

const CachedListing = z.object({
  tools: z.array(z.object({ name: z.unknown(), description: z.unknown().optional(), inputSchema: z.unknown() })),
  at: z.number(),
});

export interface McpManagerOptions {
  /** The agent's servers, read live (a reload may change them). */
  servers(agent: string): Readonly<Record<string, McpServerConfig>> | undefined;
  /** Where listings are cached (the store's cache, key `tools:<agent>:<server>`); optional in tests. */
  kv?: CacheRepo;
  log?: Log;
  /** Called after each successful listing (to check toolPolicy names against it). */
  onListed?: (agent: string, server: string, tools: readonly McpToolInfo[]) => void;
  /** Where boxed stdio servers get their folders, and what the box hides (launch.ts). */
  box?: Partial<BoxSettings>;
  /** The clock for the listing deadline (tests inject one). */
  now?: () => number;
}

interface Connection {
  sdk: Sdk;
  client: Client;
  transport: ProcessTransport | StreamableHTTPClientTransport;
  config: McpServerConfig;
  fingerprint: string;
  tools: Map<string, McpToolInfo>;
  /** Set when the listing stopped at a limit: what was cut, for the "tool gone" error. */
  listingCut?: string;
  /** Set when the transport closed (the server exited or the HTTP session ended). */
  closed: boolean;
}

/** A failure meant for the model: `message` says what happened and what to do. */
class McpFailure extends Error {
  override name = 'McpFailure';
}

const keyOf = (agent: string, server: string) => `${agent}\u0000${server}`;

export class McpManager {
  private readonly listings = new Map<string, McpToolInfo[]>();
  private readonly connections = new Map<string, Promise<Connection>>();
  private closing = false;

  constructor(private readonly opts: McpManagerOptions) {}

  /** Reads cached listings for these agents' servers (the store only; no server is contacted). */
  async load(agents: readonly string[]): Promise<void> {
    if (!this.opts.kv) return;
    for (const agent of agents) {
      for (const server of Object.keys(this.opts.servers(agent) ?? {})) {
        const raw = await this.opts.kv.get(`tools:${keyOf(agent, server)}`);
        const parsed = CachedListing.safeParse(raw);
        // Checked again: the cache may predate these rules, and the store is outside data too.
        if (parsed.success) this.listings.set(keyOf(agent, server), acceptTools(server, parsed.data.tools.slice(0, MAX_LISTED_TOOLS)).tools);
      }
    }
  }

  /** The tools known for (agent, server): the last listing, else the config's declaration, else none. */
  knownTools(agent: string, server: string): McpToolInfo[] | undefined {
    return this.listings.get(keyOf(agent, server)) ?? this.opts.servers(agent)?.[server]?.tools;
  }

  /** Lists servers of the agent that have no known tools yet; waits at most LIST_WAIT_MS, never throws. */
  async ensureListed(agent: string, waitMs = LIST_WAIT_MS): Promise<void> {
    const missing = Object.keys(this.opts.servers(agent) ?? {}).filter((s) => this.knownTools(agent, s) === undefined);
    if (missing.length === 0) return;
    const attempts = missing.map((server) =>
      this.connection(agent, server).then(
        () => undefined,
        // The message quotes the server (its stderr): one log line, whatever it wrote.
        (err: unknown) => this.opts.log?.('warn', `MCP server ${server} of agent ${agent}: ${oneLine(messageOf(err))}`),
      ),
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(attempts), new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
  }

  /** Calls a tool; every failure is an error result (see the contract). */
  async call(agent: string, server: string, tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolResult> {
    let conn: Connection;
    try {
      conn = await this.connection(agent, server);
    } catch (err) {
      return { content: messageOf(err), isError: true };
    }
    if (!conn.tools.has(tool)) return this.toolGone(server, tool, conn);
    const timeoutMs = conn.config.timeoutMs;
    let result: unknown;
    // The SDK adds an abort listener per request and never removes it: on the caller's signal those
    // would pile up (one per call of a long run) and, at a /stop, cancel requests long answered.
    // It gets a signal of this call's own, which stops following the caller's when the call ends.
    const { controller, unlink } = linkedController(signal);
    try {
      // A plain request (what callTool sends): the result is converted off this thread (result.ts).
      result = await conn.client.request({ method: 'tools/call', params: { name: tool, arguments: args } }, CallResultPassThrough, {
        timeout: timeoutMs,
        signal: controller.signal,
      });
    } catch (err) {
      if (signal.aborted) throw err;
      const { McpError, ErrorCode } = conn.sdk;
      if (conn.closed || (err instanceof McpError && err.code === ErrorCode.ConnectionClosed)) {
        conn.closed = true;
        return {
          content:
            `MCP server "${server}" stopped during the call to ${tool}${describeExit(conn)}. It is started again on the next call; ` +
            `check whether this call had an effect before retrying it.`,
          isError: true,
        };
      }
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        return {
          content: `MCP server "${server}" did not answer ${tool} within ${formatSeconds(timeoutMs)} (timed out; the request was cancelled, but the server may have acted on it). Check before retrying.`,
          isError: true,
        };
      }
      if (err instanceof McpError && err.code === ErrorCode.InvalidParams && /not found|unknown tool/i.test(err.message)) {
        conn.tools.delete(tool);
        return this.toolGone(server, tool, conn);
      }
      return { content: `MCP server "${server}" answered ${tool} with an error: ${messageOf(err)}`, isError: true };
    } finally {
      unlink();
    }
    return convertResult(server, tool, result, signal);
  }

  /** Closes the agent's connections to servers its config no longer has (after a reload). */
  async prune(agent: string): Promise<void> {
    const configured = this.opts.servers(agent) ?? {};
    for (const [key, p] of [...this.connections]) {
      const [a, server] = key.split('\u0000');
      if (a !== agent || Object.hasOwn(configured, server!)) continue;
      this.connections.delete(key);
      this.listings.delete(key);
      await p.then(
        (c) => closeConnection(c),
        () => undefined,
      );
    }
  }

  /** Closes every connection and stops every server process (its whole process group). */
  async close(): Promise<void> {
    this.closing = true;
    const all = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(
      all.map((p) =>
        p.then(
          (c) => closeConnection(c),
          () => undefined,
        ),
      ),
    );
    // A temp state folder of our own making is not found again by another manager: remove it.
    if (this.stateRoot !== undefined) rmSync(this.stateRoot, { recursive: true, force: true });
  }

  /** The pids of running stdio servers (for operators and tests). */
  async pids(): Promise<number[]> {
    const out: number[] = [];
    for (const p of this.connections.values()) {
      const c = await p.catch(() => undefined);
      if (c && !c.closed && c.transport instanceof c.sdk.ProcessTransport && c.transport.pid !== undefined) out.push(c.transport.pid);
    }
    return out;
  }

  private toolGone(server: string, tool: string, conn: Connection): ToolResult {
    const offered = [...conn.tools.keys()];
    const shown = offered.length > 50 ? `${offered.slice(0, 50).join(', ')} and ${offered.length - 50} more` : offered.join(', ');
    const cut = conn.listingCut ? ` Its tool listing was cut (${conn.listingCut}), so tools past that point are not offered.` : '';
    return {
      content: `MCP server "${server}" no longer offers the tool ${tool} (it offers: ${shown || 'nothing'}).${cut} Do not call it again; use one of those or tell the user.`,
      isError: true,
    };
  }

  private stateRoot: string | undefined;

  /** The folder boxed servers' folders go in: the configured one, else one fresh temp folder. */
  private boxSettings(): BoxSettings {
    let root = this.opts.box?.stateRoot ?? this.stateRoot;
    if (root === undefined) {
      root = mkdtempSync(join(tmpdir(), 'gatehouse-mcp-'));
      chmodSync(root, 0o711); // the sandbox user must pass through to its own folder
      this.stateRoot = root;
    }
    return { stateRoot: root, botFiles: this.opts.box?.botFiles ?? [], ...(this.opts.box?.homes ? { homes: this.opts.box.homes } : {}) };
  }

  /** The live connection for (agent, server), opening it when there is none or it died. */
  private connection(agent: string, server: string): Promise<Connection> {
    if (this.closing) return Promise.reject(new McpFailure(`MCP server "${server}" is not available: Gatehouse is shutting down.`));
    const config = this.opts.servers(agent)?.[server];
    if (!config) return Promise.reject(new McpFailure(`MCP server "${server}" is no longer configured for this agent.`));
    const key = keyOf(agent, server);
    const fingerprint = JSON.stringify(config);
    const existing = this.connections.get(key);
    if (existing) {
      return existing.then(
        (c) => {
          if (!c.closed && c.fingerprint === fingerprint && this.connections.get(key) === existing) return c;
          if (this.connections.get(key) === existing) this.connections.delete(key);
          void closeConnection(c);
          return this.connection(agent, server);
        },
        () => {
          if (this.connections.get(key) === existing) this.connections.delete(key);
          return this.connection(agent, server);
        },
      );
    }
    const opening = this.open(agent, server, config, fingerprint);
    this.connections.set(key, opening);
    // A failed start is not kept: the next call tries again.
    opening.catch(() => {
      if (this.connections.get(key) === opening) this.connections.delete(key);
    });
    return opening;
  }

  private async open(agent: string, server: string, config: McpServerConfig, fingerprint: string): Promise<Connection> {
    const sdk = await import('./sdk.js');
    const { launchSpec, LaunchError, ProcessTransport, StreamableHTTPClientTransport, Client } = sdk;
    let transport: Connection['transport'];
    if (config.kind === 'stdio') {
      let spec;
      try {
        spec = launchSpec(agent, server, config, this.boxSettings());
      } catch (err) {
        if (!(err instanceof LaunchError)) throw err;
        throw new McpFailure(
          `MCP server "${server}" could not be started: ${err.message}. Tell the user; an operator should fix agents.${agent}.mcpServers.${server}.`,
        );
      }
      if (config.sandbox === 'none') {
        this.opts.log?.(
          'warn',
          `MCP server ${server} of agent ${agent}: sandbox: none — it runs on this host with the bot's own rights, outside any sandbox (agents.${agent}.mcpServers.${server}.sandbox)`,
        );
      }
      transport = new ProcessTransport(spec);
    } else {
      transport = new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: config.headers }, fetch: cappedFetch(MAX_MESSAGE_BYTES) });
    }
    const client = new Client({ name: 'gatehouse', version: '1' });
    const conn: Connection = { sdk, client, transport, config, fingerprint, tools: new Map(), closed: false };
    client.onclose = () => {
      conn.closed = true;
    };
    client.onerror = () => {
      // Transport noise (a non-JSON line on stdout); failures that matter reject the request itself.
    };
    const startTimeoutMs = Math.max(config.timeoutMs, START_TIMEOUT_MS);
    const now = this.opts.now ?? Date.now;
    const deadline = now() + startTimeoutMs;
    try {
      await client.connect(transport, { timeout: startTimeoutMs });
      const listed = await listAllTools(sdk, client, server, deadline, now);
      for (const t of listed.tools) conn.tools.set(t.name, t);
      if (listed.refused.length > 0) this.opts.log?.('warn', `${refusalSummary(server, listed.refused)} (agent ${agent})`);
      if (listed.cut) {
        conn.listingCut = listed.cut;
        this.opts.log?.(
          'warn',
          `MCP server ${server} of agent ${agent}: tool listing stopped: ${listed.cut}; the ${listed.tools.length} tools listed so far are offered`,
        );
      }
      await this.saveListing(agent, server, listed.tools);
    } catch (err) {
      // Described before closing: how it ended on its own, not how our close ended it.
      const message = startFailure(sdk, agent, server, config, transport, err, startTimeoutMs);
      await closeConnection(conn);
      throw new McpFailure(message);
    }
    if (this.closing) {
      await closeConnection(conn);
      throw new McpFailure(`MCP server "${server}" is not available: Gatehouse is shutting down.`);
    }
    this.opts.log?.('info', `MCP server ${server} of agent ${agent} connected (${conn.tools.size} tools)`);
    return conn;
  }

  private async saveListing(agent: string, server: string, tools: McpToolInfo[]): Promise<void> {
    this.listings.set(keyOf(agent, server), tools);
    this.opts.onListed?.(agent, server, tools);
    await this.opts.kv?.set(`tools:${keyOf(agent, server)}`, { tools, at: Date.now() }).catch((err: unknown) => {
      this.opts.log?.('warn', `could not cache the tool list of MCP server ${server}: ${messageOf(err)}`);
    });
  }
}

async function closeConnection(c: Connection): Promise<void> {
  c.closed = true;
  await c.client.close().catch(() => undefined);
  // Client.close closes the transport; a ProcessTransport's close is idempotent and waits for the group.
  await c.transport.close().catch(() => undefined);
}

function describeExit(conn: Connection): string {
  if (!(conn.transport instanceof conn.sdk.ProcessTransport)) return ' (the connection closed)';
  const parts = [conn.transport.exit ? `the process ended with ${conn.transport.exit}` : 'the connection closed'];
  if (conn.transport.stderrTail) parts.push(`its stderr ended with:\n${tail(conn.transport.stderrTail)}`);
  return ` (${parts.join('; ')})`;
}

function startFailure(
  sdk: Sdk,
  agent: string,
  server: string,
  config: McpServerConfig,
  transport: Connection['transport'],
  err: unknown,
  timeoutMs: number,
): string {
  const timedOut = err instanceof sdk.McpError && err.code === sdk.ErrorCode.RequestTimeout;
  const why = timedOut
    ? `it did not complete the MCP handshake and tool listing within ${formatSeconds(timeoutMs)}`
    : err instanceof Error
      ? err.message
      : String(err);
  if (config.kind === 'http')
    return `MCP server "${server}" at ${config.url} could not be reached: ${why}. Tell the user; an operator should check the server and agents' mcpServers.${server}.url.`;
  const cmd = [config.command, ...config.args].map((w) => (/\s/.test(w) ? JSON.stringify(w) : w)).join(' ');
  const pt = transport as ProcessTransport;
  const ended = pt.exit !== undefined && !pt.exit.startsWith('could not start') ? ` ended with ${pt.exit}` : ' failed';
  const lines = [`MCP server "${server}" could not be started: \`${cmd}\`${ended} (${why}).`];
  if (pt.stderrTail) lines.push(`Its stderr ended with:\n${tail(pt.stderrTail)}`);
  const hint = config.sandbox === 'bubblewrap' ? invisibleHint(`agents.${agent}.mcpServers.${server}`, pt.stderrTail) : undefined;
  if (hint) lines.push(hint);
  lines.push(`Tell the user; an operator should fix mcpServers.${server} in gatehouse.yaml. The next call tries to start it again.`);
  return lines.join('\n');
}

function tail(s: string, max = 1500): string {
  return s.length > max ? `...${s.slice(-max)}` : s;
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** A page of tools/list, loosely: each tool is judged on its own (acceptTools), so one bad entry does not cost the rest. */
const ListingPage = z.looseObject({
  tools: z.array(z.looseObject({})),
  nextCursor: z.string().optional(),
});

/**
 * Every page of tools/list, within the limits (listing.ts): stops at a limit or the deadline and
 * keeps what it has; `cut` says which limit. A failure before any page is the caller's to report.
 */
async function listAllTools(
  sdk: Sdk,
  client: Client,
  server: string,
  deadline: number,
  now: () => number,
): Promise<{ tools: McpToolInfo[]; refused: string[]; cut?: string }> {
  const tools: McpToolInfo[] = [];
  const refused: string[] = [];
  const names = new Set<string>();
  let bytes = 0;
  let cursor: string | undefined;
  for (let page = 0; ; page++) {
    if (page >= MAX_LIST_PAGES) return { tools, refused, cut: `more than ${MAX_LIST_PAGES} pages` };
    const left = deadline - now();
    if (left <= 0) return { tools, refused, cut: 'the start deadline passed' };
    let result: z.output<typeof ListingPage>;
    try {
      result = await client.request({ method: 'tools/list', params: cursor !== undefined ? { cursor } : {} }, ListingPage, { timeout: left });
    } catch (err) {
      if (page > 0 && err instanceof sdk.McpError && err.code === sdk.ErrorCode.RequestTimeout) return { tools, refused, cut: 'the start deadline passed' };
      throw err;
    }
    bytes += Buffer.byteLength(JSON.stringify(result.tools));
    if (bytes > MAX_LISTING_BYTES) return { tools, refused, cut: `more than ${MAX_LISTING_BYTES / (1024 * 1024)} MB of tool descriptions` };
    const room = MAX_LISTED_TOOLS - tools.length;
    const accepted = acceptTools(server, result.tools as RawTool[], names);
    refused.push(...accepted.refused);
    for (const t of accepted.tools.slice(0, room)) {
      tools.push(t);
      names.add(t.name);
    }
    if (accepted.tools.length > room) return { tools, refused, cut: `more than ${MAX_LISTED_TOOLS} tools` };
    cursor = result.nextCursor;
    if (cursor === undefined) return { tools, refused };
  }
}
