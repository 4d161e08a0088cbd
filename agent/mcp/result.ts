/**
 * An MCP server's tools/call result as the tool result the model sees, converted in the document
 * worker (agent/tools/untrusted: the 'mcp' job), never on the bot's event loop.
 *
 * Contract:
 * - `CallResultPassThrough` is the schema to request tools/call with: it checks only "an object" and
 *   hands on the very object the transport parsed (the SDK's CallToolResultSchema would walk every
 *   block on the main thread, and rebuild the object, losing its raw text).
 * - `convertResult(server, tool, result, signal)` sends the text the result came from to the worker
 *   (a stdio line: process-transport's rawResultText; a JSON HTTP body: capped-fetch's
 *   rawHttpResult), else the object itself (an SSE answer; a payload the structured clone refuses,
 *   nested too deeply, is a clear error). The worker keeps text, resources
 *   and links as text and up to MAX_IMAGES images within the Messages API's 5 MB; describes other
 *   blocks; prints structuredContent / toolResult when there are no blocks; caps all text at
 *   MAX_OUTPUT_BYTES with execute_command's truncation marker (mcp-result-source.ts).
 * - Never throws at the model: over its budget (MCP_RESULT_BUDGET: time, heap, buffers) the worker is
 *   terminated and the answer is an error result naming the server, the tool and the budget; a result
 *   of the wrong shape is an error result too. Only an abort of `signal` rethrows.
 */
import { z } from 'zod';
import type { ToolResult } from '../tools/types.js';
import { ToolError } from '../tools/types.js';
import { DocJobError, runDocJob, type DocBudget } from '../tools/untrusted/doc-worker.js';
import { rawHttpResult } from './capped-fetch.js';
import { rawResultText } from './envelope.js';

export const MAX_OUTPUT_BYTES = 256 * 1024;
/** The Messages API takes images up to 5 MB; base64 is 4/3 of that. */
const MAX_IMAGE_BASE64 = Math.floor((5 * 1024 * 1024 * 4) / 3);
/** Images shown from one result; the rest are counted in a note (the API caps images per request). */
export const MAX_IMAGES = 20;
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

export const CallResultPassThrough = z.custom<Record<string, unknown>>(
  (v) => v !== null && typeof v === 'object' && !Array.isArray(v),
  'a tools/call result must be an object',
);

/** Converts one tools/call result in the worker (see the contract). */
export async function convertResult(server: string, tool: string, result: unknown, signal: AbortSignal, budget?: Partial<DocBudget>): Promise<ToolResult> {
  const raw = rawResultText(result) ?? rawHttpResult(result);
  const payload = {
    ...(raw !== undefined ? { raw } : { result }),
    server,
    tool,
    maxOutputBytes: MAX_OUTPUT_BYTES,
    maxImageBase64: MAX_IMAGE_BASE64,
    maxImages: MAX_IMAGES,
    imageTypes: IMAGE_TYPES,
  };
  const what = `converting the result of ${tool} from MCP server "${server}"`;
  try {
    return await runDocJob<ToolResult>('mcp', payload, { what, signal, ...(budget ? { budget } : {}) });
  } catch (err) {
    if (signal.aborted) throw err;
    if (err instanceof ToolError) {
      return { content: `${err.message} The call itself went through: check whether it had an effect before retrying.`, isError: true };
    }
    if (err instanceof DocJobError) {
      return { content: `MCP server "${server}" answered ${tool} with a result that cannot be read (${err.message}).`, isError: true };
    }
    throw err;
  }
}
