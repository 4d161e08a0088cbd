/**
 * A fake Anthropic Messages API on 127.0.0.1 that the REAL @anthropic-ai/sdk talks to.
 *
 * Contract (what a test can rely on):
 * - `POST /v1/messages` only (anything else: 404 not_found_error). It checks what the real API
 *   checks before a model ever runs: an api key (`x-api-key` or `Authorization: Bearer`, and the
 *   exact key when `startFakeAnthropic({ apiKey })` set one) -> 401 authentication_error; the
 *   `anthropic-version` header, a JSON body, `model`, `max_tokens`, `messages` that start with
 *   `user` and alternate, every assistant `tool_use` answered by a `tool_result` in the very next
 *   user message (and no orphan tool_result), well-formed blocks, `system` and `tools`
 *   -> 400 invalid_request_error. Errors use the real envelope
 *   `{type:'error', error:{type, message}, request_id}` and a `request-id` header.
 * - A rejected request does NOT consume a scripted reply (the model never saw it).
 * - `stream: true` answers with SSE exactly like the API: message_start, ping, per block
 *   content_block_start / content_block_delta (text_delta, or input_json_delta with the JSON
 *   split into partial chunks after an initial empty one) / content_block_stop, message_delta
 *   (stop_reason, usage.output_tokens), message_stop. Otherwise a JSON Message.
 * - Extended thinking as the API (./anthropic-thinking.ts): a reply's `thinking` is sent, signed,
 *   only when the request enables it; thinking blocks handed back must keep their signature, and a
 *   tool-use continuation with thinking on must start with its thinking block.
 * - Replies come from the queue (`enqueue`), then from `setHandler`'s function, then a default
 *   text `NO_SCRIPT_TEXT` (counted in `unscripted`) so a test that ran out of script notices.
 * - Every request (valid or not) is recorded in `requests` with `at` = performance.now() on
 *   arrival, unless `recordRequests` is false (benchmarks).
 * - `close()` ends every connection, hanging ones included, and cancels pending delays.
 */
import { offersServerSearch, serverSearchBlocks, validateServerBlock, validateServerTool, type FakeServerSearch } from './anthropic-server-tools.js';
import { thinkingBlock, thinkingEnabled, validateThinking, validateThinkingBlock, validateThinkingTurn } from './anthropic-thinking.js';
import http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

export const NO_SCRIPT_TEXT = '(no scripted reply)';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (the raw string when it was not JSON). */
  body: unknown;
  /** performance.now() when the request arrived: compare two of these for retry gaps. */
  at: number;
}

export interface FakeToolUse {
  name: string;
  input: unknown;
  id?: string;
}

export interface FakeUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export interface FakeErrorSpec {
  /** 429 rate_limit_error, 529 overloaded_error, 500 api_error, 401 authentication_error, ... */
  status: number;
  type: string;
  message: string;
  /** Sent as the `retry-after` header (seconds, may be fractional). */
  retryAfterSec?: number;
  /** Sent as the `retry-after-ms` header. */
  retryAfterMs?: number;
}

interface ReplyCommon {
  /** Wait before answering at all (headers included). */
  delayMs?: number;
  /**
   * Answer only once this settles (after delayMs): a test releases a "slow" reply when it has seen
   * what it waits for, instead of betting on how long a delay lasts on a busy machine.
   */
  gate?: Promise<unknown>;
  /** Wait between SSE events (streaming only). */
  chunkDelayMs?: number;
  /** Overrides the estimated token counts. */
  usage?: FakeUsage;
  /** A thinking block before the reply's text, sent only when the request enables thinking (as the API). */
  thinking?: string;
  /** A server-side web search inside the reply (with `text` cited), sent only when the request offers it. */
  serverSearch?: FakeServerSearch;
  /** Default: `tool_use` when there are tool uses, else `end_turn`. */
  stopReason?: string;
  /**
   * Streaming: after the content blocks, instead of finishing, stall forever ('hang') or send an
   * SSE `error` event (what the real API does when it overloads mid-stream). Non-streaming: hang,
   * or answer with that error's HTTP status.
   */
  midStream?: 'hang' | { type: string; message: string };
}

