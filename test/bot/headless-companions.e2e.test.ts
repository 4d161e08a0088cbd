/**
 * `gatehouse run --with-image MODEL` as a real process against the fake Anthropic server: the flag
 * binds the image companion for the run over the agent's config (here: none configured), and
 * --with-audio / --with-video are refused loudly instead of being ignored; and --events text as
 * text_start / text_chunk lines.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMPANION_SYSTEM } from '../../agent/tools/builtin/analyze-media.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { runGatehouse } from '../helpers/process.js';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
type Body = { model: string; system?: string; messages: Array<{ role: string; content: unknown }> };
const body = (r: RecordedRequest) => r.body as Body;
const isCompanion = (r: RecordedRequest) => body(r).system === COMPANION_SYSTEM;

let fake: FakeAnthropic;
let dir: string;
const main: FakeReply[] = [];

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  main.length = 0;
  fake.setHandler((req) => (isCompanion(req) ? { text: `companion ${body(req).model} saw one pixel` } : (main.shift() ?? { text: '(no scripted reply)' })));
  dir = mkdtempSync(join(tmpdir(), 'gh-run-media-'));
  chmodSync(dir, 0o711);
  mkdirSync(join(dir, 'ws'));
  writeFileSync(join(dir, 'ws', 'cat.png'), PNG);
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [analyze_media]\n    tier: read-only\n    workspace: "${join(dir, 'ws')}"\n`,
  );
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = (args: string[]) => runGatehouse(args, dir, fake.url);

const lastToolResult = (): string => JSON.stringify(body(fake.requests.filter((r) => !isCompanion(r)).at(-1)!).messages.at(-1)!.content);

test('--with-image binds the companion for the run: the image goes to that model', async () => {
  main.push({ toolUses: [{ name: 'analyze_media', input: { path: 'cat.png', prompt: 'what is it?' } }] }, { text: 'a pixel' });
  const r = await run(['run', '--with-image', 'claude-haiku-5-5', '--json', '--', 'look at cat.png']);
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, answer: 'a pixel', declined: [] });
  const companions = fake.requests.filter(isCompanion);
  expect(companions.map((c) => body(c).model)).toEqual(['claude-haiku-5-5']);
  expect(lastToolResult()).toContain('companion claude-haiku-5-5 saw one pixel');
}, 180_000);

test('without the flag (and no companion configured) analyze_media is refused, naming the config key and the flag', async () => {
  main.push({ toolUses: [{ name: 'analyze_media', input: { path: 'cat.png', prompt: 'what is it?' } }] }, { text: 'could not' });
  const r = await run(['run', '--json', '--', 'look at cat.png']);
  expect(r.code).toBe(0);
  expect(fake.requests.filter(isCompanion)).toHaveLength(0);
  expect(lastToolResult()).toContain('agents.default.companions[\\"analyze:image\\"]');
  expect(lastToolResult()).toContain('--with-image MODEL');
}, 180_000);

test('--with-audio and --with-video are usage errors (no such companion kind), nothing is sent', async () => {
  for (const flag of ['--with-audio', '--with-video']) {
    const r = await run(['run', flag, 'some-model', 'hi']);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: '' });
    expect(r.stderr).toContain(`${flag} is not supported yet`);
  }
  expect(fake.requests).toHaveLength(0);
}, 180_000);

test('--events text streams the reply as text_start then text_chunk lines whose deltas join to the answer', async () => {
  main.push({ text: 'streamed answer, in several small pieces' });
  const r = await run(['run', '--events', 'text', '--', 'hi']);
  expect(r.code).toBe(0);
  expect(r.stdout).toBe('streamed answer, in several small pieces\n');
  const events = r.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { type: string; delta?: string; segment?: number });
  expect(events[0]).toMatchObject({ type: 'text_start', segment: 1 });
  const chunks = events.filter((e) => e.type === 'text_chunk');
  expect(chunks.length).toBeGreaterThan(1); // the fake streams 4 code points a delta
  expect(chunks.map((e) => e.delta).join('')).toBe('streamed answer, in several small pieces');
  expect(events.filter((e) => e.type === 'text_start')).toHaveLength(1);
  expect(events.some((e) => e.type === 'text')).toBe(false);
}, 180_000);

test('--no-stream keeps the batch path: the model request is not streamed and no text deltas are written', async () => {
  main.push({ text: 'whole answer' });
  const r = await run(['run', '--no-stream', '--events', 'text', '--', 'hi']);
  expect(r.code).toBe(0);
  expect(r.stdout).toBe('whole answer\n');
  expect(fake.requests.map((q) => (q.body as { stream?: boolean }).stream)).toEqual([false]);
  expect(r.stderr).not.toContain('text_chunk');
}, 180_000);
