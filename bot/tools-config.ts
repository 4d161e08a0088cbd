/**
 * Config schema for the agent-declared tools (issue 23): `agents.<name>.commandTools`.
 *
 * Contract: a bad declaration is a config error at its key path (agents.<name>.commandTools.<tool>.argv[2]);
 * the checks themselves live next to the tool (agent/tools/builtin/command-tools/declaration.ts).
 */
import { z } from 'zod';
import { TIERS } from '../policies/tiers.js';
import { declarationIssues } from '../agent/tools/builtin/command-tools/declaration.js';

const param = z.strictObject({
  type: z.enum(['string', 'integer', 'number', 'boolean']),
  description: z.string().optional(),
  enum: z.array(z.union([z.string(), z.number()])).min(1).optional(),
});

const inputSchema = z.strictObject({
  type: z.literal('object'),
  properties: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a parameter name is letters, digits and _'), param),
  required: z.array(z.string()).optional(),
});

const declaration = z.strictObject({
  description: z.string().min(1),
  input: inputSchema.default({ type: 'object', properties: {} }),
  argv: z.array(z.string().min(1, 'an argv element must not be empty')).min(1, 'argv needs at least the program'),
  tier: z.enum(TIERS),
  timeoutMs: z.number().int().positive().max(3_600_000).optional(),
});

/** `commandTools`: tool name -> declaration; names and slots checked against the built-in tools. */
export function commandToolsSchema(builtinNames: readonly string[]) {
  return z.record(z.string(), declaration).superRefine((tools, ctx) => {
    for (const [name, decl] of Object.entries(tools)) {
      for (const issue of declarationIssues(name, decl, builtinNames)) ctx.addIssue({ code: 'custom', path: [name, ...issue.path], message: issue.message });
    }
  });
}

export type CommandToolsConfig = z.output<ReturnType<typeof commandToolsSchema>>;