export type FakeReply =
  | (ReplyCommon & { text: string })
  | (ReplyCommon & { toolUses: FakeToolUse[]; text?: string })
  | { error: FakeErrorSpec; delayMs?: number }
  | { hang: true; delayMs?: number };

export type FakeScript = FakeReply | ((req: RecordedRequest) => FakeReply);

export interface FakeAnthropic {
  /** Base URL for the SDK (`new Anthropic({ baseURL })`), without `/v1`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Set false in benchmarks: nothing is kept per request. */
  recordRequests: boolean;
  /** How many requests were answered with NO_SCRIPT_TEXT because nothing was scripted. */
  readonly unscripted: number;
  enqueue(...replies: FakeScript[]): void;
  /** Answers every request the queue does not (null: back to the default text). */
  setHandler(fn: ((req: RecordedRequest) => FakeReply) | null): void;
  /** Scripted replies not yet used. */
  remaining(): number;
  close(): Promise<void>;
}

const STATUS_OF_TYPE: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const TOOL_ID = /^[a-zA-Z0-9_-]+$/;

class InvalidRequest extends Error {}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Throws InvalidRequest with the API's wording for the first problem found. */
function validateBody(body: unknown): void {
  const bad = (msg: string): never => {
    throw new InvalidRequest(msg);
  };
  if (!isObj(body)) bad('There was an issue with the request body: expected a JSON object');
  const b = body as Json;
  if (b.model === undefined) bad('model: Field required');
  if (typeof b.model !== 'string' || b.model === '') bad('model: Input should be a valid string');
  if (b.max_tokens === undefined) bad('max_tokens: Field required');
  if (typeof b.max_tokens !== 'number' || !Number.isInteger(b.max_tokens)) bad('max_tokens: Input should be a valid integer');
  if ((b.max_tokens as number) < 1) bad('max_tokens: Input should be greater than or equal to 1');
  if (b.stream !== undefined && typeof b.stream !== 'boolean') bad('stream: Input should be a valid boolean');
  validateThinking(b, bad);
  validateThinkingTurn(b, bad);
  validateSystem(b.system, bad);
  validateTools(b.tools, bad);
  validateMessages(b.messages, bad);
}

function validateSystem(system: unknown, bad: (m: string) => never): void {
  if (system === undefined || typeof system === 'string') return;
  if (!Array.isArray(system)) bad('system: Input should be a valid string or list of text blocks');
  (system as unknown[]).forEach((blk, i) => {
    if (!isObj(blk) || blk.type !== 'text' || typeof blk.text !== 'string') bad(`system.${i}: Input should be a text block`);
  });
}

function validateTools(tools: unknown, bad: (m: string) => never): void {
  if (tools === undefined) return;
  if (!Array.isArray(tools)) bad('tools: Input should be a valid list');
  const seen = new Set<string>();
  (tools as unknown[]).forEach((t, i) => {
    if (!isObj(t)) return bad(`tools.${i}: Input should be an object`);
    if (validateServerTool(t, i, bad)) return;
    if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) {
      bad(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
    }
    if (!isObj(t.input_schema)) bad(`tools.${i}.custom.input_schema: Field required`);
    if ((t.input_schema as Json).type !== 'object') bad(`tools.${i}.custom.input_schema.type: Input should be 'object'`);
    if (t.description !== undefined && typeof t.description !== 'string') bad(`tools.${i}.custom.description: Input should be a valid string`);
    if (seen.has(t.name as string)) bad('tools: Tool names must be unique.');
    seen.add(t.name as string);
  });
}

