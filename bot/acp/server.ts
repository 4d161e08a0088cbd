/**
 * The ACP agent app of `gatehouse acp` (./command.ts parses the flags): the SDK's stable v1 agent
 * side on a byte stream, with the Gatehouse core (bot/service/app.ts) in this process.
 *
 * Contract:
 * - `initialize` answers the protocol version, session/load, MCP servers over stdio and http (no SSE,
 *   no images), and notes whether the client shows forms (elicitation.form: questions and pickers).
 * - `session/new` opens ./sessions.ts's session; `session/load` takes a stored one back
 *   (resourceNotFound when the store has no such session of this agent). Both add the editor's MCP
 *   servers to the agent's for this process (./client-mcp.ts).
 * - `session/prompt` runs one turn; `session/cancel` stops it.
 * - Resolves with 0 when the connection closes (the client ended stdin), after the core stopped.
 */
import { agent, PROTOCOL_VERSION, RequestError, ndJsonStream, type AgentContext, type ContentBlock } from '@agentclientprotocol/sdk';
import { createAnthropicModel } from '../../agent/model/anthropic.js';
import type { Tier } from '../../policies/tiers.js';
import { createGatehouse } from '../service/app.js';
import type { CliIO } from '../cli/io.js';
import type { Config } from '../config/index.js';
import { auditTo, createLogger, secretValues } from '../service/log.js';
import { openStore } from '../service/storage.js';
import { AcpSessions, PromptRunning, SessionNotLoadable } from './sessions.js';
import { clientMcpServers } from './client-mcp.js';
import type { McpServerConfig } from '../../agent/mcp/config.js';

/** What the model is sent for one prompt's content blocks (text as is, resources by their text or URI). */
function promptText(blocks: ContentBlock[]): string {
  const parts: string[] = [];
  for (const b of blocks) {
    if (b.type === 'text') parts.push(b.text);
    else if (b.type === 'resource_link') parts.push(`[${b.name}](${b.uri})`);
    else if (b.type === 'resource' && 'text' in b.resource) parts.push(`${b.resource.uri}:\n${b.resource.text}`);
  }
  return parts.join('\n');
}

export async function serveAcp(
  io: CliIO,
  config: Config,
  opts: { agentName: string; approvalPolicy?: Tier },
  stream: { input: ReadableStream<Uint8Array>; output: WritableStream<Uint8Array> },
): Promise<number> {
  const log = createLogger({ level: config.logLevel, destination: io.stderr, secrets: secretValues(io.env) }).log;
  const model = createAnthropicModel({
    apiKey: config.anthropic.apiKey ?? 'not-needed',
    ...(config.anthropic.baseURL ? { baseURL: config.anthropic.baseURL } : {}),
    onRetry: (r) => log('warn', `model call failed (${r.code}); retry ${r.attempt} in ${Math.round(r.delayMs)} ms`),
  });
  const store = await openStore(config.store, { log });
  let client: AgentContext | undefined;
  let forms = false;
  let sessions: AcpSessions | undefined;
  try {
    const gatehouse = await createGatehouse({
      config,
      store,
      model,
      adapters: [],
      log,
      audit: auditTo(log),
      replica: false,
      extraOutputs: (key) => sessions?.output(key),
    });
    sessions = new AcpSessions({
      runner: gatehouse.runner,
      broker: gatehouse.broker,
      agentName: opts.agentName,
      ...(opts.approvalPolicy ? { approvalPolicy: opts.approvalPolicy } : {}),
      client: () => client,
      log,
      transcripts: store.transcripts,
      forms: () => forms,
    });
    const s = sessions;
    const workspace = config.agents[opts.agentName]?.workspace;
    // The editor's MCP servers join the agent's for this process (the live config MCP reads).
    const fromEditor: Record<string, McpServerConfig> = {};
    const useEditorServers = (list: readonly unknown[]) => {
      const agentConfig = config.agents[opts.agentName];
      if (!agentConfig || list.length === 0) return;
      const { added, refused } = clientMcpServers(list, new Set(Object.keys(agentConfig.mcpServers)), fromEditor);
      for (const r of refused) log('warn', `acp: the editor's MCP server ${r.name} is not used: ${r.reason}`);
      if (Object.keys(added).length === 0) return;
      Object.assign(fromEditor, added);
      agentConfig.mcpServers = { ...agentConfig.mcpServers, ...added };
      for (const [name, server] of Object.entries(added))
        log(
          'info',
          `acp: MCP server ${name} from the editor: ${server.kind === 'stdio' ? `${server.command}, on the host as the editor would run it` : server.url}`,
        );
    };
    const app = agent({ name: 'gatehouse' })
      .onRequest('initialize', ({ params }) => {
        forms = params.clientCapabilities?.elicitation?.form != null;
        return {
          protocolVersion: PROTOCOL_VERSION,
          agentCapabilities: {
            loadSession: true,
            promptCapabilities: { image: false, audio: false, embeddedContext: true },
            mcpCapabilities: { http: true, sse: false },
          },
          agentInfo: { name: 'gatehouse', version: '0' },
          authMethods: [],
        };
      })
      .onRequest('session/new', ({ params }) => {
        useEditorServers(params.mcpServers);
        const sessionId = s.newSession();
        if (params.cwd !== workspace)
          log('info', `acp: session ${sessionId}: the client's cwd ${params.cwd} is not used; agent ${opts.agentName} works in its own workspace`);
        return { sessionId };
      })
      .onRequest('session/load', async ({ params }) => {
        try {
          await s.load(params.sessionId);
        } catch (e) {
          if (e instanceof SessionNotLoadable)
            throw e.missing ? RequestError.resourceNotFound(params.sessionId) : RequestError.invalidParams({ sessionId: params.sessionId }, e.message);
          if (e instanceof PromptRunning) throw RequestError.invalidRequest(undefined, e.message);
          throw e;
        }
        useEditorServers(params.mcpServers);
        if (params.cwd !== workspace)
          log('info', `acp: session ${params.sessionId}: the client's cwd ${params.cwd} is not used; agent ${opts.agentName} works in its own workspace`);
        return {};
      })
      .onRequest('session/prompt', async ({ params }) => {
        if (!s.has(params.sessionId)) throw RequestError.resourceNotFound(params.sessionId);
        const text = promptText(params.prompt);
        if (text.trim() === '') throw RequestError.invalidParams({ prompt: 'no text in the prompt' });
        try {
          return { stopReason: await s.prompt(params.sessionId, text) };
        } catch (e) {
          if (e instanceof PromptRunning) throw RequestError.invalidRequest(undefined, e.message);
          throw e;
        }
      })
      .onNotification('session/cancel', ({ params }) => s.cancel(params.sessionId));
    const connection = app.connect(ndJsonStream(stream.output, stream.input));
    client = connection.client;
    log('info', `acp: serving agent ${opts.agentName} on stdio`);
    await connection.closed;
    client = undefined;
    await gatehouse.stop({ graceMs: 0 });
  } finally {
    await store.close();
  }
  return 0;
}
