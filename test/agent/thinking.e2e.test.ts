/**
 * Extended thinking (`agents.<n>.thinking`) through a whole Gatehouse (the real SDK client against the
 * fake Messages API, which signs thinking and refuses what the API refuses): a tool-use turn hands its
 * signed thinking back, a restart keeps it, and a chat surface never shows the model's reasoning.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentYaml, type Harness, harnessOn, waitFor } from '../helpers/harness.js';

type Body = { thinking?: unknown; messages: Array<{ role: string; content: Array<{ type: string; thinking?: string; signature?: string }> }> };
const REASONING = 'The user wants notes.txt read; read_file is the tool for that.';

let h: Harness;
afterEach(async () => {
  await h?.close();
});

test('a tool-use turn sends its signed thinking back; a chat sees the answer and tool progress, never the thinking; a restart keeps it', async () => {
  h = await harnessOn('sqlite').start({ yaml: agentYaml('tools: [read_file]', 'tier: read-only', 'maxTokens: 4096', 'thinking: { budgetTokens: 2048 }') });
  mkdirSync(h.workspace, { recursive: true });
  writeFileSync(join(h.workspace, 'notes.txt'), 'the word is lantern');
  h.script(
    { thinking: REASONING, toolUses: [{ name: 'read_file', input: { path: 'notes.txt' } }] },
    { thinking: 'It says lantern.', text: 'The word is lantern.' },
  );
  await h.adapter.send('what is the word in notes.txt?');
  await waitFor('the answer', () => h.adapter.answers()[0]);
  expect(h.adapter.answers()).toEqual(['The word is lantern.']);

  const [first, second] = h.modelRequests().map((r) => r.body as Body);
  expect(first!.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  // The continuation starts the assistant message with the thinking block, signature intact (the
  // fake refuses it otherwise: the run would have failed).
  const assistant = second!.messages.at(-2)!;
  expect(assistant.content[0]).toMatchObject({ type: 'thinking', thinking: REASONING });
  expect(assistant.content[0]!.signature).toMatch(/^[A-Za-z0-9+/=]{40,}$/);

  // What the chat got: no event carries the reasoning (the recording adapter streams text).
  const shown = JSON.stringify(h.adapter.events);
  expect(shown).not.toContain('read_file is the tool');
  expect(shown).not.toContain('It says lantern');
  expect(h.adapter.eventsOf('console:main', 'thinking')).toEqual([]);

  // The transcript keeps it across a restart: the next turn's request hands it back unchanged.
  await h.restart();
  h.script({ thinking: 'Nothing to look up.', text: 'You are welcome.' });
  await h.adapter.send('thanks');
  await waitFor('the second answer', () => h.adapter.answers()[0]);
  const third = h.modelRequests().at(-1)!.body as Body;
  expect(JSON.stringify(third.messages)).toContain(JSON.stringify(REASONING));
  expect(readFileSync(join(h.workspace, 'notes.txt'), 'utf8')).toBe('the word is lantern');
});

test('thinking switched off for an agent: earlier thinking blocks are not sent, and the reply has none', async () => {
  h = await harnessOn('sqlite').start({ yaml: agentYaml('tools: []', 'maxTokens: 4096', 'thinking: { budgetTokens: 1024 }') });
  h.script({ thinking: 'first thoughts', text: 'one' });
  await h.adapter.send('hello');
  await waitFor('the answer', () => h.adapter.answers()[0]);
  // The same store, the agent without thinking now.
  writeYaml(h, agentYaml('tools: []', 'maxTokens: 4096'));
  await h.restart();
  h.script({ thinking: 'not sent: thinking is off', text: 'two' });
  await h.adapter.send('again');
  await waitFor('the second answer', () => h.adapter.answers()[0]);
  const body = h.modelRequests().at(-1)!.body as Body;
  expect(body.thinking).toBeUndefined();
  expect(JSON.stringify(body.messages)).not.toContain('"thinking"');
  expect(JSON.stringify(body.messages)).toContain('one');
  expect(h.adapter.answers()).toEqual(['two']);
});

function writeYaml(harness: Harness, yaml: string): void {
  writeFileSync(join(harness.dir, 'gatehouse.yaml'), yaml.replaceAll('{{workspace}}', harness.workspace));
}
