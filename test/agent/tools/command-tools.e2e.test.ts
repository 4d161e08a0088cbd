/**
 * Issue 23, custom `command` tools end to end: a real Gatehouse (config from YAML, SQLite store, the
 * real Anthropic SDK client) against the fake model, on the recording chat surface. The tool runs in
 * the bubblewrap box like execute_command. Attacks: shell syntax in a parameter stays one argv element
 * and runs nothing; the gate cases (above tier with and without an approver, toolPolicy deny).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builtinToolNames } from '../../../agent/tools/catalog.js';
import { ConfigError, loadConfig } from '../../../bot/config/index.js';
import { Harness, waitFor } from '../../helpers/harness.js';
import type { RecordedRequest } from '../../fakes/anthropic.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const TOOLS = `
    commandTools:
      make_file:
        description: Create an empty file in the workspace.
        input: { type: object, properties: { name: { type: string } }, required: [name] }
        argv: [/usr/bin/touch, "{name}"]
        tier: low-risk
        timeoutMs: 30000
      say:
        description: Print the words given.
        input: { type: object, properties: { words: { type: string }, count: { type: integer } }, required: [words] }
        argv: [/usr/bin/printf, "%s\\\\n", "{words}"]
        tier: read-only
      count_to:
        description: Print the numbers 1..n.
        input: { type: object, properties: { n: { type: integer } }, required: [n] }
        argv: [/usr/bin/seq, "1", "{n}"]
        tier: read-only
`;

function yaml(extra: string): string {
  return `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file]
    tier: read-only
    workspace: "{{workspace}}"
    approvalTimeoutMs: 60000
${extra}${TOOLS}`;
}

function lastResults(h: Harness): Array<{ content: unknown; is_error?: boolean }> {
  const req = h.modelRequests().at(-1) as RecordedRequest;
  const msgs = (req.body as { messages: Array<{ content: Array<{ type: string }> | string }> }).messages;
  const last = msgs.at(-1)!.content;
  if (typeof last === 'string') return [];
  return last.filter((b) => b.type === 'tool_result') as unknown as Array<{ content: unknown; is_error?: boolean }>;
}

const text = (c: unknown): string => (typeof c === 'string' ? c : JSON.stringify(c));

test('the model sees the declared schema; a read-only call runs in the box without a card and shell syntax stays one argument', async () => {
  h = await Harness.start({ yaml: yaml('    approvers: { console: [local] }\n') });
  h.script({ toolUses: [{ name: 'say', input: { words: '; touch pwned1 $(touch pwned2) `touch pwned3`' } }] }, { text: 'said' });
  await h.adapter.send('say it');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  const offered = (h.modelRequests()[0]!.body as { tools: Array<{ name: string; input_schema: unknown }> }).tools;
  const say = offered.find((t) => t.name === 'say');
  expect(say?.input_schema).toMatchObject({ type: 'object', required: ['words'], additionalProperties: false });
  expect(h.adapter.cards).toHaveLength(0);
  const [r] = lastResults(h);
  expect(r?.is_error).toBeFalsy();
  expect(text(r?.content)).toContain('exit code: 0');
  expect(text(r?.content)).toContain('; touch pwned1 $(touch pwned2) `touch pwned3`');
  for (const f of ['pwned1', 'pwned2', 'pwned3']) expect(existsSync(join(h.workspace, f))).toBe(false);
});

test('above the tier with an approver: the card shows the exact argv; the value becomes ONE file name, nothing else runs', async () => {
  h = await Harness.start({ yaml: yaml('    approvers: { console: [local] }\n') });
  const evil = '$(touch pwned); rm -rf x';
  writeFileSync(join(h.workspace, 'x'), 'keep');
  h.script({ toolUses: [{ name: 'make_file', input: { name: evil } }] }, { text: 'made' });
  await h.adapter.send('make it');
  const card = await waitFor('card', () => h!.adapter.cards[0]);
  expect(JSON.stringify(card.card)).toContain('make_file');
  expect(existsSync(join(h.workspace, evil))).toBe(false);
  await h.adapter.click(card, 'Approve once', { user: 'local' });
  await waitFor('answer', () => h!.adapter.answers()[0]);
  expect(existsSync(join(h.workspace, evil))).toBe(true);
  expect(existsSync(join(h.workspace, 'pwned'))).toBe(false);
  expect(existsSync(join(h.workspace, 'x'))).toBe(true);
});

test('above the tier without an approver: declined, nothing runs', async () => {
  h = await Harness.start({ yaml: yaml('    approvers: {}\n') });
  h.script({ toolUses: [{ name: 'make_file', input: { name: 'made' } }] }, { text: 'ok' });
  await h.adapter.send('make it');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  expect(h.adapter.cards).toHaveLength(0);
  const [r] = lastResults(h);
  expect(r?.is_error).toBe(true);
  expect(existsSync(join(h.workspace, 'made'))).toBe(false);
});

test('toolPolicy deny blocks it even at a tier that covers it', async () => {
  h = await Harness.start({
    yaml: yaml('    approvers: { console: [local] }\n    toolPolicy: { make_file: deny }\n').replace(
      'tier: read-only\n    workspace',
      'tier: high-risk\n    workspace',
    ),
  });
  h.script({ toolUses: [{ name: 'make_file', input: { name: 'made' } }] }, { text: 'ok' });
  await h.adapter.send('make it');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  expect(h.adapter.cards).toHaveLength(0);
  expect(lastResults(h)[0]?.is_error).toBe(true);
  expect(existsSync(join(h.workspace, 'made'))).toBe(false);
});

test('output is capped at 16 KB per stream with a truncation marker; bad input is refused before anything runs', async () => {
  h = await Harness.start({ yaml: yaml('    approvers: { console: [local] }\n') });
  h.script({ toolUses: [{ name: 'count_to', input: { n: 50000 } }] }, { toolUses: [{ name: 'count_to', input: { n: '5; touch pwned' } }] }, { text: 'done' });
  await h.adapter.send('count');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  const first = (h.modelRequests()[1]!.body as { messages: Array<{ content: Array<{ type: string; content?: unknown }> }> }).messages.at(-1)!.content[0];
  const out = text(first?.content);
  expect(out).toMatch(/\[\.\.\. output truncated: \d+ bytes omitted \.\.\.\]/);
  expect(out).toContain('\n1\n2\n3');
  expect(out).toContain('50000');
  expect(out.length).toBeLessThan(20_000);
  expect(lastResults(h)[0]?.is_error).toBe(true);
  expect(readdirSync(h.workspace)).not.toContain('pwned');
});

describe('bad declarations are config errors naming the key path', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  function problems(decl: string): string[] {
    const dir = mkdtempSync(join(tmpdir(), 'gh-cmdtools-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'gatehouse.yaml'), `agents:\n  a:\n    model: m\n    workspace: ${join(dir, 'ws')}\n    commandTools:\n${decl}`);
    try {
      loadConfig({ env: { ANTHROPIC_API_KEY: 'k', GATEHOUSE_STORE: 'sqlite://:memory:' }, cwd: dir, knownTools: builtinToolNames() });
    } catch (err) {
      if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
      throw err;
    }
    return [];
  }
  test.each([
    [
      'unknown slot',
      '      t: { description: d, argv: [/bin/echo, "{who}"], tier: read-only }\n',
      /agents\.a\.commandTools\.t\.argv\[1\]: unknown slot \{who\}/,
    ],
    [
      'slot inside a word',
      '      t: { description: d, input: { type: object, properties: { n: { type: integer } } }, argv: [/bin/echo, "--n={n}"], tier: read-only }\n',
      /agents\.a\.commandTools\.t\.argv\[1\]: .*must be a whole argv element/,
    ],
    [
      'program as a slot',
      '      t: { description: d, input: { type: object, properties: { p: { type: string } } }, argv: ["{p}"], tier: read-only }\n',
      /agents\.a\.commandTools\.t\.argv\[0\]: .*literal/,
    ],
    [
      'built-in name',
      '      execute_command: { description: d, argv: [/bin/echo], tier: read-only }\n',
      /agents\.a\.commandTools\.execute_command: .*built-in/,
    ],
    [
      'bad schema type',
      '      t: { description: d, input: { type: object, properties: { p: { type: array } } }, argv: [/bin/echo], tier: read-only }\n',
      /agents\.a\.commandTools\.t\.input\.properties\.p\.type/,
    ],
    [
      'required names no property',
      '      t: { description: d, input: { type: object, properties: {}, required: [q] }, argv: [/bin/echo], tier: read-only }\n',
      /agents\.a\.commandTools\.t\.input\.required\[0\]/,
    ],
    ['tier unknown', '      t: { description: d, argv: [/bin/echo], tier: unknown }\n', /agents\.a\.commandTools\.t\.tier/],
  ])('%s', (_name, decl, expected) => {
    expect(problems(decl).join('\n')).toMatch(expected);
  });

  test('a good declaration is offered to the agent without listing it in tools', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-cmdtools-'));
    dirs.push(dir);
    writeFileSync(
      join(dir, 'gatehouse.yaml'),
      `agents:\n  a:\n    model: m\n    workspace: ${join(dir, 'ws')}\n    commandTools:\n      t: { description: d, argv: [/bin/echo, hi], tier: read-only }\n`,
    );
    const c = loadConfig({ env: { ANTHROPIC_API_KEY: 'k', GATEHOUSE_STORE: 'sqlite://:memory:' }, cwd: dir, knownTools: builtinToolNames() });
    expect(c.agents['a']?.tools).toContain('t');
  });
});
