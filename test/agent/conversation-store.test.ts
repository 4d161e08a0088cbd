/** The conversation store's LRU index, over a real keyv (in memory). */
import Keyv from 'keyv';
import { ConversationStore } from '../../agent/conversation-store.js';

const conv = (text: string) => ({ agent: 'a', messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text }] }], state: {}, updatedAt: 0 });

test('a new conversation is in the persisted index at once; a reordering after flush', async () => {
  const kv = new Keyv();
  const store = new ConversationStore(kv, () => 10, 60_000);
  await store.save('k1', conv('one'));
  await store.save('k2', conv('two'));
  // A second process reading the same store sees both right away (no flush needed).
  expect(await new ConversationStore(kv, () => 10).keys('a')).toEqual(['k1', 'k2']);
  await store.save('k1', conv('one again'));
  expect(await new ConversationStore(kv, () => 10).keys('a')).toEqual(['k1', 'k2']); // reorder not yet written
  await store.flush();
  expect(await new ConversationStore(kv, () => 10).keys('a')).toEqual(['k2', 'k1']);
});

test('eviction removes the least recently used transcript, including a pending reordering', async () => {
  const kv = new Keyv();
  const store = new ConversationStore(kv, () => 2, 60_000);
  await store.save('k1', conv('one'));
  await store.save('k2', conv('two'));
  await store.save('k1', conv('one again')); // k2 is now least recent
  await store.save('k3', conv('three'));
  expect(await store.load('k2')).toBeUndefined();
  expect(await store.load('k1')).toBeDefined();
  expect(await new ConversationStore(kv, () => 2).keys('a')).toEqual(['k1', 'k3']);
});

test('a corrupt transcript starts a new conversation instead of failing every turn', async () => {
  const kv = new Keyv();
  await kv.set('c:bad', { agent: 'a', messages: 'not a list' });
  const store = new ConversationStore(kv, () => 10);
  const warnings: string[] = [];
  const original = console.warn;
  console.warn = (m: string) => warnings.push(m);
  try {
    expect(await store.load('bad')).toBeUndefined();
  } finally {
    console.warn = original;
  }
  expect(warnings.join('\n')).toContain('unreadable');
});

test('stored tool results belong to one conversation and go with it (reset, eviction)', async () => {
  const kv = new Keyv();
  const store = new ConversationStore(kv, () => 1, 60_000);
  await store.save('k1', conv('one'));
  const id = await store.putToolResult('k1', 'big output');
  expect(id).toMatch(/^tr_[A-Za-z0-9_-]{16}$/);
  expect(await store.getToolResult('k1', id)).toBe('big output');
  expect(await store.getToolResult('k2', id)).toBeUndefined(); // another conversation: not found
  await store.save('k2', conv('two')); // evicts k1 (one conversation kept)
  expect(await store.getToolResult('k1', id)).toBeUndefined();
  const id2 = await store.putToolResult('k2', 'more');
  await store.reset('k2', 'a');
  expect(await store.getToolResult('k2', id2)).toBeUndefined();
});
