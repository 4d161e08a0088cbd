/**
 * Markdown (as models write it) -> Telegram HTML (parse_mode "HTML"), and back to plain text.
 * The markdown is parsed once by the kit (adapters/kit/markdown.ts, mdast); this file only renders.
 *
 * Contract:
 * - `markdownToTelegramHtml` always returns well-formed Telegram HTML: only tags Telegram accepts
 *   (b i s a code pre blockquote), properly nested (rendered from a tree), every `< > &` of the
 *   text escaped, inside code too. Raw HTML in the markdown is shown as text.
 * - CommonMark + GFM: **bold**, *italic* (a `*` pair inside a word, as in 2*3*4, stays literal),
 *   ~~strike~~, `code`, fenced code (with a language -> <pre><code class="language-x">), links
 *   (http, https, tg, mailto; others are written out as "text (url)"), headings -> bold lines,
 *   bullet lists -> "•", numbered lists, task lists, > quotes -> <blockquote>, tables -> <pre> as
 *   written, backslash escapes.
 * - `telegramAnswer(md)` is the answer as messages of at most 4,096 visible characters, cut on the
 *   tree (kit `chunkMarkdown`): no piece splits a code block's fence, a link or an entity.
 * - `htmlToPlain` turns that HTML back into the text a reader sees (links as "text (url)"): the
 *   fallback when Telegram refuses the formatting, so nothing is lost.
 */