function validateMessages(messages: unknown, bad: (m: string) => never): void {
  if (messages === undefined) bad('messages: Field required');
  if (!Array.isArray(messages)) bad('messages: Input should be a valid list');
  const list = messages as unknown[];
  if (list.length === 0) bad('messages: at least one message is required');
  let pendingToolUses: string[] = [];
  list.forEach((m, i) => {
    if (!isObj(m)) return bad(`messages.${i}: Input should be an object`);
    if (m.role !== 'user' && m.role !== 'assistant') bad(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (i === 0 && m.role !== 'user') bad('messages: first message must use the "user" role');
    if (i > 0 && (list[i - 1] as Json).role === m.role) {
      bad(`messages: roles must alternate between "user" and "assistant", but found multiple "${String(m.role)}" roles in a row`);
    }
    const isFinalAssistant = i === list.length - 1 && m.role === 'assistant';
    const blocks = normalizeContent(m.content, i, bad);
    if (blocks.length === 0 && !isFinalAssistant) {
      bad(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
    }
    const toolUses: string[] = [];
    const toolResults: string[] = [];
    blocks.forEach((blk, j) => {
      const where = `messages.${i}.content.${j}`;
      switch (blk.type) {
        case 'text':
          if (typeof blk.text !== 'string') bad(`${where}.text: Field required`);
          if (blk.text === '') bad(`${where}: text content blocks must be non-empty`);
          break;
        case 'image':
        case 'document':
          if (!isObj(blk.source)) bad(`${where}.source: Field required`);
          if (m.role !== 'user') bad(`${where}: ${String(blk.type)} blocks are only allowed in user messages`);
          break;
        case 'tool_use':
          if (m.role !== 'assistant') bad(`${where}: tool_use blocks are only allowed in assistant messages`);
          if (typeof blk.id !== 'string' || !TOOL_ID.test(blk.id)) bad(`${where}.id: String should match pattern '^[a-zA-Z0-9_-]+$'`);
          if (typeof blk.name !== 'string' || blk.name === '') bad(`${where}.name: Field required`);
          if (!isObj(blk.input)) bad(`${where}.input: Input should be a valid dictionary`);
          if (toolUses.includes(blk.id as string)) bad(`messages.${i}: \`tool_use\` ids must be unique`);
          toolUses.push(blk.id as string);
          break;
        case 'thinking':
        case 'redacted_thinking':
          validateThinkingBlock(blk, where, m.role, bad);
          break;
        case 'server_tool_use':
        case 'web_search_tool_result':
          validateServerBlock(blk, where, m.role, bad);
          break;
        case 'tool_result':
          if (m.role !== 'user') bad(`${where}: tool_result blocks are only allowed in user messages`);
          if (typeof blk.tool_use_id !== 'string') bad(`${where}.tool_use_id: Field required`);
          if (blk.content !== undefined && typeof blk.content !== 'string' && !Array.isArray(blk.content)) {
            bad(`${where}.content: Input should be a valid string or list`);
          }
          if (blk.is_error !== undefined && typeof blk.is_error !== 'boolean') bad(`${where}.is_error: Input should be a valid boolean`);
          toolResults.push(blk.tool_use_id as string);
          break;
        default:
          bad(`${where}.type: Input tag '${String(blk.type)}' found using 'type' does not match any of the expected tags`);
      }
    });
    if (m.role === 'user') {
      const missing = pendingToolUses.filter((id) => !toolResults.includes(id));
      if (missing.length > 0) {
        bad(
          `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. ` +
            'Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
        );
      }
      const orphans = toolResults.filter((id) => !pendingToolUses.includes(id));
      if (orphans.length > 0) {
        bad(
          `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${orphans.join(', ')}. ` +
            'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
        );
      }
      pendingToolUses = [];
    } else {
      pendingToolUses = toolUses;
      // A final assistant message with tool_use and nothing after it is also an error on the API.
      if (toolUses.length > 0 && i === list.length - 1) {
        bad(
          `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${toolUses.join(', ')}. ` +
            'Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
        );
      }
    }
  });
}

function normalizeContent(content: unknown, i: number, bad: (m: string) => never): Json[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return bad(`messages.${i}.content: Input should be a valid string or list`);
  return content.map((blk, j) => (isObj(blk) ? blk : bad(`messages.${i}.content.${j}: Input should be an object`)));
}

interface Block {
  start: Json;
  deltas: Json[];
  final: Json;
}

function splitCodePoints(s: string, parts: number): string[] {
  const cps = Array.from(s);
  if (cps.length === 0) return [];
  const size = Math.max(1, Math.ceil(cps.length / parts));
  const out: string[] = [];
  for (let k = 0; k < cps.length; k += size) out.push(cps.slice(k, k + size).join(''));
  return out;
}

const estimate = (chars: number): number => Math.max(1, Math.ceil(chars / 4));

export async function startFakeAnthropic(opts: { apiKey?: string } = {}): Promise<FakeAnthropic> {
  const queue: FakeScript[] = [];
  let handler: ((req: RecordedRequest) => FakeReply) | null = null;
  let unscripted = 0;
  let seq = 0;
  const timers = new Map<NodeJS.Timeout, () => void>();
  const requests: RecordedRequest[] = [];

  const fake = {
    url: '',
    requests,
    recordRequests: true,
    get unscripted() {
      return unscripted;
    },
    enqueue(...replies: FakeScript[]) {
      queue.push(...replies);
    },
    setHandler(fn: ((req: RecordedRequest) => FakeReply) | null) {
      handler = fn;
    },
    remaining() {
      return queue.length;
    },
    close,
  };

  /** Resolves after ms, or early (false) when the fake closes or the client goes away. */
  const wait = (ms: number, res: http.ServerResponse): Promise<boolean> =>
    new Promise((resolve) => {
      if (ms <= 0) return resolve(!res.destroyed);
      const done = (ok: boolean) => {
        clearTimeout(t);
        timers.delete(t);
        res.off('close', onClose);
        resolve(ok);
      };
      const onClose = () => done(false);
      const t = setTimeout(() => done(!res.destroyed), ms);
      timers.set(t, onClose);
      res.on('close', onClose);
    });

  const requestId = () => `req_fake_${(++seq).toString(36)}`;

  function sendError(res: http.ServerResponse, spec: FakeErrorSpec): void {
    const rid = requestId();
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', 'request-id': rid };
    if (spec.retryAfterSec !== undefined) headers['retry-after'] = String(spec.retryAfterSec);
    if (spec.retryAfterMs !== undefined) headers['retry-after-ms'] = String(spec.retryAfterMs);
    res.writeHead(spec.status, headers);
    res.end(JSON.stringify({ type: 'error', error: { type: spec.type, message: spec.message }, request_id: rid }));
  }

  function nextScript(rec: RecordedRequest): FakeReply {
    const script = queue.shift();
    if (script !== undefined) return typeof script === 'function' ? script(rec) : script;
    if (handler) return handler(rec);
    unscripted++;
    return { text: NO_SCRIPT_TEXT };
  }

  function buildBlocks(reply: ReplyCommon & { text?: string; toolUses?: FakeToolUse[] }, body: Json): Block[] {
    const blocks: Block[] = [];
    if (reply.thinking !== undefined && thinkingEnabled(body)) blocks.push(thinkingBlock(reply.thinking, splitCodePoints));
    if (reply.serverSearch && offersServerSearch(body)) {
      blocks.push(...serverSearchBlocks(reply.serverSearch, reply.text ?? '', splitCodePoints));
    } else if (reply.text !== undefined && reply.text !== '') {
      blocks.push({
        start: { type: 'text', text: '' },
        deltas: splitCodePoints(reply.text, 4).map((text) => ({ type: 'text_delta', text })),
        final: { type: 'text', text: reply.text },
      });
    }
    for (const tu of reply.toolUses ?? []) {
      const id = tu.id ?? `toolu_fake_${(++seq).toString(36).padStart(6, '0')}`;
      const json = JSON.stringify(tu.input ?? {});
      blocks.push({
        start: { type: 'tool_use', id, name: tu.name, input: {} },
        deltas: ['', ...splitCodePoints(json, 3)].map((partial_json) => ({ type: 'input_json_delta', partial_json })),
        final: { type: 'tool_use', id, name: tu.name, input: tu.input ?? {} },
      });
    }
    return blocks;
  }

  async function answer(res: http.ServerResponse, body: Json, rawLength: number, reply: FakeReply): Promise<void> {
    if (reply.delayMs && !(await wait(reply.delayMs, res))) return;
    if ('hang' in reply) return; // never answers; the client's abort (or close()) ends it
    if ('error' in reply) return sendError(res, reply.error);
    if (reply.gate) {
      await reply.gate.catch(() => undefined);
      if (res.destroyed) return;
    }

    const blocks = buildBlocks(reply, body);
    const outChars = blocks.reduce((n, b) => n + JSON.stringify(b.final).length, 0);
    const usage = {
      input_tokens: reply.usage?.input_tokens ?? estimate(rawLength),
      cache_creation_input_tokens: reply.usage?.cache_creation_input_tokens ?? 0,
      cache_read_input_tokens: reply.usage?.cache_read_input_tokens ?? 0,
      output_tokens: reply.usage?.output_tokens ?? estimate(outChars),
      service_tier: 'standard',
    };
    const stopReason = reply.stopReason ?? ('toolUses' in reply && reply.toolUses.length > 0 ? 'tool_use' : 'end_turn');
    const message = {
      id: `msg_fake_${(++seq).toString(36).padStart(6, '0')}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: blocks.map((b) => b.final),
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    };
    const rid = requestId();

    if (body.stream !== true) {
      if (reply.midStream === 'hang') return;
      if (reply.midStream) {
        const status = STATUS_OF_TYPE[reply.midStream.type] ?? 500;
        return sendError(res, { status, ...reply.midStream });
      }
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': rid });
      res.end(JSON.stringify(message));
      return;
    }

    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'request-id': rid,
    });
    const gap = reply.chunkDelayMs ?? 0;
    const send = async (event: string, data: Json): Promise<boolean> => {
      if (res.destroyed) return false;
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      return gap > 0 ? wait(gap, res) : true;
    };
    const start = { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } };
    if (!(await send('message_start', { type: 'message_start', message: start }))) return;
    if (!(await send('ping', { type: 'ping' }))) return;
    for (const [index, b] of blocks.entries()) {
      if (!(await send('content_block_start', { type: 'content_block_start', index, content_block: b.start }))) return;
      for (const delta of b.deltas) {
        if (!(await send('content_block_delta', { type: 'content_block_delta', index, delta }))) return;
      }
      if (!(await send('content_block_stop', { type: 'content_block_stop', index }))) return;
    }
    if (reply.midStream === 'hang') return;
    if (reply.midStream) {
      res.end(`event: error\ndata: ${JSON.stringify({ type: 'error', error: reply.midStream, request_id: rid })}\n\n`);
      return;
    }
    const delta = {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    };
    if (!(await send('message_delta', delta))) return;
    if (res.destroyed) return;
    res.end(`event: message_stop\ndata: ${JSON.stringify({ type: 'message_stop' })}\n\n`);
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const at = performance.now();
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: unknown = raw;
    let parsed = true;
    try {
      body = JSON.parse(raw);
    } catch {
      parsed = false;
    }
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const rec: RecordedRequest = { method: req.method ?? 'GET', path, headers: req.headers, body, at };
    if (fake.recordRequests) requests.push(rec);

    if (req.method !== 'POST' || path !== '/v1/messages') {
      return sendError(res, { status: 404, type: 'not_found_error', message: `Not found: ${req.method} ${path}` });
    }
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const key = (req.headers['x-api-key'] as string | undefined) ?? bearer;
    if (!key) return sendError(res, { status: 401, type: 'authentication_error', message: 'x-api-key header is required' });
    if (opts.apiKey !== undefined && key !== opts.apiKey) {
      return sendError(res, { status: 401, type: 'authentication_error', message: 'invalid x-api-key' });
    }
    if (!req.headers['anthropic-version']) {
      return sendError(res, { status: 400, type: 'invalid_request_error', message: 'anthropic-version: header is required' });
    }
    if (!parsed) {
      return sendError(res, { status: 400, type: 'invalid_request_error', message: 'There was an issue with the request body: invalid JSON' });
    }
    try {
      validateBody(body);
    } catch (err) {
      if (err instanceof InvalidRequest) return sendError(res, { status: 400, type: 'invalid_request_error', message: err.message });
      throw err;
    }
    await answer(res, body as Json, raw.length, nextScript(rec));
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, { status: 500, type: 'api_error', message: `fake server bug: ${String(err)}` });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function close(): Promise<void> {
    for (const [t, cancel] of timers) {
      clearTimeout(t);
      cancel();
    }
    timers.clear();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  return fake;
}
