/**
 * One tree walk for the platforms whose messages are marked-up plain text (Slack mrkdwn, Discord
 * markdown): the structure (blocks, lists, quotes, spacing) is the same for both, only the marks and
 * the escaping differ, so each platform describes its dialect and gets a `MarkdownTarget`.
 *
 * Contract: `textDialectTarget(d)` renders every mdast node: text through `d.escape` (so model text can
 * never form markup, a mention or a link it did not write as markdown), code through `d.fence` /
 * `d.inlineCode`, links and images through `d.link` / `d.image` with their plain text, tables as code
 * blocks as written, anything unknown as its escaped source. Measure is JavaScript string length.
 * Telegram renders HTML and has its own walk (adapters/telegram/format.ts).
 */
import type { List, PhrasingContent, Root, RootContent } from 'mdast';
import { blockSeparator, sourceOf, textOf, type MarkdownTarget } from './markdown.js';

export interface TextDialect {
  escape(s: string): string;
  /** A fenced code block holding `value` (the language only where the platform shows it). */
  fence(value: string, lang?: string | null): string;
  /** A heading of `depth` (1-6) around already rendered text. */
  heading(inner: string, depth: number): string;
  /** The marker of a list item: a task box, an ordered number or a bullet. */
  listMarker(item: { checked: boolean | null | undefined; ordered: boolean; number: number }): string;
  /** How far a nested block is indented under its item. */
  listIndent: string;
  marks: { strong: string; emphasis: string; delete: string };
  inlineCode(value: string): string;
  /** A link from the URL as written and the link's plain text. */
  link(url: string, text: string): string;
  image(url: string, alt: string): string;
  thematicBreak: string;
}

export function textDialectTarget(d: TextDialect): MarkdownTarget {
  const blocks = (nodes: RootContent[], source: string, indent: string): string => {
    let out = '';
    nodes.forEach((node, i) => {
      const text = block(node, source, indent);
      if (text === '') return;
      const prev = nodes[i - 1];
      if (out !== '' && prev) out += blockSeparator(prev, node);
      out += text;
    });
    return out;
  };

  const list = (node: List, source: string, indent: string): string => {
    const start = node.start ?? 1;
    const inner = indent + d.listIndent;
    return node.children
      .map((item, i) => {
        const marker = d.listMarker({ checked: item.checked, ordered: node.ordered === true, number: start + i });
        const [first, ...rest] = item.children as RootContent[];
        const lines = [`${indent}${marker} ${first ? block(first, source, inner) : ''}`];
        for (const b of rest) {
          const t = block(b, source, inner);
          if (t !== '') lines.push(t.startsWith(indent) && b.type === 'list' ? t : `${inner}${t}`);
        }
        return lines.join('\n');
      })
      .join('\n');
  };

  const block = (node: RootContent, source: string, indent: string): string => {
    switch (node.type) {
      case 'paragraph':
        return inline(node.children);
      case 'heading':
        return d.heading(inline(node.children), node.depth);
      case 'thematicBreak':
        return d.thematicBreak;
      case 'code':
        return node.value.trim() === '' ? '' : d.fence(node.value, node.lang);
      case 'blockquote':
        return blocks(node.children as RootContent[], source, '')
          .split('\n')
          .map((l) => `> ${l}`)
          .join('\n');
      case 'list':
        return list(node, source, indent);
      case 'table':
        return d.fence(sourceOf(node, source) || textOf(node));
      case 'html':
        return d.escape(node.value);
      default:
        return d.escape(sourceOf(node, source) || textOf(node));
    }
  };

  const inline = (nodes: PhrasingContent[]): string => nodes.map(phrasing).join('');

  const phrasing = (node: PhrasingContent): string => {
    switch (node.type) {
      case 'text':
      case 'html':
        return d.escape(node.value);
      case 'strong':
      case 'emphasis':
      case 'delete': {
        const inner = inline(node.children);
        if (inner.trim() === '') return inner;
        const mark = d.marks[node.type];
        return `${mark}${inner}${mark}`;
      }
      case 'inlineCode':
        return node.value === '' ? '' : d.inlineCode(node.value);
      case 'break':
        return '\n';
      case 'link':
        return d.link(node.url, textOf(node));
      case 'image':
        return d.image(node.url, node.alt ?? '');
      default:
        return d.escape(textOf(node));
    }
  };

  return {
    render: (root: Root, source: string) => blocks(root.children, source, '').trim(),
    measure: (s) => s.length,
  };
}
