/**
 * analyze_media end to end. The picker runs through the real start path (the terminal chat: runCli
 * with no platform token), the approver picks a companion by typing its number, and the fake model
 * server shows which model id the companion request really named. The model trying to choose the
 * companion itself (an argument, or the reserved _selectedOptionId) gets nowhere.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../../bot/cli/index.js';
import { loadConfig, ConfigError } from '../../../bot/config/index.js';
import { builtinToolNames } from '../../../agent/tools/catalog.js';
import { COMPANION_SYSTEM } from '../../../agent/tools/builtin/analyze-media.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../../fakes/anthropic.js';
import { Harness, waitFor } from '../../helpers/harness.js';

// A real 1x1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n');

type Body = { model: string; system?: string; messages: Array<{ role: string; content: Array<Record<string, unknown>> }> };
const body = (r: RecordedRequest) => r.body as Body;
const isCompanion = (r: RecordedRequest) => body(r).system === COMPANION_SYSTEM;

let model: FakeAnthropic;
let dir: string;
let stdin: PassThrough;
let screen: string;
let exit: Promise<number> | undefined;
const main: FakeReply[] = [];
const companionAnswers: Record<string, string> = {};

function start(agentYaml: string): void {
  writeFileSync(join(dir, 'gatehouse.yaml'), `agents:\n  default:\n    model: claude-sonnet-5-5\n    workspace: ./ws\n${agentYaml}`);
  stdin = new PassThrough();
  const stdout = new PassThrough();
  screen = '';
  stdout.on('data', (d: Buffer) => (screen += d.toString()));
  exit = runCli([], {
    env: { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: model.url, GATEHOUSE_STORE: `sqlite://${join(dir, 'store.sqlite')}` },
    cwd: dir,
    stdin,
    stdout,
    stderr: stdout,
  });
}
const type = (line: string) => stdin.write(line + '\n');
const companionRequests = () => model.requests.filter(isCompanion);
const mainRequests = () => model.requests.filter((r) => !isCompanion(r));
function lastToolResult(): string {
  const last = body(mainRequests().at(-1)!).messages.at(-1)!;
  return JSON.stringify(last.content.filter((b) => b.type === 'tool_result'));
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-media-'));
  mkdirSync(join(dir, 'ws'));
  writeFileSync(join(dir, 'ws', 'cat.png'), PNG);
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  main.length = 0;
  for (const k of Object.keys(companionAnswers)) delete companionAnswers[k];
  model.setHandler((req) => {
    if (isCompanion(req)) return { text: companionAnswers[body(req).model] ?? `(no answer scripted for ${body(req).model})` };
    return main.shift() ?? { text: '(no scripted reply)' };
  });
});

afterEach(async () => {
  stdin?.end();
  if (exit) await exit;
  exit = undefined;
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const TWO_COMPANIONS = `    tools: [analyze_media]
    companions:
      "analyze:image": [claude-haiku-5-5, { id: claude-opus-5-5, label: "Opus (careful)" }]
`;

test('the approver picks the companion on a picker card; the request goes to that model with the image', async () => {
  start(`${TWO_COMPANIONS}    approvers: { console: [local] }\n`);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  companionAnswers['claude-opus-5-5'] = 'A small black square: one pixel.';
  main.push({ toolUses: [{ name: 'analyze_media', input: { path: 'cat.png', prompt: 'What is in this picture?' } }] }, { text: 'It is a single pixel.' });
  type('what is in cat.png?');
  await waitFor('picker card', () => screen.includes('Opus (careful)'));
  expect(screen).toMatch(/\[\d+\] claude-haiku-5-5/);
  expect(screen).not.toContain('Approve once'); // a picker: the choices are the models, plus Deny
  expect(companionRequests()).toHaveLength(0); // nothing is sent before the pick
  const opus = /\[(\d+)\] Opus \(careful\)/.exec(screen)![1]!;
  type(opus);
  await waitFor('answer', () => screen.includes('It is a single pixel.'));
  const calls = companionRequests();
  expect(calls).toHaveLength(1);
  expect(body(calls[0]!).model).toBe('claude-opus-5-5');
  const content = body(calls[0]!).messages[0]!.content;
  expect(content[0]).toEqual({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') } });
  expect(content[1]).toEqual({ type: 'text', text: 'What is in this picture?' });
  expect(lastToolResult()).toContain('A small black square: one pixel.');
  expect(lastToolResult()).toContain('claude-opus-5-5');
  expect(screen).toContain('Chose "claude-opus-5-5"');
});

test('a model id in the arguments is refused, and a smuggled _selectedOptionId is ignored: the approver still picks', async () => {
  start(`${TWO_COMPANIONS}    approvers: { console: [local] }\n`);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  companionAnswers['claude-haiku-5-5'] = 'haiku saw a pixel';
  companionAnswers['claude-opus-5-5'] = 'opus saw a pixel';
  main.push(
    { toolUses: [{ name: 'analyze_media', input: { path: 'cat.png', prompt: 'describe', model: 'claude-opus-5-5' } }] },
    { toolUses: [{ name: 'analyze_media', input: { path: 'cat.png', prompt: 'describe', _selectedOptionId: 'claude-opus-5-5' } }] },
    { text: 'done' },
  );
  type('describe cat.png');
  await waitFor('picker card', () => screen.includes('Opus (careful)'));
  // The first call never reached a card or a companion: its arguments were invalid.
  expect(JSON.stringify(body(mainRequests()[1]!).messages.at(-1))).toMatch(/Invalid arguments for analyze_media.*model/);
  const haiku = /\[(\d+)\] claude-haiku-5-5/.exec(screen)![1]!;
  type(haiku);
  await waitFor('answer', () => screen.includes('agent> done'));
  expect(companionRequests().map((r) => body(r).model)).toEqual(['claude-haiku-5-5']);
  expect(lastToolResult()).toContain('haiku saw a pixel');
});

test('a single companion needs no picker: it runs at once', async () => {
  start(`    tools: [analyze_media]\n    companions: { "analyze:image": [claude-haiku-5-5] }\n`);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  companionAnswers['claude-haiku-5-5'] = 'one pixel';
  main.push({ toolUses: [{ name: 'analyze_media', input: { path: 'cat.png', prompt: 'describe' } }] }, { text: 'finished' });
  type('describe it');
  await waitFor('answer', () => screen.includes('agent> finished'));
  expect(screen).not.toMatch(/\[\d+\] /); // no card at all
  expect(companionRequests().map((r) => body(r).model)).toEqual(['claude-haiku-5-5']);
  expect(lastToolResult()).toContain('one pixel');
});

test('no companion configured: refused, naming the config key; nothing is sent', async () => {
  start(`    tools: [analyze_media]\n    approvers: { console: [local] }\n`);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  main.push({ toolUses: [{ name: 'analyze_media', input: { path: 'cat.png', prompt: 'describe' } }] }, { text: 'cannot' });
  type('describe it');
  await waitFor('answer', () => screen.includes('agent> cannot'));
  expect(lastToolResult()).toContain('agents.default.companions[\\"analyze:image\\"]');
  expect(lastToolResult()).toContain('"is_error":true');
  expect(companionRequests()).toHaveLength(0);
});

test('several companions but no approver bound: declined, saying why and what fixes it; nothing is sent', async () => {
  start(TWO_COMPANIONS);
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  main.push({ toolUses: [{ name: 'analyze_media', input: { path: 'cat.png', prompt: 'describe' } }] }, { text: 'declined' });
  type('describe it');
  await waitFor('answer', () => screen.includes('agent> declined'));
  const result = lastToolResult();
  expect(result).toContain('no approver is bound for console');
  expect(result).toContain('agents.default.approvers.console');
  expect(result).toContain('offers choices');
  expect(companionRequests()).toHaveLength(0);
});

describe('through the adapter seam', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  test('an image a user attached is reachable as attachment 1; a PDF in the workspace goes as a document', async () => {
    const audit: Array<Record<string, unknown>> = [];
    h = await Harness.start({
      log: (_level, _msg, fields) => {
        if (fields) audit.push(fields as Record<string, unknown>);
      },
      yaml: `agents:
  default:
    model: claude-sonnet-5-5
    workspace: "{{workspace}}"
    tools: [analyze_media]
    companions: { "analyze:image": [claude-haiku-5-5], "analyze:file": [{ id: claude-opus-5-5, label: Opus }] }
`,
    });
    h.fake.setHandler((req) => {
      if (isCompanion(req)) return { text: `${body(req).model} answered`, usage: { input_tokens: 100_000, output_tokens: 10 } };
      return (h.mainQueue.shift() as FakeReply) ?? { text: '(none)' };
    });
    writeFileSync(join(h.workspace, 'report.pdf'), PDF);
    h.script(
      {
        toolUses: [
          { name: 'analyze_media', input: { attachment: 1, prompt: 'what is it?' } },
          { name: 'analyze_media', input: { path: 'report.pdf', prompt: 'summarize' } },
        ],
      },
      { text: 'both done' },
    );
    await h.adapter.send('look at this', { attachments: [{ kind: 'image', name: 'photo.png', mimeType: 'image/png', data: PNG.toString('base64') }] });
    await waitFor('answer', () => h.adapter.answers().includes('both done'));
    const calls = h.fake.requests.filter(isCompanion);
    const image = calls.find((r) => body(r).model === 'claude-haiku-5-5')!;
    expect(image.body).toBeDefined();
    expect(body(image).messages[0]!.content[0]).toMatchObject({ type: 'image', source: { data: PNG.toString('base64') } });
    const pdf = calls.find((r) => body(r).model === 'claude-opus-5-5')!;
    expect(body(pdf).messages[0]!.content[0]).toEqual({
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: PDF.toString('base64') },
    });
    // The companions' tokens count for the run (cost and audit), not only the main model's.
    const finished = await waitFor('run_finished', () => audit.find((f) => f.event === 'run_finished'));
    expect(finished.inputTokens as number).toBeGreaterThanOrEqual(200_000);
  });

  test('two pickers in one turn get no "Approve all" card: each needs its own pick', async () => {
    h = await Harness.start({
      yaml: `agents:\n  default:\n    model: claude-sonnet-5-5\n    workspace: "{{workspace}}"\n    tools: [analyze_media]\n    approvers: { console: [local] }\n    companions: { "analyze:image": [claude-haiku-5-5, claude-opus-5-5] }\n`,
    });
    h.fake.setHandler((req) => {
      if (isCompanion(req)) return { text: `${body(req).model} answered` };
      return (h.mainQueue.shift() as FakeReply) ?? { text: '(none)' };
    });
    writeFileSync(join(h.workspace, 'a.png'), PNG);
    h.script(
      {
        toolUses: [
          { name: 'analyze_media', input: { path: 'a.png', prompt: 'one' } },
          { name: 'analyze_media', input: { path: 'a.png', prompt: 'two' } },
        ],
      },
      { text: 'both' },
    );
    await h.adapter.send('analyze twice');
    await waitFor('two cards', () => h.adapter.cards.length === 2);
    expect(h.adapter.cards.map((c) => c.card.kind)).toEqual(['picker', 'picker']);
    await h.adapter.click(h.adapter.cards[0]!, 'claude-opus-5-5');
    await h.adapter.click(h.adapter.cards[1]!, 'claude-haiku-5-5');
    await waitFor('answer', () => h.adapter.answers().includes('both'));
    expect(h.adapter.cards).toHaveLength(2);
    const asked = h.fake.requests.filter(isCompanion).map((r) => `${body(r).model}:${JSON.stringify(body(r).messages[0]!.content[1])}`);
    expect(asked.sort()).toEqual(['claude-haiku-5-5:{"type":"text","text":"two"}', 'claude-opus-5-5:{"type":"text","text":"one"}']);
  });

  test('a path outside the workspace (by .. or through a symlink) is refused; nothing of it reaches a model', async () => {
    h = await Harness.start({
      yaml: `agents:\n  default:\n    model: claude-sonnet-5-5\n    workspace: "{{workspace}}"\n    tools: [analyze_media]\n    companions: { "analyze:file": [claude-haiku-5-5] }\n`,
    });
    writeFileSync(join(h.dir, 'secret.txt'), 'TOPSECRET-VALUE\n');
    symlinkSync(join(h.dir, 'secret.txt'), join(h.workspace, 'link.txt'));
    h.script(
      {
        toolUses: [
          { name: 'analyze_media', input: { path: '../secret.txt', prompt: 'read it' } },
          { name: 'analyze_media', input: { path: 'link.txt', prompt: 'read it' } },
        ],
      },
      { text: 'refused' },
    );
    await h.adapter.send('read the secret');
    await waitFor('answer', () => h.adapter.answers().includes('refused'));
    const results = body(h.modelRequests()[1]!).messages.at(-1)!.content;
    expect(results.map((b) => b.is_error)).toEqual([true, true]);
    expect(JSON.stringify(h.fake.requests.map((r) => r.body))).not.toContain('TOPSECRET');
    expect(h.fake.requests.filter(isCompanion)).toHaveLength(0);
  });

  test('a file that is neither image, PDF nor text is refused before any model sees it', async () => {
    h = await Harness.start({
      yaml: `agents:\n  default:\n    model: claude-sonnet-5-5\n    workspace: "{{workspace}}"\n    tools: [analyze_media]\n    companions: { "analyze:file": [claude-haiku-5-5] }\n`,
    });
    writeFileSync(join(h.workspace, 'blob.bin'), Buffer.from([0, 1, 2, 255, 254, 0, 7]));
    h.script({ toolUses: [{ name: 'analyze_media', input: { path: 'blob.bin', prompt: 'what?' } }] }, { text: 'no' });
    await h.adapter.send('analyze blob.bin');
    await waitFor('answer', () => h.adapter.answers().includes('no'));
    expect(JSON.stringify(body(h.modelRequests()[1]!).messages.at(-1))).toContain('neither an image');
    expect(h.fake.requests.filter(isCompanion)).toHaveLength(0);
  });
});

test('companions config: unknown kinds, empty lists and duplicates are errors at their key path', () => {
  const d = mkdtempSync(join(tmpdir(), 'gatehouse-media-config-'));
  try {
    writeFileSync(
      join(d, 'gatehouse.yaml'),
      `agents:\n  ops:\n    model: claude-sonnet-5-5\n    companions:\n      "analyze:video": [x]\n      "analyze:image": [a, a]\n      "analyze:file": []\n`,
    );
    let err: unknown;
    try {
      loadConfig({ env: { ANTHROPIC_API_KEY: 'k' }, cwd: d, knownTools: builtinToolNames() });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const text = (err as Error).message;
    expect(text).toContain('agents.ops.companions["analyze:video"]: unknown key');
    expect(text).toContain('analyze:image');
    expect(text).toContain('agents.ops.companions["analyze:image"][1]: model "a" is listed twice');
    expect(text).toContain('agents.ops.companions["analyze:file"]');
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});
