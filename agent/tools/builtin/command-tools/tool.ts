/**
 * Custom `command` tools: trusted argv programs declared in config, one tool each.
 *
 * Contract:
 * - The model's input is checked against the declared schema (strict: no unknown keys). Each `{param}`
 *   slot becomes ONE argv element holding the value as text; an optional parameter left out drops its
 *   element. No shell is ever involved: the program is exec'd with that argv, so `; rm -rf x` or
 *   `$(touch pwned)` is just an argument string.
 * - The tool's tier is the declared one; the gate (two-phase: propose, then execute) decides like for
 *   any tool, and the card shows the exact argv.
 * - It runs through execute_command's runner (same sandbox box, sanitized env, process-group kill on
 *   timeout or /stop), with the workspace root as cwd and stdout/stderr capped at 16 KB each (start and
 *   end kept, a truncation marker in between).
 */
import { z } from 'zod';
import { sanitizeEnv } from '../../../../policies/env.js';
import { ToolError, type AnyTool, type ToolContext } from '../../types.js';
import { workspaceRoot } from '../../workspace.js';
import { boxCommand, DEFAULT_SANDBOX_POLICY, SandboxUnavailableError, type SandboxPolicy } from '../../sandbox/index.js';
import { runCommand } from '../execute-command.js';
import { slotOf, type CommandToolDecl, type ParamSchema } from './declaration.js';

const COMMAND_TOOL_OUTPUT_BYTES = 16 * 1024;
const DEFAULT_TIMEOUT_MS = 60_000;
const KILL_GRACE_MS = 2_000;

export interface CommandToolOptions {
  sandbox?: SandboxPolicy;
  baseEnv?: Record<string, string | undefined>;
}

type Input = Record<string, string | number | boolean>;

function paramSchema(p: ParamSchema): z.ZodType<string | number | boolean> {
  if (p.enum) {
    const allowed = p.enum;
    return z
      .union([z.string(), z.number()])
      .refine((v) => allowed.includes(v), { message: `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}` });
  }
  switch (p.type) {
    case 'string':
      return z.string();
    case 'integer':
      return z.number().int();
    case 'number':
      return z.number();
    case 'boolean':
      return z.boolean();
  }
}

/** The argv for one call: literals as written, each slot replaced by its value as one element. */
function buildArgv(decl: CommandToolDecl, input: Input): string[] {
  const argv: string[] = [];
  for (const el of decl.argv) {
    const slot = slotOf(el);
    if (slot === undefined) {
      argv.push(el);
      continue;
    }
    const v = input[slot];
    if (v === undefined) continue;
    argv.push(String(v));
  }
  return argv;
}

export function commandTool(decl: CommandToolDecl, opts: CommandToolOptions = {}): AnyTool {
  const required = new Set(decl.input.required ?? []);
  const shape: Record<string, z.ZodType> = {};
  for (const [k, p] of Object.entries(decl.input.properties)) shape[k] = required.has(k) ? paramSchema(p) : paramSchema(p).optional();
  const input = z.strictObject(shape) as unknown as z.ZodType<Input>;
  const sandbox = opts.sandbox ?? DEFAULT_SANDBOX_POLICY;
  const timeoutMs = decl.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const jsonSchema: Record<string, unknown> = {
    type: 'object',
    properties: decl.input.properties,
    ...(decl.input.required ? { required: decl.input.required } : {}),
    additionalProperties: false,
  };
  const shown = (argv: readonly string[]) => argv.map((a) => (/^[\w./:=@%+-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');

  const tool = {
    name: decl.name,
    description: `${decl.description} (runs a fixed program; output cut to 16 KB per stream; killed after ${Math.round(timeoutMs / 1000)} s)`,
    input,
    jsonSchema,
    tier: decl.tier,
    timeoutMs: timeoutMs + 2 * KILL_GRACE_MS + 5_000,
    async propose(i: Input) {
      const argv = buildArgv(decl, i);
      return { summary: `${decl.name}: ${shown(argv).slice(0, 100)}`, preview: shown(argv), data: { argv } };
    },
    async execute(i: Input, ctx: ToolContext) {
      if (ctx.signal.aborted) throw new ToolError('The run was stopped before the command started; it did not run.');
      const root = await workspaceRoot(ctx.workspace);
      let boxed;
      try {
        boxed = boxCommand(sandbox, { workspace: root, cwd: root, env: sanitizeEnv(opts.baseEnv ?? process.env, ctx.envAllowlist), argv: buildArgv(decl, i) });
      } catch (err) {
        if (err instanceof SandboxUnavailableError) throw new ToolError(`The command did not run: the sandbox is unavailable: ${err.message}`);
        throw err;
      }
      return runCommand(boxed, {
        sandboxed: sandbox.mode === 'bubblewrap',
        timeoutMs,
        killGraceMs: KILL_GRACE_MS,
        maxOutputBytes: COMMAND_TOOL_OUTPUT_BYTES,
        signal: ctx.signal,
        ...(ctx.telemetry ? { report: (r) => ctx.telemetry?.sandbox(r) } : {}),
      });
    },
  };
  return tool as unknown as AnyTool;
}
