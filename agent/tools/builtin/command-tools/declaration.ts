/**
 * A custom `command` tool's declaration, as config gives it, and the checks that make a bad one a
 * config error at its key path (bot/config/tools.ts runs them inside the schema).
 *
 * Contract:
 * - `argv` is a template: each element is either literal text or exactly one `{param}` slot. A slot
 *   fills ONE whole argv element with the parameter's value; a slot inside a larger word (`--x={p}`)
 *   is refused, so a value can never be spliced into another argument. argv[0] is literal (the program).
 * - The input schema is a small JSON Schema subset (an object of string/integer/number/boolean
 *   properties, optional `enum`, `required`): anything else is refused rather than half-understood.
 * - A name may not clash with a built-in tool or the MCP prefix.
 */
import type { Tier } from '../../../../policies/tiers.js';

type ParamType = 'string' | 'integer' | 'number' | 'boolean';

export interface ParamSchema {
  type: ParamType;
  description?: string;
  enum?: Array<string | number>;
}

interface CommandInputSchema {
  type: 'object';
  properties: Record<string, ParamSchema>;
  required?: string[];
}

export interface CommandToolDecl {
  name: string;
  description: string;
  input: CommandInputSchema;
  argv: string[];
  tier: Tier;
  timeoutMs?: number;
}

const COMMAND_TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;
const SLOT = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/;
const ANY_BRACE_SLOT = /\{[A-Za-z_][A-Za-z0-9_]*\}/;

/** The parameter a template element names, or undefined for literal text. */
export function slotOf(element: string): string | undefined {
  return SLOT.exec(element)?.[1];
}

export interface DeclIssue {
  /** Path below the declaration, e.g. ['argv', 2]. */
  path: Array<string | number>;
  message: string;
}

/** What is wrong with a declaration that already has the right shape (names, slots, clashes). */
export function declarationIssues(name: string, decl: Omit<CommandToolDecl, 'name'>, builtinNames: readonly string[]): DeclIssue[] {
  const issues: DeclIssue[] = [];
  if (!COMMAND_TOOL_NAME.test(name)) {
    issues.push({ path: [], message: `tool name ${JSON.stringify(name)}: use 1-64 lowercase letters, digits or "_", starting with a letter` });
  } else if (builtinNames.includes(name)) {
    issues.push({ path: [], message: `${name} is a built-in tool's name; give the command tool another name` });
  } else if (name.startsWith('mcp_')) {
    issues.push({ path: [], message: `${name}: names starting with mcp_ belong to MCP servers' tools` });
  }
  const params = Object.keys(decl.input.properties);
  (decl.input.required ?? []).forEach((r, i) => {
    if (!params.includes(r))
      issues.push({ path: ['input', 'required', i], message: `${JSON.stringify(r)} is not one of input.properties (${params.join(', ') || 'none'})` });
  });
  decl.argv.forEach((el, i) => {
    const slot = slotOf(el);
    if (i === 0 && slot !== undefined) {
      issues.push({ path: ['argv', 0], message: 'argv[0] is the program and must be literal, not a {param} slot' });
    } else if (slot !== undefined && !params.includes(slot)) {
      issues.push({ path: ['argv', i], message: `unknown slot {${slot}}; input.properties has ${params.join(', ') || 'none'}` });
    } else if (slot === undefined && ANY_BRACE_SLOT.test(el)) {
      issues.push({
        path: ['argv', i],
        message: `${JSON.stringify(el)}: a {param} slot must be a whole argv element (write "--flag", "{param}" as two elements); a slot inside a word is refused`,
      });
    }
  });
  return issues;
}