import type { Node, PhrasingContent, Root, RootContent } from 'mdast';
import { blockSeparator, chunkMarkdown, parseMarkdown, sourceOf, textOf } from '../kit/markdown.js';
import type { MarkdownTarget } from '../kit/markdown.js';
import { TELEGRAM_TEXT_LIMIT, visibleLength } from './chunk.js';

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function escapeAttr(s: string): string {
  return escapeHtml(s).replace(/"/g, '&quot;');
}

const SAFE_URL = /^(https?:\/\/|tg:\/\/|mailto:)[^\s<>"]+$/i;
const isWord = (c: string | undefined): boolean => c !== undefined && /[\p{L}\p{N}]/u.test(c);

/** Renders mdast to Telegram HTML. */
class TelegramHtml {
  constructor(private readonly source: string) {}

  blocks(nodes: RootContent[], inQuote: boolean, indent: string): string {
    let out = '';
    nodes.forEach((node, i) => {
      const prev = nodes[i - 1];
      const html = this.block(node, inQuote, indent);
      if (html === '') return;
      if (out !== '' && prev) out += blockSeparator(prev, node);
      out += html;
    });
    return out;
  }

  block(node: RootContent, inQuote: boolean, indent: string): string {
    switch (node.type) {
      case 'paragraph':
        return this.inline(node.children);
      case 'heading':
        return `<b>${this.inline(node.children)}</b>`;
      case 'thematicBreak':
        return '──────────';
      case 'code': {
        if (node.value.trim() === '') return '';
        const code = escapeHtml(node.value);
        if (inQuote) return code; // Telegram does not nest <pre> in <blockquote>
        const lang = (node.lang ?? '').replace(/[^A-Za-z0-9_+#.-]/g, '');
        return lang ? `<pre><code class="language-${lang}">${code}</code></pre>` : `<pre>${code}</pre>`;
      }
      case 'blockquote': {
        const inner = this.blocks(node.children as RootContent[], true, '').trim();
        if (inner === '') return '';
        return inQuote ? inner : `<blockquote>${inner}</blockquote>`;
      }
      case 'list': {
        const start = node.start ?? 1;
        return node.children
          .map((item, i) => {
            const marker = item.checked === true ? '☑' : item.checked === false ? '☐' : node.ordered ? `${start + i}.` : '•';
            const [first, ...rest] = item.children as RootContent[];
            const head = first ? this.block(first, inQuote, `${indent}  `) : '';
            const more = rest.map((b) => this.block(b, inQuote, `${indent}  `)).filter((s) => s !== '');
            const lines = [`${indent}${marker} ${head}`];
            for (const m of more) lines.push(m.startsWith(indent) ? m : `${indent}  ${m}`);
            return lines.join('\n');
          })
          .join('\n');
      }
      case 'table':
        return inQuote ? escapeHtml(sourceOf(node, this.source)) : `<pre>${escapeHtml(sourceOf(node, this.source) || textOf(node))}</pre>`;
      case 'html':
        return escapeHtml(node.value);
      default:
        return escapeHtml(sourceOf(node, this.source) || textOf(node));
    }
  }

  inline(nodes: PhrasingContent[]): string {
    return nodes.map((n) => this.phrasing(n)).join('');
  }

  /** A `*` pair inside a word (2*3*4) is arithmetic, not emphasis. */
  private intraword(node: Node): string | undefined {
    const p = node.position;
    if (p?.start.offset === undefined || p.end.offset === undefined) return undefined;
    const s = this.source;
    const delim = s[p.start.offset];
    if (delim !== '*' || !isWord(s[p.start.offset - 1]) || !isWord(s[p.end.offset])) return undefined;
    return node.type === 'strong' ? '**' : '*';
  }

  phrasing(node: PhrasingContent): string {
    switch (node.type) {
      case 'text':
        return escapeHtml(node.value);
      case 'strong':
      case 'emphasis':
      case 'delete': {
        const inner = this.inline(node.children);
        const literal = node.type === 'delete' ? undefined : this.intraword(node);
        if (literal) return `${literal}${inner}${literal}`;
        if (inner === '') return '';
        const tag = node.type === 'strong' ? 'b' : node.type === 'emphasis' ? 'i' : 's';
        return `<${tag}>${inner}</${tag}>`;
      }
      case 'inlineCode':
        return node.value === '' ? '' : `<code>${escapeHtml(node.value)}</code>`;
      case 'break':
        return '\n';
      case 'link': {
        const text = this.inline(node.children);
        if (SAFE_URL.test(node.url)) return `<a href="${escapeAttr(node.url)}">${text === '' ? escapeHtml(node.url) : text}</a>`;
        return text === '' ? escapeHtml(node.url) : `${text} (${escapeHtml(node.url)})`;
      }
      case 'image':
        return SAFE_URL.test(node.url)
          ? `<a href="${escapeAttr(node.url)}">${escapeHtml(node.alt || node.url)}</a>`
          : escapeHtml(`${node.alt ?? ''} (${node.url})`);
      case 'html':
        return escapeHtml(node.value);
      case 'linkReference':
      case 'imageReference':
      case 'footnoteReference':
        return escapeHtml(sourceOf(node, this.source) || textOf(node));
      default:
        return escapeHtml(textOf(node));
    }
  }
}

export const telegramHtml: MarkdownTarget = {
  render(root: Root, source: string): string {
    return new TelegramHtml(source).blocks(root.children, false, '').trim();
  },
  measure: visibleLength,
};

/** Converts markdown to Telegram HTML (see the module contract). */
export function markdownToTelegramHtml(md: string): string {
  const doc = parseMarkdown(md);
  return telegramHtml.render(doc.root, doc.source);
}

/** The answer as Telegram HTML messages, each within `limit` visible characters. */
export function telegramAnswer(md: string, limit: number = TELEGRAM_TEXT_LIMIT): string[] {
  return chunkMarkdown(parseMarkdown(md), telegramHtml, limit);
}

const ENTITY = /&(lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);/g;

export function decodeEntities(s: string): string {
  return s.replace(ENTITY, (_m, e: string) => {
    if (e === 'lt') return '<';
    if (e === 'gt') return '>';
    if (e === 'amp') return '&';
    if (e === 'quot') return '"';
    const code = e.startsWith('#x') ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
    return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : '';
  });
}

/** Telegram HTML -> the plain text a reader sees; links keep their URL as "text (url)". */
export function htmlToPlain(html: string): string {
  let out = '';
  const links: Array<{ href: string; at: number }> = [];
  const TAG = /<(\/?)([a-zA-Z-]+)([^>]*)>/g;
  let last = 0;
  for (let m = TAG.exec(html); m; m = TAG.exec(html)) {
    out += decodeEntities(html.slice(last, m.index));
    last = TAG.lastIndex;
    const name = (m[2] ?? '').toLowerCase();
    if (name !== 'a') continue;
    if (m[1] === '') {
      const href = /href\s*=\s*"([^"]*)"/i.exec(m[3] ?? '')?.[1];
      links.push({ href: decodeEntities(href ?? ''), at: out.length });
    } else {
      const link = links.pop();
      if (link && link.href !== '') {
        const label = out.slice(link.at);
        if (label === '') out += link.href;
        else if (label !== link.href) out += ` (${link.href})`;
      }
    }
  }
  return out + decodeEntities(html.slice(last));
}
