/**
 * A fetch for the Streamable HTTP transport that reads at most `maxBytes` of any one response body
 * (a JSON answer or one request's SSE stream): past that the body errors and the request fails, so a
 * hostile or broken remote server cannot grow the bot's memory without bound.
 *
 * The JSON answer to a tools/call request is not parsed here either: `json()` scans its envelope
 * (envelope.ts) and gives the SDK `{ jsonrpc, id, result: { [RAW_TOKEN_KEY]: token } }`; the SDK's
 * schema keeps that key, and `rawHttpResult(result)` gives the body for the document worker
 * (mcp/result.ts). SSE answers are parsed by the SDK as before.
 */
import { randomBytes } from 'node:crypto';
import { scanResultEnvelope } from './envelope.js';

const RAW_TOKEN_KEY = '_gatehouseRawResult';
/** Bodies waiting for their conversion; the oldest go first past this many (a cancelled call never reads its own). */
const MAX_WAITING = 32;
const waiting = new Map<string, string>();

/** The body a stand-in result (see above) stands for, once; undefined for any other value. */
export function rawHttpResult(result: unknown): string | undefined {
  if (result === null || typeof result !== 'object') return undefined;
  const token = (result as Record<string, unknown>)[RAW_TOKEN_KEY];
  if (typeof token !== 'string') return undefined;
  const body = waiting.get(token);
  waiting.delete(token);
  return body;
}

function isToolCall(body: unknown): boolean {
  if (typeof body !== 'string' || body.length > 64 * 1024 * 1024) return false;
  try {
    const m = JSON.parse(body) as { method?: unknown };
    return m !== null && typeof m === 'object' && m.method === 'tools/call';
  } catch {
    return false;
  }
}

export function cappedFetch(maxBytes: number, base: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const res = await base(input, init);
    if (!res.body) return res;
    let seen = 0;
    const limited = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > maxBytes)
            controller.error(new Error(`the MCP server sent a response over ${Math.round(maxBytes / (1024 * 1024))} MB; it was not read further`));
          else controller.enqueue(chunk);
        },
      }),
    );
    const out = new Response(limited, { status: res.status, statusText: res.statusText, headers: res.headers });
    if (!isToolCall(init?.body) || !(res.headers.get('content-type') ?? '').toLowerCase().startsWith('application/json')) return out;
    Object.defineProperty(out, 'json', {
      value: async (): Promise<unknown> => {
        const text = await out.text();
        const env = scanResultEnvelope(text);
        if (!env) return JSON.parse(text);
        const token = randomBytes(16).toString('hex');
        waiting.set(token, text);
        while (waiting.size > MAX_WAITING) waiting.delete(waiting.keys().next().value!);
        return { jsonrpc: '2.0', id: env.id, result: { [RAW_TOKEN_KEY]: token } };
      },
    });
    return out;
  };
}
