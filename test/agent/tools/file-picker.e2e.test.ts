/**
 * ask_file_picker through the whole stack on a chat surface (recording adapter): the workspace's
 * files are the buttons, a tap or a typed path answers, and a typed path that leaves the workspace
 * (.., an absolute path, a symlink out) is never passed on as picked.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Harness, agentYaml, waitFor } from '../../helpers/harness.js';
import type { RecordedRequest } from '../../fakes/anthropic.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function lastResult(req: RecordedRequest): string {
  const last = (req.body as { messages: Array<{ content: unknown }> }).messages.at(-1)!;
  const blocks = Array.isArray(last.content) ? (last.content as Array<{ type: string; content?: unknown }>) : [];
  const r = blocks.find((b) => b.type === 'tool_result');
  return typeof r?.content === 'string' ? r.content : JSON.stringify(r?.content);
}

async function start(): Promise<Harness> {
  const harness = await Harness.start({ yaml: agentYaml('tools: [ask_file_picker]', 'approvers: { console: [local] }') });
  mkdirSync(join(harness.workspace, 'src'), { recursive: true });
  for (const f of ['src/a.ts', 'src/b.ts', 'README.md']) writeFileSync(join(harness.workspace, f), f);
  return harness;
}

test('the files are buttons; a tap picks one', async () => {
  h = await start();
  h.script({ toolUses: [{ name: 'ask_file_picker', input: { prompt: 'Which source file?', pattern: '*.ts' } }] }, { text: 'ok' });
  await h.adapter.send('pick one');
  const card = await waitFor('question card', () => h!.adapter.cards[0]);
  expect(card.card.kind).toBe('question');
  expect(card.card.buttons.map((b) => b.label)).toEqual(['src/a.ts', 'src/b.ts']);
  expect((await h.adapter.click(card, 'src/b.ts')).accepted).toBe(true);
  await waitFor('answer', () => h!.adapter.answers()[0]);
  expect(lastResult(h.modelRequests()[1]!)).toMatch(/^Picked.*: src\/b\.ts$/);
});

test('typed paths: several with multiple; ones outside the workspace or missing are left out and named', async () => {
  h = await start();
  symlinkSync('/etc/passwd', join(h.workspace, 'link-out'));
  h.script({ toolUses: [{ name: 'ask_file_picker', input: { prompt: 'Which files?', multiple: true } }] }, { text: 'ok' });
  await h.adapter.send('pick some');
  const card = await waitFor('question card', () => h!.adapter.cards[0]);
  // The symlink is not offered: only regular files are.
  expect(card.card.buttons.map((b) => b.label)).toEqual(['README.md', 'src/a.ts', 'src/b.ts']);
  await h.adapter.send('src/a.ts, ../../../etc/passwd, /etc/passwd, link-out, nope.txt, README.md');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  const result = lastResult(h.modelRequests()[1]!);
  expect(result).toMatch(/^Picked.*: src\/a\.ts, README\.md\n/);
  expect(result).toContain('left out): ../../../etc/passwd, /etc/passwd, link-out, nope.txt');
  expect(result).not.toContain('root:');
});

test('with nothing to pick from, the model is told so and nobody is asked', async () => {
  h = await start();
  h.script({ toolUses: [{ name: 'ask_file_picker', input: { prompt: 'Which image?', pattern: '*.png' } }] }, { text: 'ok' });
  await h.adapter.send('pick an image');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  expect(h.adapter.cards).toHaveLength(0);
  expect(lastResult(h.modelRequests()[1]!)).toMatch(/No files match "\*\.png"/);
});
