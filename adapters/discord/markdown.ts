/**
 * The kit's markdown tree -> Discord markdown, and answers cut to Discord's 2,000 characters.
 *
 * Contract:
 * - Text is escaped with backslashes (`\ * _ ~ \` | < [ ]`, and `# > -` at a line start), so model
 *   text never forms markup, a mention (<@id>, <#id>), a timestamp or a masked link it did not write
 *   as markdown. Messages are also sent with no allowed mentions (the adapter's job).
 * - **bold**, *italic* -> _italic_, ~~strike~~, `code`, fenced code with its language, [text](url)
 *   for http(s) links (others written out), headings # to ### (deeper -> bold), lists "-" / "1.",
 *   quotes "> ", tables -> code blocks as written.
 * - `discordAnswer(md)` gives messages of at most `DISCORD_TEXT_LIMIT` characters, cut on the tree:
 *   a code block becomes several complete code blocks (fences balanced), a link is never split.
 */
import type { PhrasingContent, Root, RootContent } from 'mdast';
import { blockSeparator, chunkMarkdown, parseMarkdown, sourceOf, textOf } from '../kit/markdown.js';
import type { MarkdownTarget } from '../kit/markdown.js';

export const DISCORD_TEXT_LIMIT = 2000;

const SAFE_URL = /^https?:\/\/[^\s<>()]+$/i;

export function escapeDiscord(s: string): string {
  return s.replace(/[\\*_~`|<[\]]/g, '\\$&').replace(/^([ \t]*)([#>-])/gm, '$1\\$2');
}

function blocks(nodes: RootContent[], source: string, indent: string): string {
  let out = '';
  nodes.forEach((node, i) => {
    const text = block(node, source, indent);
    if (text === '') return;
    const prev = nodes[i - 1];
    if (out !== '' && prev) out += blockSeparator(prev, node);
    out += text;
  });
  return out;
}

export function fence(value: string, lang?: string | null): string {
  // a ``` inside the code would end the block early
  const safeLang = lang && /^[A-Za-z0-9_+.-]{1,20}$/.test(lang) ? lang : '';
  return '```' + safeLang + '\n' + value.replace(/```/g, '`\u200b``') + '\n```';
}

function block(node: RootContent, source: string, indent: string): string {
  switch (node.type) {
    case 'paragraph':
      return inline(node.children);
    case 'heading':
      return node.depth <= 3 ? `${'#'.repeat(node.depth)} ${inline(node.children)}` : `**${inline(node.children)}**`;
    case 'thematicBreak':
      return '──────────';
    case 'code':
      return node.value.trim() === '' ? '' : fence(node.value, node.lang);
    case 'blockquote':
      return blocks(node.children as RootContent[], source, '')
        .split('\n')
        .map((l) => `> ${l}`)
        .join('\n');
    case 'list': {
      const start = node.start ?? 1;
      return node.children
        .map((item, i) => {
          const marker = item.checked === true ? '- ☑' : item.checked === false ? '- ☐' : node.ordered ? `${start + i}.` : '-';
          const [first, ...rest] = item.children as RootContent[];
          const lines = [`${indent}${marker} ${first ? block(first, source, `${indent}  `) : ''}`];
          for (const b of rest) {
            const t = block(b, source, `${indent}  `);
            if (t !== '') lines.push(t.startsWith(indent) && b.type === 'list' ? t : `${indent}  ${t}`);
          }
          return lines.join('\n');
        })
        .join('\n');
    }
    case 'table':
      return fence(sourceOf(node, source) || textOf(node));
    case 'html':
      return escapeDiscord(node.value);
    default:
      return escapeDiscord(sourceOf(node, source) || textOf(node));
  }
}

function inline(nodes: PhrasingContent[]): string {
  return nodes.map(phrasing).join('');
}

function phrasing(node: PhrasingContent): string {
  switch (node.type) {
    case 'text':
      return escapeDiscord(node.value);
    case 'strong':
    case 'emphasis':
    case 'delete': {
      const inner = inline(node.children);
      if (inner.trim() === '') return inner;
      const mark = node.type === 'strong' ? '**' : node.type === 'emphasis' ? '_' : '~~';
      return `${mark}${inner}${mark}`;
    }
    case 'inlineCode':
      if (node.value === '') return '';
      return node.value.includes('`') ? `\`\` ${node.value.replace(/``/g, '`\u200b`')} \`\`` : `\`${node.value}\``;
    case 'break':
      return '\n';
    case 'link': {
      const text = textOf(node).replace(/[[\]]/g, ' ').trim();
      if (SAFE_URL.test(node.url)) return text === '' || text === node.url ? node.url : `[${escapeDiscord(text)}](${node.url})`;
      return `${escapeDiscord(text)} (${escapeDiscord(node.url)})`;
    }
    case 'image':
      return SAFE_URL.test(node.url) ? `[${escapeDiscord(node.alt || 'image')}](${node.url})` : escapeDiscord(`${node.alt ?? ''} (${node.url})`);
    case 'html':
      return escapeDiscord(node.value);
    default:
      return escapeDiscord(textOf(node));
  }
}

export const discordMarkdown: MarkdownTarget = {
  render: (root: Root, source: string) => blocks(root.children, source, '').trim(),
  measure: (s) => s.length,
};

export function markdownToDiscord(md: string): string {
  const doc = parseMarkdown(md);
  return discordMarkdown.render(doc.root, doc.source);
}

export function discordAnswer(md: string, limit: number = DISCORD_TEXT_LIMIT): string[] {
  return chunkMarkdown(parseMarkdown(md), discordMarkdown, limit);
}

/** Discord markdown -> what a reader sees, roughly (tests and fallbacks): links as "text (url)". */
export function discordToPlain(s: string): string {
  return s
    .replace(/```[A-Za-z0-9_+.-]*\n?/g, '')
    .replace(/\[((?:\\.|[^\]\\])*)\]\((https?:[^)\s]+)\)/g, '$1 ($2)')
    .replace(/\*\*|~~/g, '')
    .replace(/\\([\\*_~`|<[\]#>-])/g, '$1');
}
