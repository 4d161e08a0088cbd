/**
 * The kit's markdown tree -> Slack mrkdwn, and answers cut to Slack's message measure.
 *
 * Contract:
 * - `& < >` of the text are escaped (Slack's only escapes), so model text can never form a mention
 *   (<!channel>, <@U123>) or a link it did not write as markdown.
 * - **bold** -> *bold*, *italic* -> _italic_, ~~strike~~ -> ~strike~, `code`, fenced code ->
 *   ``` blocks (language dropped: Slack ignores it), [text](url) -> <url|text> for http(s)/mailto
 *   (others written out), headings -> bold lines, lists -> "•" / "1." lines, quotes -> "> " lines,
 *   tables -> code blocks as written.
 * - `slackAnswer(md)` gives messages of at most `SLACK_TEXT_LIMIT` characters of mrkdwn, cut on the
 *   tree: a code block is split into complete code blocks, a link never split.
 */
import type { PhrasingContent, Root, RootContent } from 'mdast';
import { blockSeparator, chunkMarkdown, parseMarkdown, sourceOf, textOf } from '../kit/markdown.js';
import type { MarkdownTarget } from '../kit/markdown.js';

/** Slack cuts `text` at 40,000 characters and advises 4,000 for readability. */
export const SLACK_TEXT_LIMIT = 3900;

const SAFE_URL = /^(https?:\/\/|mailto:)[^\s<>|]+$/i;

export function escapeMrkdwn(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
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

function fence(value: string): string {
  // a ``` inside the code would end Slack's block early
  return '```\n' + escapeMrkdwn(value.replace(/```/g, '`\u200b``')) + '\n```';
}

function block(node: RootContent, source: string, indent: string): string {
  switch (node.type) {
    case 'paragraph':
      return inline(node.children);
    case 'heading':
      return `*${inline(node.children)}*`;
    case 'thematicBreak':
      return '──────────';
    case 'code':
      return node.value.trim() === '' ? '' : fence(node.value);
    case 'blockquote':
      return blocks(node.children as RootContent[], source, '')
        .split('\n')
        .map((l) => `> ${l}`)
        .join('\n');
    case 'list': {
      const start = node.start ?? 1;
      return node.children
        .map((item, i) => {
          const marker = item.checked === true ? '☑' : item.checked === false ? '☐' : node.ordered ? `${start + i}.` : '•';
          const [first, ...rest] = item.children as RootContent[];
          const lines = [`${indent}${marker} ${first ? block(first, source, `${indent}    `) : ''}`];
          for (const b of rest) {
            const t = block(b, source, `${indent}    `);
            if (t !== '') lines.push(t.startsWith(indent) && b.type === 'list' ? t : `${indent}    ${t}`);
          }
          return lines.join('\n');
        })
        .join('\n');
    }
    case 'table':
      return fence(sourceOf(node, source) || textOf(node));
    case 'html':
      return escapeMrkdwn(node.value);
    default:
      return escapeMrkdwn(sourceOf(node, source) || textOf(node));
  }
}

function inline(nodes: PhrasingContent[]): string {
  return nodes.map(phrasing).join('');
}

function phrasing(node: PhrasingContent): string {
  switch (node.type) {
    case 'text':
      return escapeMrkdwn(node.value);
    case 'strong':
    case 'emphasis':
    case 'delete': {
      const inner = inline(node.children);
      if (inner.trim() === '') return inner;
      const mark = node.type === 'strong' ? '*' : node.type === 'emphasis' ? '_' : '~';
      return `${mark}${inner}${mark}`;
    }
    case 'inlineCode':
      return node.value === '' ? '' : `\`${escapeMrkdwn(node.value.replace(/`/g, "'"))}\``;
    case 'break':
      return '\n';
    case 'link': {
      const text = textOf(node).replace(/[|<>]/g, ' ').trim();
      if (SAFE_URL.test(node.url)) return text === '' || text === node.url ? `<${node.url}>` : `<${node.url}|${escapeMrkdwn(text)}>`;
      return `${escapeMrkdwn(text)} (${escapeMrkdwn(node.url)})`;
    }
    case 'image':
      return SAFE_URL.test(node.url) ? `<${node.url}|${escapeMrkdwn(node.alt || 'image')}>` : escapeMrkdwn(`${node.alt ?? ''} (${node.url})`);
    case 'html':
      return escapeMrkdwn(node.value);
    default:
      return escapeMrkdwn(textOf(node));
  }
}

export const slackMrkdwn: MarkdownTarget = {
  render: (root: Root, source: string) => blocks(root.children, source, '').trim(),
  measure: (s) => s.length,
};

export function markdownToMrkdwn(md: string): string {
  const doc = parseMarkdown(md);
  return slackMrkdwn.render(doc.root, doc.source);
}

export function slackAnswer(md: string, limit: number = SLACK_TEXT_LIMIT): string[] {
  return chunkMarkdown(parseMarkdown(md), slackMrkdwn, limit);
}

/** mrkdwn -> what a reader sees, roughly (tests and fallbacks): links as "text (url)", marks kept. */
export function mrkdwnToPlain(s: string): string {
  return s
    .replace(/<([^|>]+)\|([^>]*)>/g, '$2 ($1)')
    .replace(/<([^>]+)>/g, '$1')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}
