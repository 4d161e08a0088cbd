/**
 * view_memory (read-only) and manage_memory (low-risk): the agent's notes that outlive a conversation
 * (agent/memory.ts). manage_memory changes only the agent's own notes, so it is low-risk; its propose
 * half says exactly what will be added, replaced or removed, for the card of an agent configured
 * read-only. Both are built with the store injected; without one (a registry built only to list
 * names) they refuse with a clear error.
 */
import { z } from 'zod';
import {
  MAX_ENTRY_CHARS,
  MEMORY_SCOPES,
  MemoryError,
  describeScope,
  renderEntries,
  scopeOfId,
  type MemoryChange,
  type MemoryScope,
  type MemoryStore,
} from '../../memory.js';
import type { Tool, ToolContext } from '../types.js';
import { ToolError } from '../types.js';

export const ViewMemoryInput = z.strictObject({});
export type ViewMemoryInput = z.infer<typeof ViewMemoryInput>;

export const ManageMemoryInput = z.strictObject({
  action: z.enum(['add', 'replace', 'remove']).describe('add a new entry, replace the text of an entry, or remove an entry.'),
  text: z.string().max(MAX_ENTRY_CHARS).optional().describe(`For add and replace: the note, one short self-contained fact (at most ${MAX_ENTRY_CHARS} characters).`),
  id: z.string().max(20).optional().describe('For replace and remove: the entry id shown by view_memory (a1, c2, ...).'),
  scope: z
    .enum(MEMORY_SCOPES)
    .optional()
    .describe('For add: "conversation" (default) keeps it for this conversation only; "agent" shows it in every conversation you have.'),
});
export type ManageMemoryInput = z.infer<typeof ManageMemoryInput>;

function need(memory: MemoryStore | undefined): MemoryStore {
  if (!memory) throw new ToolError('memory is not available here (no store was given to the tool).');
  return memory;
}

/** Without a scope, an add goes to this conversation's list, or the agent's when that is the only one enabled. */
function defaultScope(memory: MemoryStore | undefined, agentName: string): MemoryScope {
  const enabled = memory?.enabledScopes(agentName) ?? [];
  return enabled.includes('conversation') || enabled.length === 0 ? 'conversation' : enabled[0]!;
}

function toChange(input: ManageMemoryInput, scope: MemoryScope = 'conversation'): MemoryChange {
  if (input.action === 'add') {
    if (input.text === undefined) throw new ToolError('add needs text.');
    if (input.id !== undefined) throw new ToolError('add takes no id (ids are given out); use replace to change an entry.');
    return { action: 'add', scope: input.scope ?? scope, text: input.text };
  }
  if (input.id === undefined) throw new ToolError(`${input.action} needs the id of an entry (view_memory lists them).`);
  if (input.action === 'replace') {
    if (input.text === undefined) throw new ToolError('replace needs the new text.');
    return { action: 'replace', id: input.id, text: input.text };
  }
  return { action: 'remove', id: input.id };
}

function oneLine(s: string, max = 100): string {
  const t = s.trim().replace(/\s*\n\s*/g, ' ');
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** view_memory: read-only. */
export function viewMemoryTool(memory?: MemoryStore): Tool<ViewMemoryInput> {
  return {
    name: 'view_memory',
    description: 'Show your saved memory: agent-wide notes and this conversation\'s notes, with their ids.',
    input: ViewMemoryInput,
    tier: 'read-only',
    async execute(_input, ctx) {
      const store = need(memory);
      const parts: string[] = [];
      for (const scope of store.enabledScopes(ctx.agentName)) {
        const entries = await store.read(ctx.agentName, scope, ctx.conversationKey);
        parts.push(`${describeScope(scope)} (${store.usage(ctx.agentName, entries)}):${entries.length === 0 ? ' empty' : `\n${renderEntries(entries)}`}`);
      }
      return { content: parts.length === 0 ? 'Memory is turned off for this agent.' : parts.join('\n\n') };
    },
  };
}

/** manage_memory: low-risk (see the module comment). */
export function manageMemoryTool(memory?: MemoryStore): Tool<ManageMemoryInput> {
  const describe = (input: ManageMemoryInput, agentName: string): string => {
    const change = toChange(input, defaultScope(memory, agentName));
    if (change.action === 'add') return `manage_memory add to ${describeScope(change.scope)}: ${oneLine(change.text)}`;
    if (change.action === 'replace') return `manage_memory replace ${change.id} with: ${oneLine(change.text)}`;
    return `manage_memory remove ${change.id}`;
  };
  return {
    name: 'manage_memory',
    description:
      'Keep notes that last beyond this conversation and across restarts: add an entry, replace an entry\'s text, or ' +
      'remove an entry. Your notes are shown to you at the start of every turn. Keep them short and current.',
    input: ManageMemoryInput,
    tier: 'low-risk',
    async propose(input, ctx: ToolContext) {
      const summary = describe(input, ctx.agentName);
      let preview: string | undefined;
      const change = toChange(input);
      if (change.action !== 'add' && memory) {
        const scope = scopeOfId(change.id);
        const old = scope ? (await memory.read(ctx.agentName, scope, ctx.conversationKey)).find((e) => e.id === change.id) : undefined;
        if (old) preview = change.action === 'remove' ? `- ${old.text}` : `- ${old.text}\n+ ${change.text.trim()}`;
      }
      return { summary, ...(preview !== undefined ? { preview } : {}) };
    },
    async execute(input, ctx) {
      const store = need(memory);
      try {
        const r = await store.change(ctx.agentName, ctx.conversationKey, toChange(input, defaultScope(store, ctx.agentName)));
        const what =
          input.action === 'add' ? `Added ${r.entry?.id}` : input.action === 'replace' ? `Replaced ${r.entry?.id}` : `Removed ${r.removed?.id}`;
        return { content: `${what} (${describeScope(r.scope)}, now ${r.entries.length} entr${r.entries.length === 1 ? 'y' : 'ies'}).` };
      } catch (err) {
        if (err instanceof MemoryError) throw new ToolError(err.message);
        throw err;
      }
    },
  };
}
