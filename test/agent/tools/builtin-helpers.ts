// Shared test plumbing for the built-in tools: real temp directories and a real ToolContext.
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ConversationState, Prepared, Proposal, Tool, ToolContext, ToolResult } from '../../../agent/tools/types.js';

export async function tempDir(prefix = 'gh-tools-'): Promise<string> {
  return realpath(await mkdtemp(path.join(os.tmpdir(), prefix)));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

export function memoryState(): ConversationState & { data: Map<string, unknown> } {
  const data = new Map<string, unknown>();
  return {
    data,
    get<T>(name: string): T | undefined {
      // Round-trip through JSON, as the transcript store does.
      const v = data.get(name);
      return v === undefined ? undefined : (JSON.parse(JSON.stringify(v)) as T);
    },
    set(name: string, value: unknown): void {
      data.set(name, JSON.parse(JSON.stringify(value)));
    },
  };
}

export function makeCtx(workspace: string, opts: { signal?: AbortSignal; state?: ConversationState } = {}): ToolContext {
  return {
    workspace,
    signal: opts.signal ?? new AbortController().signal,
    conversationKey: 'console:test',
    agentName: 'default',
    envAllowlist: [],
    state: opts.state ?? memoryState(),
  };
}

/** What the executor does: validate the raw input with the tool's schema, then run it. */
export async function run<I>(tool: Tool<I>, raw: unknown, ctx: ToolContext, prepared: Prepared = {}): Promise<string> {
  const input = tool.input.parse(raw);
  return textOf(await tool.execute(input, ctx, prepared));
}

export async function propose<I>(tool: Tool<I>, raw: unknown, ctx: ToolContext): Promise<Proposal> {
  if (!tool.propose) throw new Error(`${tool.name} has no propose`);
  return tool.propose(tool.input.parse(raw), ctx);
}

/** propose, then execute with that proposal (what happens after an approval). */
export async function proposeAndRun<I>(tool: Tool<I>, raw: unknown, ctx: ToolContext): Promise<{ proposal: Proposal; output: string }> {
  const proposal = await propose(tool, raw, ctx);
  const output = textOf(await tool.execute(tool.input.parse(raw), ctx, { proposal }));
  return { proposal, output };
}

export function textOf(result: ToolResult): string {
  if (typeof result.content === 'string') return result.content;
  return result.content.map((b) => (b.type === 'text' ? b.text : '[image]')).join('');
}
