/**
 * Discord's pure render modules: markdown, chunking, card components, keys and the environment.
 */
import { renderDiscordCard, tokenOf } from '../../../adapters/discord/components.js';
import { discordDescriptor } from '../../../adapters/discord/descriptor.js';
import { decodeKey, refFor } from '../../../adapters/discord/keys.js';
import { discordAnswer, discordToPlain, markdownToDiscord } from '../../../adapters/discord/markdown.js';
import type { EnvProblem } from '../../../adapters/types.js';
import type { Card } from '../../../agent/events.js';

type Row = {
  type: number;
  components: Array<{ type: number; style?: number; label?: string; custom_id: string; options?: Array<{ label: string; value: string }> }>;
};
const tok = (i: number) => `tok${String(i).padStart(3, '0')}-${'x'.repeat(30)}`;

test('markdown renders to Discord: marks, code with language, links, headings, lists, quotes, tables', () => {
  const out = markdownToDiscord(
    '# Title\n\n**bold** *it* ~~gone~~ `x`\n\n```ts\nconst a = 1;\n```\n\n- one\n- two\n\n1. first\n\n> quoted\n\n[site](https://example.com/a?b=1)\n\n| a | b |\n|---|---|\n| 1 | 2 |',
  );
  expect(out).toContain('# Title');
  expect(out).toContain('**bold** _it_ ~~gone~~ `x`');
  expect(out).toContain('```ts\nconst a = 1;\n```');
  expect(out).toContain('- one\n- two');
  expect(out).toContain('1. first');
  expect(out).toContain('> quoted');
  expect(out).toContain('[site](https://example.com/a?b=1)');
  expect(out).toMatch(/```\n\| a \| b \|/);
});

test('model text cannot form mentions, markup or masked links it did not write as markdown', () => {
  const out = markdownToDiscord('ping <@123> and <@&456> a_b_c 2*3*4 || spoiler || [x] \\');
  expect(out).toContain('\\<@123>');
  expect(out).toContain('\\<@&456>');
  expect(out).toContain('a\\_b\\_c');
  expect(out).toContain('\\|\\|');
  expect(discordToPlain(out)).toContain('<@123>');
  // a javascript: link is written out, never a masked link
  expect(markdownToDiscord('[click](javascript:alert(1))')).not.toMatch(/\]\(javascript/);
});

test('a long answer is cut at 2,000 characters with every code fence balanced and nothing lost', () => {
  const code = Array.from({ length: 400 }, (_, i) => `line ${i} \`\`\` tricky`).join('\n');
  const md = `Intro.\n\n\`\`\`python\n${code}\n\`\`\`\n\n${'word '.repeat(1000)}`;
  const pieces = discordAnswer(md);
  expect(pieces.length).toBeGreaterThan(3);
  for (const p of pieces) {
    expect(p.length).toBeLessThanOrEqual(2000);
    expect((p.match(/^```/gm) ?? []).length % 2).toBe(0);
  }
  const codeBack = pieces.flatMap((p) => [...p.matchAll(/```python\n([\s\S]*?)\n```/g)].map((m) => m[1])).join('\n');
  expect(codeBack.replace(/\u200b/g, '')).toBe(code);
  expect(pieces.join(' ').split('word').length - 1).toBe(1000);
});

const card = (n: number, extra: Partial<Card> = {}): Card => ({
  kind: 'question',
  title: 'Pick one',
  body: 'Which?',
  buttons: Array.from({ length: n }, (_, i) => ({
    token: tok(i),
    label: `Option ${i} ${'long '.repeat(i === 0 ? 30 : 0)}`,
    style: i === 0 ? 'primary' : i === n - 1 ? 'danger' : 'default',
  })),
  ...extra,
});

test('buttons within Discord limits: one row, styles, labels cut to 80, custom_id carries only the token', () => {
  const m = renderDiscordCard(card(3));
  const rows = m.components as Row[];
  expect(rows).toHaveLength(1);
  expect(rows[0]!.components.map((b) => b.style)).toEqual([1, 2, 4]);
  expect(rows[0]!.components[0]!.label!.length).toBeLessThanOrEqual(80);
  for (const b of rows[0]!.components) {
    expect(b.custom_id.length).toBeLessThanOrEqual(100);
    expect(tokenOf(b.custom_id)).toMatch(/^tok\d{3}-x+$/);
  }
});

test('more options than a row holds become string selects of at most 25, at most 5 rows; every token offered', () => {
  const m = renderDiscordCard(card(60));
  const rows = m.components as Row[];
  expect(rows.length).toBeLessThanOrEqual(5);
  const selects = rows.map((r) => r.components);
  for (const s of selects) {
    expect(s).toHaveLength(1);
    expect(s[0]!.type).toBe(3);
    expect(s[0]!.options!.length).toBeLessThanOrEqual(25);
  }
  const values = selects.flatMap((s) => s[0]!.options!.map((o) => o.value));
  expect(values).toEqual(Array.from({ length: 60 }, (_, i) => tok(i)));
  expect(tokenOf(selects[1]![0]!.custom_id, [values[30]!])).toBe(tok(30));
});

test('a huge preview is cut with a note; the decided card fits and has no components', () => {
  const big = card(3, { kind: 'approval', preview: 'x'.repeat(10_000), tier: 'high-risk' });
  const m = renderDiscordCard(big);
  expect(m.content.length).toBeLessThanOrEqual(2000);
  expect(m.content).toMatch(/preview cut: \d+ more characters/);
  const decided = renderDiscordCard({ ...big, buttons: [], outcome: 'Approved once by Carol at 10:02' });
  expect(decided.components).toEqual([]);
  expect(decided.content.length).toBeLessThanOrEqual(2000);
  expect(decided.content).toContain('Approved once by Carol at 10:02');
});

test('keys round-trip; a DM has no thread; malformed keys throw', () => {
  for (const ref of [refFor('dm', '1'), refFor('2', '3'), refFor('2', '3', '4')]) expect(decodeKey(ref.key)).toEqual(ref);
  expect(refFor('2', '3', '4').key).toBe('discord:2:3:4');
  expect(() => refFor('dm', '1', '2')).toThrow();
  for (const bad of ['discord:', 'discord:x:1', 'discord:1', 'discord:1:2:3:4', 'slack:1:2']) expect(() => decodeKey(bad)).toThrow();
});

test('environment: token required for the URL, token shape checked, never echoed', () => {
  const parse = (env: Record<string, string>) => {
    const problems: EnvProblem[] = [];
    return { value: discordDescriptor.parseEnv?.(env, problems), problems };
  };
  expect(parse({}).value).toBeUndefined();
  const ok = parse({ DISCORD_TOKEN: 'OTAwMDAwMDAwMDAwMDAwMDAx.GfakeX.fakeDiscordBotTokenValue' });
  expect(ok.value).toEqual({ token: 'OTAwMDAwMDAwMDAwMDAwMDAx.GfakeX.fakeDiscordBotTokenValue', apiUrl: undefined, requestsPerSecond: undefined });
  const bad = parse({ DISCORD_TOKEN: 'hunter2-secret' });
  expect(bad.problems.map((p) => p.path)).toEqual(['DISCORD_TOKEN']);
  expect(JSON.stringify(bad.problems)).not.toContain('hunter2');
  expect(parse({ DISCORD_API_URL: 'http://x' }).problems.map((p) => p.path)).toEqual(['DISCORD_API_URL']);
});
