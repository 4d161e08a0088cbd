/**
 * What an MCP server's tool listing may put in front of the model, an approver or the log. A server
 * is outside data: a hostile or broken one can send any name, any size, any characters.
 *
 * Contract:
 * - A tool name is accepted only when it matches MCP_TOOL_NAME and the name the model sees,
 *   `mcp_<server>_<tool>`, fits the Messages API's tool names (^[a-zA-Z0-9_-]{1,64}$). Anything else
 *   is refused, never cleaned up: a cleaned name could collide with or impersonate another tool. A
 *   name listed twice keeps its first entry.
 * - A description is cut to MAX_DESCRIPTION_CHARS and loses its control, bidi and zero-width
 *   characters (tabs and newlines stay, runs of blank lines fold). An input schema must be a JSON
 *   object of `type: "object"` of at most MAX_SCHEMA_BYTES, else the tool is refused.
 * - `acceptTools` returns the accepted tools and one line per refusal (names quoted with `quoted`).
 * - Listing limits (manager.ts enforces them): MAX_LIST_PAGES pages, MAX_LISTED_TOOLS tools,
 *   MAX_LISTING_BYTES of listing JSON. Past a limit the listing stops and keeps what it has.
 * - `quoted(s)` shows any string from a server as data: one line, JSON-quoted, every control, bidi,
 *   zero-width or line-separator character escaped as \uXXXX, cut at `max` characters. No newline,
 *   markup character run or lookalike status line can become structure on a card or in a log.
 *   `oneLine(s)` does the same for longer text in a log line (a server's stderr in a start failure).
 */
const MCP_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** The Messages API's limit on a tool's name (the whole `mcp_<server>_<tool>`). */
const API_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_DESCRIPTION_CHARS = 2048;
const MAX_SCHEMA_BYTES = 16 * 1024;
export const MAX_LIST_PAGES = 20;
export const MAX_LISTED_TOOLS = 500;
export const MAX_LISTING_BYTES = 4 * 1024 * 1024;

export interface McpToolInfo {
  /** The server's own tool name (validated: see MCP_TOOL_NAME). */
  name: string;
  description?: string;
  /** The server's JSON Schema for the arguments, passed to the model as given (size-capped). */
  inputSchema: Record<string, unknown>;
}

/** The name the model sees. Only for names `toolNameProblem` accepted. */
export function mcpToolName(server: string, tool: string): string {
  return `mcp_${server}_${tool}`;
}

/** Why this tool name cannot be offered, or undefined when it can. */
export function toolNameProblem(server: string, name: unknown): string | undefined {
  if (typeof name !== 'string') return `a tool name must be a string, got ${typeof name}`;
  if (!MCP_TOOL_NAME.test(name)) return `tool name ${quoted(name)} is not 1-64 letters, digits, "_" or "-"`;
  const full = mcpToolName(server, name);
  if (!API_TOOL_NAME.test(full)) return `tool name ${quoted(name)} makes ${quoted(full)}, over the 64 characters a model tool name may have`;
  return undefined;
}

// C0 and C1 controls except tab and newline; bidi embeddings, overrides and isolates; zero-width
// characters and the BOM; line and paragraph separators; the soft hyphen; interlinear annotations.
// eslint-disable-next-line no-control-regex
const STRIP =
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u061C\u115F\u1160\u180E\u200B-\u200F\u202A-\u202E\u2028\u2029\u2060-\u206F\u3164\uFEFF\uFFF9-\uFFFB]/g;
// Everything `quoted` escapes: the above plus tab and newline.
// eslint-disable-next-line no-control-regex
const ESCAPE = /[\u0000-\u001F\u007F-\u009F\u00AD\u061C\u115F\u1160\u180E\u200B-\u200F\u202A-\u202E\u2028\u2029\u2060-\u206F\u3164\uFEFF\uFFF9-\uFFFB]/g;

/** A description as the model may read it: no invisible or control characters, capped. */
export function cleanDescription(s: string, max = MAX_DESCRIPTION_CHARS): string {
  const clean = s
    .replace(/\r\n?/g, '\n')
    .replace(STRIP, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return clean.length > max ? `${cutChars(clean, max - 1)}…` : clean;
}

/** Any string from a server, shown as quoted data (see the contract). */
export function quoted(s: string, max = 80): string {
  const body = s.length > max ? `${cutChars(s, max - 1)}…` : s;
  return JSON.stringify(body).replace(ESCAPE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A log line that quotes a server (its stderr, its error text): newlines shown as ⏎, other invisible characters escaped. */
export function oneLine(s: string): string {
  return s.replace(/\r?\n/g, ' ⏎ ').replace(ESCAPE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function cutChars(s: string, n: number): string {
  const head = s.slice(0, n);
  // Never split a surrogate pair.
  return /[\uD800-\uDBFF]$/.test(head) ? head.slice(0, -1) : head;
}

/** Why this input schema cannot be offered, or undefined when it can. */
export function schemaProblem(schema: unknown): string | undefined {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return 'its input schema is not a JSON object';
  if ((schema as { type?: unknown }).type !== 'object') return 'its input schema is not of type "object"';
  let size: number;
  try {
    size = Buffer.byteLength(JSON.stringify(schema));
  } catch {
    return 'its input schema is not JSON';
  }
  if (size > MAX_SCHEMA_BYTES) return `its input schema is ${Math.ceil(size / 1024)} KB, over the ${MAX_SCHEMA_BYTES / 1024} KB allowed`;
  return undefined;
}

export interface RawTool {
  name?: unknown;
  description?: unknown;
  inputSchema?: unknown;
}

/** The tools of a listing that may be offered, and one line per refused tool. */
export function acceptTools(server: string, raw: readonly RawTool[], already: ReadonlySet<string> = new Set()): { tools: McpToolInfo[]; refused: string[] } {
  const tools: McpToolInfo[] = [];
  const refused: string[] = [];
  const seen = new Set(already);
  for (const t of raw) {
    const nameProblem = toolNameProblem(server, t.name);
    if (nameProblem) {
      refused.push(nameProblem);
      continue;
    }
    const name = t.name as string;
    if (seen.has(name)) {
      refused.push(`tool name ${quoted(name)} is listed twice (the first one is kept)`);
      continue;
    }
    const schema = schemaProblem(t.inputSchema);
    if (schema) {
      refused.push(`tool ${quoted(name)}: ${schema}`);
      continue;
    }
    seen.add(name);
    const description = typeof t.description === 'string' ? cleanDescription(t.description) : '';
    tools.push({ name, ...(description !== '' ? { description } : {}), inputSchema: t.inputSchema as Record<string, unknown> });
  }
  return { tools, refused };
}

/** One log line for a listing's refusals: the first few, and how many more. */
export function refusalSummary(server: string, refused: readonly string[], shown = 5): string {
  const head = refused.slice(0, shown).join('; ');
  const more = refused.length > shown ? `; and ${refused.length - shown} more` : '';
  return `MCP server ${server}: ${refused.length} tool${refused.length === 1 ? '' : 's'} not offered to the model: ${head}${more}`;
}
