/**
 * The envelope of a JSON-RPC result response, read without parsing its result: the bot's thread
 * learns `id` (and that it is a plain `{jsonrpc, id, result}`) in one linear scan that builds no
 * object, whatever the result holds; the result itself is parsed in the document worker.
 *
 * Contract: `scanResultEnvelope(line)` returns `{ id }` when the line is one JSON object whose keys
 * are exactly jsonrpc ("2.0"), id (a string or a number) and result (any value), in any order;
 * otherwise (an error, a request, another key, not an object) undefined, and the caller parses the
 * line normally. The result's value is only skipped (strings and brackets, iteratively: any depth),
 * not validated: whoever parses it (JSON.parse in the worker) finds a malformed one.
 */

const C = {
  Quote: 34,
  Backslash: 92,
  Comma: 44,
  Colon: 58,
  OpenBrace: 123,
  CloseBrace: 125,
  OpenBracket: 91,
  CloseBracket: 93,
} as const;

function skipWs(s: string, i: number): number {
  for (;;) {
    const c = s.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13) i++;
    else return i;
  }
}

/** The index after the string that starts at i (a quote), or -1. */
function skipString(s: string, i: number): number {
  for (let j = i + 1; ; ) {
    const q = s.indexOf('"', j);
    if (q === -1) return -1;
    // Escaped when preceded by an odd number of backslashes.
    let k = q - 1;
    while (k > i && s.charCodeAt(k) === C.Backslash) k--;
    if ((q - 1 - k) % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/** The index after the value that starts at i, or -1. Iterative: nesting costs no stack. */
function skipValue(s: string, i: number): number {
  const first = s.charCodeAt(i);
  if (first === C.Quote) return skipString(s, i);
  if (first !== C.OpenBrace && first !== C.OpenBracket) {
    let j = i;
    for (; j < s.length; j++) {
      const c = s.charCodeAt(j);
      if (c === C.Comma || c === C.CloseBrace || c === C.CloseBracket || c === 32 || c === 9 || c === 10 || c === 13) break;
    }
    return j > i ? j : -1;
  }
  let depth = 0;
  for (let j = i; j < s.length; ) {
    const c = s.charCodeAt(j);
    if (c === C.Quote) {
      j = skipString(s, j);
      if (j === -1) return -1;
      continue;
    }
    if (c === C.OpenBrace || c === C.OpenBracket) depth++;
    else if (c === C.CloseBrace || c === C.CloseBracket) {
      depth--;
      if (depth === 0) return j + 1;
    }
    j++;
  }
  return -1;
}

export function scanResultEnvelope(s: string): { id: string | number } | undefined {
  let i = skipWs(s, 0);
  if (s.charCodeAt(i) !== C.OpenBrace) return undefined;
  i = skipWs(s, i + 1);
  let jsonrpc: unknown;
  let id: unknown;
  let result = false;
  for (;;) {
    if (s.charCodeAt(i) !== C.Quote) return undefined;
    const keyEnd = skipString(s, i);
    if (keyEnd === -1) return undefined;
    let key: unknown;
    try {
      key = JSON.parse(s.slice(i, keyEnd));
    } catch {
      return undefined;
    }
    i = skipWs(s, keyEnd);
    if (s.charCodeAt(i) !== C.Colon) return undefined;
    i = skipWs(s, i + 1);
    const end = skipValue(s, i);
    if (end === -1) return undefined;
    if (key === 'result') result = true;
    else if (key === 'id' || key === 'jsonrpc') {
      let v: unknown;
      try {
        v = JSON.parse(s.slice(i, end));
      } catch {
        return undefined;
      }
      if (key === 'id') id = v;
      else jsonrpc = v;
    } else return undefined;
    i = skipWs(s, end);
    const c = s.charCodeAt(i);
    if (c === C.Comma) {
      i = skipWs(s, i + 1);
      continue;
    }
    if (c !== C.CloseBrace) return undefined;
    if (skipWs(s, i + 1) !== s.length) return undefined;
    break;
  }
  if (!result || jsonrpc !== '2.0' || !(typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)))) return undefined;
  return { id };
}

/** One JSON-RPC message from a server; an image result (5 MB, base64) fits with room to spare. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

// Here rather than in process-transport.ts, which loads the MCP SDK: result.ts reads it without.
const rawResults = new WeakMap<object, string>();

/** Keeps the JSON-RPC line a response's `result` object was parsed from (process-transport.ts). */
export function rememberRawResult(result: object, line: string): void {
  rawResults.set(result, line);
}

/** The JSON-RPC line a response's `result` object was parsed from (stdio servers), if it was. */
export function rawResultText(result: unknown): string | undefined {
  return result !== null && typeof result === 'object' ? rawResults.get(result) : undefined;
}
