/**
 * The tool registry: every tool Gatehouse knows, by name. An agent's toolset is a subset (a tool not
 * listed in its config does not exist for it); tools that need a human are left out where none can
 * answer. Tool specs for the model come from the zod schemas (zod 4's JSON Schema output), or from a
 * tool's own `jsonSchema` when it has one (MCP tools: the server's schema, as given).
 */
import { z } from 'zod';
import type { ModelToolSpec } from '../model/types.js';
import type { AnyTool } from './types.js';

export class ToolRegistry {
  private readonly tools = new Map<string, AnyTool>();

  constructor(tools: readonly AnyTool[] = []) {
    for (const t of tools) this.add(t);
  }

  add(tool: AnyTool): void {
    if (this.tools.has(tool.name)) throw new Error(`tool ${tool.name} is registered twice`);
    this.tools.set(tool.name, tool);
  }

  names(): string[] {
    return [...this.tools.keys()];
  }

  get(name: string): AnyTool | undefined {
    return this.tools.get(name);
  }

  /** The tools an agent may use here, by its configured names. Unknown names are skipped (config validates them). */
  toolset(names: readonly string[], opts: { humanAvailable: boolean }): Map<string, AnyTool> {
    const set = new Map<string, AnyTool>();
    for (const n of names) {
      const t = this.tools.get(n);
      if (!t) continue;
      if (t.needsHuman && !opts.humanAvailable) continue;
      set.set(n, t);
    }
    return set;
  }
}

const specCache = new WeakMap<AnyTool, ModelToolSpec>();

export function toolSpec(tool: AnyTool): ModelToolSpec {
  let spec = specCache.get(tool);
  if (!spec && tool.serverTool) {
    spec = { name: tool.name, description: tool.description, input_schema: { type: 'object' }, server: tool.serverTool };
    specCache.set(tool, spec);
  }
  if (!spec && tool.jsonSchema) {
    spec = { name: tool.name, description: tool.description, input_schema: tool.jsonSchema };
    specCache.set(tool, spec);
  }
  if (!spec) {
    const schema = z.toJSONSchema(tool.input as z.ZodType, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    delete schema.$schema;
    spec = { name: tool.name, description: tool.description, input_schema: schema };
    specCache.set(tool, spec);
  }
  return spec;
}
