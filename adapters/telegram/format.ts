/**
 * Markdown (as models write it) -> Telegram HTML (parse_mode "HTML"), and back to plain text.
 *
 * Contract:
 * - `markdownToTelegramHtml` always returns well-formed Telegram HTML: only tags Telegram accepts
 *   (b i s a code pre blockquote), properly nested (a recursive parser, so no crossed tags), every
 *   `< > &` of the text escaped, inside code too. Markdown that does not close is kept literally.
 * - Supported: **bold** __bold__, *italic* _italic_ (not inside words: snake_case stays), ~~strike~~,
 *   `code`, fenced code (``` or ~~~, with a language -> <pre><code class="language-x">), [links](url)
 *   (http, https, tg, mailto; others are written out as "text (url)"), headings -> bold lines,
 *   bullet lists -> "•", numbered lists, task lists, > quotes -> <blockquote>, tables -> <pre>,
 *   backslash escapes.
 * - `htmlToPlain` turns that HTML back into the text a reader sees (links as "text (url)"): the
 *   fallback when Telegram refuses the formatting, so nothing is lost.
 */

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function escapeAttr(s: string): string {
  return escapeHtml(s).replace(/"/g, '&quot;');
}

const SAFE_URL = /^(https?:\/\/|tg:\/\/|mailto:)[^\s<>"]+$/i;

const FENCE_OPEN = /^( {0,3})(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const BULLET = /^(\s*)[-*+][ \t]+(.*)$/;
const ORDERED = /^(\s*)(\d{1,9})[.)][ \t]+(.*)$/;
const TABLE_ROW = /^\s*\|.*\|\s*$/;

/** Converts markdown to Telegram HTML (see the module contract). */
export function markdownToTelegramHtml(md: string): string {
  const lines = md.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    const fence = FENCE_OPEN.exec(line);
    if (fence) {
      const indent = fence[1]?.length ?? 0;
      const marker = fence[2] ?? '```';
      const lang = (fence[3] ?? '').replace(/[^A-Za-z0-9_+#.-]/g, '');
      const body: string[] = [];
      i++;
      while (i < lines.length) {
        const l = lines[i] ?? '';
        const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(l);
        if (close && close[1]?.[0] === marker[0] && (close[1]?.length ?? 0) >= marker.length) {
          i++;
          break;
        }
        body.push(indent > 0 ? l.replace(new RegExp(`^ {0,${indent}}`), '') : l);
        i++;
      }
      const code = escapeHtml(body.join('\n'));
      if (code.trim() !== '') {
        out.push(lang ? `<pre><code class="language-${lang}">${code}</code></pre>` : `<pre>${code}</pre>`);
      }
      continue;
    }
    if (TABLE_ROW.test(line)) {
      const rows: string[] = [];
      while (i < lines.length && TABLE_ROW.test(lines[i] ?? '')) rows.push((lines[i++] ?? '').trim());
      out.push(`<pre>${escapeHtml(rows.join('\n'))}</pre>`);
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted: string[] = [];
      while (i < lines.length) {
        const q = QUOTE.exec(lines[i] ?? '');
        if (!q) break;
        quoted.push(inline(q[1] ?? ''));
        i++;
      }
      const inner = quoted.join('\n').trim();
      if (inner !== '') out.push(`<blockquote>${inner}</blockquote>`);
      continue;
    }
    out.push(blockLine(line));
    i++;
  }
  // At most one blank line in a row; none at the ends.
  return out.join('\n').replace(/\n{3,}/g, '\n\n').trim();
}

function blockLine(line: string): string {
  const h = HEADING.exec(line);
  if (h) return `<b>${inline(h[2] ?? '')}</b>`;
  if (RULE.test(line)) return '──────────';
  const b = BULLET.exec(line);
  if (b) {
    const indent = b[1] ?? '';
    const rest = b[2] ?? '';
    const task = /^\[([ xX])\][ \t]+(.*)$/.exec(rest);
    if (task) return `${indent}${task[1] === ' ' ? '☐' : '☑'} ${inline(task[2] ?? '')}`;
    return `${indent}• ${inline(rest)}`;
  }
  const o = ORDERED.exec(line);
  if (o) return `${o[1] ?? ''}${o[2] ?? ''}. ${inline(o[3] ?? '')}`;
  return inline(line);
}

const DELIMS: ReadonlyArray<readonly [string, string]> = [
  ['**', 'b'],
  ['__', 'b'],
  ['~~', 's'],
  ['*', 'i'],
  ['_', 'i'],
];

const isSpace = (c: string | undefined): boolean => c === undefined || /\s/.test(c);
const isWord = (c: string | undefined): boolean => c !== undefined && /[\p{L}\p{N}]/u.test(c);
const ASCII_PUNCT = /[!-/:-@[-`{-~]/;

/** Inline markdown of one line -> HTML. */
export function inline(src: string): string {
  return new InlineParser(src, false).parse();
}

class InlineParser {
  /** Delimiters that already failed to close: never retried (keeps the parser linear-ish). */
  private readonly noCloser = new Set<string>();

  constructor(
    private readonly s: string,
    private readonly inLink: boolean,
  ) {}

  parse(): string {
    return this.seq(0, null).html;
  }

  private canOpen(d: string, pos: number): boolean {
    const next = this.s[pos + d.length];
    if (isSpace(next)) return false;
    if (d === '_' || d === '__' || d === '*') return !isWord(this.s[pos - 1]);
    return true;
  }

  private canClose(d: string, pos: number): boolean {
    if (isSpace(this.s[pos - 1])) return false;
    if (d === '_' || d === '__' || d === '*') return !isWord(this.s[pos + d.length]);
    return true;
  }

  private seq(start: number, closer: string | null): { html: string; pos: number; closed: boolean } {
    const s = this.s;
    let html = '';
    let pos = start;
    while (pos < s.length) {
      if (closer !== null && s.startsWith(closer, pos) && pos > start && this.canClose(closer, pos)) {
        return { html, pos: pos + closer.length, closed: true };
      }
      const ch = s[pos] ?? '';
      if (ch === '\\' && pos + 1 < s.length && ASCII_PUNCT.test(s[pos + 1] ?? '')) {
        html += escapeHtml(s[pos + 1] ?? '');
        pos += 2;
        continue;
      }
      if (ch === '`') {
        let k = 1;
        while (s[pos + k] === '`') k++;
        const end = findBacktickRun(s, pos + k, k);
        if (end >= 0) {
          let code = s.slice(pos + k, end);
          if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ')) code = code.slice(1, -1);
          html += code === '' ? escapeHtml('`'.repeat(k * 2)) : `<code>${escapeHtml(code)}</code>`;
          pos = end + k;
        } else {
          html += '`'.repeat(k);
          pos += k;
        }
        continue;
      }
      if (!this.inLink && (ch === '[' || (ch === '!' && s[pos + 1] === '['))) {
        const link = this.tryLink(ch === '!' ? pos + 1 : pos);
        if (link) {
          html += link.html;
          pos = link.pos;
          continue;
        }
      }
      const delim = DELIMS.find(([d]) => s.startsWith(d, pos));
      if (delim) {
        const [d, tag] = delim;
        if (!this.noCloser.has(d) && this.canOpen(d, pos)) {
          const inner = this.seq(pos + d.length, d);
          if (inner.closed && inner.html !== '') {
            html += `<${tag}>${inner.html}</${tag}>`;
            pos = inner.pos;
            continue;
          }
          if (!inner.closed) this.noCloser.add(d);
        }
        html += d;
        pos += d.length;
        continue;
      }
      html += escapeHtml(ch);
      pos++;
    }
    return { html, pos, closed: false };
  }

  /** `[label](url)` at `pos` (the '['); null when it is not a link. */
  private tryLink(pos: number): { html: string; pos: number } | null {
    const s = this.s;
    let depth = 0;
    let j = pos;
    for (; j < s.length; j++) {
      const c = s[j];
      if (c === '\\') {
        j++;
        continue;
      }
      if (c === '[') depth++;
      else if (c === ']' && --depth === 0) break;
    }
    if (j >= s.length || s[j + 1] !== '(') return null;
    let k = j + 2;
    let parens = 1;
    for (; k < s.length; k++) {
      const c = s[k];
      if (c === '(') parens++;
      else if (c === ')' && --parens === 0) break;
    }
    if (k >= s.length) return null;
    const label = s.slice(pos + 1, j);
    const target = s.slice(j + 2, k).trim();
    const url = target.replace(/\s+"[^"]*"$/, '').replace(/^<(.*)>$/, '$1');
    const text = new InlineParser(label, true).parse();
    if (SAFE_URL.test(url)) {
      return { html: `<a href="${escapeAttr(url)}">${text === '' ? escapeHtml(url) : text}</a>`, pos: k + 1 };
    }
    return { html: `${text} (${escapeHtml(url)})`, pos: k + 1 };
  }
}

function findBacktickRun(s: string, from: number, k: number): number {
  let i = s.indexOf('`'.repeat(k), from);
  while (i >= 0) {
    let run = 0;
    while (s[i + run] === '`') run++;
    if (run === k) return i;
    i = s.indexOf('`'.repeat(k), i + run);
  }
  return -1;
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
