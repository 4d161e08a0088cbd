import { htmlToPlain, telegramAnswer, telegramHtml } from '../../../adapters/telegram/format.js';
import { chunkMarkdown, parseMarkdown } from '../../../adapters/kit/markdown.js';
import type { MarkdownTarget } from '../../../adapters/kit/markdown.js';
import { parseTelegramHtml } from '../../fakes/telegram.js';

const squash = (s: string) => s.replace(/\s+/g, '');

/** A minimal second target: plain text, so the chunker is checked against more than one renderer. */
const plainTarget: MarkdownTarget = {
  render: (root, source) => {
    const doc = { root, source };
    return doc.root.children.map((b) => ('value' in b && typeof b.value === 'string' ? `[code]${b.value}[/code]` : plainOf(b))).join('\n');
  },
  measure: (s) => s.length,
};
function plainOf(n: unknown): string {
  const node = n as { value?: string; children?: unknown[]; url?: string; type: string };
  if (node.type === 'link') return `<${(node.children ?? []).map(plainOf).join('')}|${node.url}>`;
  if (typeof node.value === 'string') return node.value;
  return (node.children ?? []).map(plainOf).join('');
}

describe('chunkMarkdown on the mdast tree', () => {
  test('a huge code block becomes complete code blocks with its language; nothing is lost', () => {
    const code = Array.from({ length: 500 }, (_, i) => `  line ${i}: if (a < b && c > d) { x = "<&>"; }`).join('\n');
    const md = `Intro paragraph.\n\n\`\`\`ts\n${code}\n\`\`\`\n\nAfter.`;
    const pieces = telegramAnswer(md, 1000);
    expect(pieces.length).toBeGreaterThan(20);
    for (const p of pieces) {
      const r = parseTelegramHtml(p);
      expect(r.ok).toBe(true);
      if (r.ok) expect(r.plain.length).toBeLessThanOrEqual(1000);
      if (p.includes('line ')) expect(p).toMatch(/^(Intro paragraph\.\n\n)?<pre><code class="language-ts">[^<]*<\/code><\/pre>(\n\nAfter\.)?$/);
    }
    expect(squash(pieces.map(htmlToPlain).join(''))).toBe(squash(`Intro paragraph.${code}After.`));
  });

  test('a long paragraph is cut between words, never inside a link, code span or entity; styles reopen', () => {
    const words = Array.from({ length: 300 }, (_, i) =>
      i % 10 === 0 ? `[link number ${i}](https://example.com/${i}?a=1&b=2)` : i % 7 === 0 ? `\`code ${i} <&>\`` : `**w${i}&x**`,
    ).join(' ');
    const pieces = telegramAnswer(words, 200);
    expect(pieces.length).toBeGreaterThan(5);
    for (const p of pieces) {
      const r = parseTelegramHtml(p);
      expect(r.ok).toBe(true);
      if (r.ok) expect(r.plain.length).toBeLessThanOrEqual(200);
      // every link and code span in a piece is whole
      for (const m of p.matchAll(/<a href="https:\/\/example.com\/(\d+)\?a=1&amp;b=2">([^<]*)<\/a>/g)) {
        expect(m[2]).toBe(`link number ${m[1]}`);
      }
      for (const m of p.matchAll(/<code>([^<]*)<\/code>/g)) expect(m[1]).toMatch(/^code \d+ &lt;&amp;&gt;$/);
    }
    const whole = htmlToPlain(telegramHtml.render(parseMarkdown(words).root, words));
    expect(squash(pieces.map(htmlToPlain).join(''))).toBe(squash(whole));
  });

  test('lists split between items and keep their numbers', () => {
    const md = Array.from({ length: 60 }, (_, i) => `${i + 1}. item ${'z'.repeat(40)} ${i + 1}`).join('\n');
    const pieces = telegramAnswer(md, 500);
    expect(pieces.length).toBeGreaterThan(4);
    const lines = pieces.flatMap((p) => p.split('\n'));
    expect(lines).toHaveLength(60);
    lines.forEach((l, i) => expect(l.startsWith(`${i + 1}. item`)).toBe(true));
  });

  test('a word longer than a message is cut, surrogate-safe, and kept whole across pieces', () => {
    const md = '😀'.repeat(700);
    const pieces = telegramAnswer(md, 101);
    for (const p of pieces) {
      expect(p.length).toBeLessThanOrEqual(101);
      expect(p).not.toMatch(/[\ud800-\udbff]$/);
      expect(p).not.toMatch(/^[\udc00-\udfff]/);
    }
    expect(pieces.join('')).toBe(md);
  });

  test('the same tree chunks for another target measure (plain text), nothing lost', () => {
    const md = ['# Head', 'para '.repeat(200), '```', 'x\n'.repeat(300), '```', '- a', '- [b](https://b.io)'].join('\n');
    const pieces = chunkMarkdown(parseMarkdown(md), plainTarget, 300);
    for (const p of pieces) expect(p.length).toBeLessThanOrEqual(300);
    expect(squash(pieces.join('').replace(/\[\/?code\]/g, ''))).toBe(squash(`Head${'para '.repeat(200)}${'x\n'.repeat(300)}a<b|https://b.io>`));
  });

  test('a short answer is one message, same as the whole render', () => {
    const md = 'Hello **there**, see [x](https://x.io).';
    expect(telegramAnswer(md)).toEqual([telegramHtml.render(parseMarkdown(md).root, md)]);
  });
});
