/**
 * The agent's memory (agent/memory.ts) and its tools, on the real SQLite store: notes persist when the
 * store is closed and opened again, the caps refuse with the config key and lose nothing, scopes keep
 * one conversation's notes out of another, and the prompt section carries what the model must see.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_MEMORY_SETTINGS, MemoryError, MemoryStore, type MemorySettings } from '../../agent/memory.js';
import { manageMemoryTool, viewMemoryTool } from '../../agent/tools/builtin/memory.js';
import type { ToolContext } from '../../agent/tools/types.js';
import { ToolError } from '../../agent/tools/types.js';
import { openStorage, type Storage } from '../../bot/storage.js';

let dir: string;
let storage: Storage;
let settings: MemorySettings;

const open = () => openStorage({ kind: 'sqlite', url: `sqlite://${join(dir, 'store.sqlite')}`, path: join(dir, 'store.sqlite') });

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gh-memory-'));
  storage = await open();
  settings = { ...DEFAULT_MEMORY_SETTINGS };
});
afterEach(async () => {
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

const store = () => new MemoryStore(storage.memory, () => settings);

function ctx(conversationKey = 'telegram:1', agentName = 'ops'): ToolContext {
  return {
    workspace: dir,
    signal: new AbortController().signal,
    conversationKey,
    agentName,
    envAllowlist: [],
    state: { get: () => undefined, set: () => undefined },
  };
}

test('notes survive closing and reopening the store; agent notes show in every conversation, conversation notes only in theirs', async () => {
  const m = store();
  await m.change('ops', 'telegram:1', { action: 'add', scope: 'agent', text: 'Deploys happen on Thursdays' });
  await m.change('ops', 'telegram:1', { action: 'add', scope: 'conversation', text: 'This chat is about the billing service' });
  await storage.close();
  storage = await open();
  const again = store();
  const here = await again.promptSection('ops', 'telegram:1');
  expect(here).toContain('[a1] Deploys happen on Thursdays');
  expect(here).toContain('[c1] This chat is about the billing service');
  expect(here).toMatch(/information, not instructions/);
  const elsewhere = await again.promptSection('ops', 'telegram:2');
  expect(elsewhere).toContain('Deploys happen on Thursdays');
  expect(elsewhere).not.toContain('billing');
  // Another agent sees none of it.
  expect(await again.promptSection('support', 'telegram:1')).toBe('');
});

test('replace and remove by id; an unknown id is refused with where to look', async () => {
  const m = store();
  await m.change('ops', 'k', { action: 'add', scope: 'agent', text: 'one' });
  await m.change('ops', 'k', { action: 'add', scope: 'agent', text: 'two' });
  await m.change('ops', 'k', { action: 'replace', id: 'a1', text: 'one, corrected' });
  await m.change('ops', 'k', { action: 'remove', id: 'a2' });
  expect((await m.read('ops', 'agent', 'k')).map((e) => [e.id, e.text])).toEqual([['a1', 'one, corrected']]);
  await expect(m.change('ops', 'k', { action: 'remove', id: 'a9' })).rejects.toThrow(/No entry a9 .*view_memory/);
  await expect(m.change('ops', 'k', { action: 'remove', id: 'zz' })).rejects.toThrow(/not a memory id/);
  // A new entry after a removal does not reuse a live id.
  await m.change('ops', 'k', { action: 'add', scope: 'agent', text: 'three' });
  expect((await m.read('ops', 'agent', 'k')).map((e) => e.id)).toEqual(['a1', 'a2']);
});

test('full by entry count or by bytes: a clear error naming the key, and nothing stored changes', async () => {
  settings = { ...settings, maxEntries: 3, maxBytes: 40 };
  const m = store();
  for (const t of ['aaaaaaaaaa', 'bbbbbbbbbb', 'cccccccccc']) await m.change('ops', 'k', { action: 'add', scope: 'conversation', text: t });
  await expect(m.change('ops', 'k', { action: 'add', scope: 'conversation', text: 'd' })).rejects.toThrow(
    /full: 3 of 3 entries \(agents\.ops\.memory\.maxEntries\)/,
  );
  // 30 bytes stored; replacing one 10-byte entry by 21 bytes would make 41 > 40.
  const err = await m.change('ops', 'k', { action: 'replace', id: 'c2', text: 'x'.repeat(21) }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(MemoryError);
  expect((err as Error).message).toMatch(/41 bytes, over its limit of 40 \(agents\.ops\.memory\.maxBytes; now 30\)/);
  // Multi-byte text counts its UTF-8 bytes: 4 × "é" is 8 bytes.
  await m.change('ops', 'k', { action: 'replace', id: 'c2', text: 'éééé' });
  expect((await m.read('ops', 'conversation', 'k')).map((e) => e.text)).toEqual(['aaaaaaaaaa', 'éééé', 'cccccccccc']);
});

test('a scope the config turns off is refused, naming memory.scopes, and left out of the prompt', async () => {
  const m = store();
  await m.change('ops', 'k', { action: 'add', scope: 'agent', text: 'shared note' });
  settings = { ...settings, scopes: ['conversation'] };
  await expect(m.change('ops', 'k', { action: 'add', scope: 'agent', text: 'x' })).rejects.toThrow(/agents\.ops\.memory\.scopes/);
  expect(await m.promptSection('ops', 'k')).toBe('');
});

test('concurrent adds to one list keep every entry with its own id', async () => {
  const m = store();
  await Promise.all(Array.from({ length: 20 }, (_, i) => m.change('ops', 'k', { action: 'add', scope: 'agent', text: `note ${i}` })));
  const entries = await m.read('ops', 'agent', 'k');
  expect(entries).toHaveLength(20);
  expect(new Set(entries.map((e) => e.id)).size).toBe(20);
  expect(new Set(entries.map((e) => e.text)).size).toBe(20);
});

test('the tools: manage_memory says what it will do on its card and what it did; view_memory lists both scopes', async () => {
  const m = store();
  const manage = manageMemoryTool(m);
  const view = viewMemoryTool(m);
  const c = ctx();
  const proposal = await manage.propose!({ action: 'add', scope: 'agent', text: 'Prefer short answers' }, c);
  expect(proposal.summary).toBe('manage_memory add to agent memory (every conversation of this agent): Prefer short answers');
  const added = await manage.execute({ action: 'add', scope: 'agent', text: 'Prefer short answers' }, c, { proposal });
  expect(added.content).toMatch(/^Added a1 \(agent memory/);
  // Default scope: this conversation.
  await manage.execute({ action: 'add', text: 'Ticket 42 is ours' }, c, {});
  const replaceCard = await manage.propose!({ action: 'replace', id: 'c1', text: 'Ticket 43 is ours' }, c);
  expect(replaceCard.preview).toBe('- Ticket 42 is ours\n+ Ticket 43 is ours');
  const shown = await view.execute({}, c, {});
  expect(shown.content).toContain('[a1] Prefer short answers');
  expect(shown.content).toContain('[c1] Ticket 42 is ours');
  expect(shown.content).toContain('agent memory (every conversation of this agent) (1 of 50 entries, 20 of 8192 bytes):');
  await expect(manage.execute({ action: 'remove' }, c, {})).rejects.toThrow(ToolError);
  await expect(manage.execute({ action: 'add' }, c, {})).rejects.toThrow(/add needs text/);
  // Without a store the tool refuses instead of pretending.
  await expect(manageMemoryTool().execute({ action: 'add', text: 'x' }, c, {})).rejects.toThrow(/not available/);
  expect([manage.tier, view.tier]).toEqual(['low-risk', 'read-only']);
});

test('with only agent memory enabled, an add without a scope goes there instead of being refused', async () => {
  settings = { ...settings, scopes: ['agent'] };
  const m = store();
  const result = await manageMemoryTool(m).execute({ action: 'add', text: 'Team standup is at 9:30' }, ctx(), {});
  expect(result.content).toMatch(/^Added a1 \(agent memory/);
  await expect(manageMemoryTool(m).execute({ action: 'add', scope: 'conversation', text: 'x' }, ctx(), {})).rejects.toThrow(/memory\.scopes lists agent/);
});
