/**
 * Splitting text for Telegram's 4,096-character message limit.
 *
 * Contract:
 * - `chunkHtml(html, limit)` splits well-formed Telegram HTML (as format.ts makes it) into pieces
 *   whose visible text (after entity parsing, counted in UTF-16 units as Telegram does) is at most
 *   `limit`. A piece never ends inside a tag or an entity (&amp;); a tag open at a cut is closed at
 *   the end of the piece and reopened, attributes and all (<pre><code class="language-x">), at the
 *   start of the next, so every piece parses on its own. Cuts prefer, in order: a line break outside
 *   any tag, a line break inside one, a space, and only then any character; a cut in the first half
 *   of a piece is taken only when nothing better exists. Whitespace-only pieces are dropped.
 * - `chunkPlain(text, limit)` does the same for plain text (no parse_mode), via the kit.
 * - Concatenating the visible text of the pieces gives back the visible text of the input
 *   (whitespace at the cuts aside).
 */

import { chunkText } from '../kit/text.js';

export const TELEGRAM_TEXT_LIMIT = 4096;

type Token =
  | { kind: 'open'; name: string; raw: string }
  | { kind: 'close'; name: string; raw: string }
  | { kind: 'text'; raw: string; width: number; ch: string };

function tokenize(html: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < html.length) {
    const c = html[i] ?? '';
    if (c === '<') {
      const end = html.indexOf('>', i);
      if (end > i) {
        const raw = html.slice(i, end + 1);
        const m = /^<(\/?)([a-zA-Z][a-zA-Z0-9-]*)/.exec(raw);
        if (m) {
          const name = (m[2] ?? '').toLowerCase();
          tokens.push(m[1] === '/' ? { kind: 'close', name, raw } : { kind: 'open', name, raw });
          i = end + 1;
          continue;
        }
      }
    }
    if (c === '&') {
      const m = /^&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);/.exec(html.slice(i, i + 12));
      if (m) {
        tokens.push({ kind: 'text', raw: m[0], width: 1, ch: m[0] });
        i += m[0].length;
        continue;
      }
    }
    const cp = html.codePointAt(i) ?? 0;
    const width = cp > 0xffff ? 2 : 1;
    const raw = html.slice(i, i + width);
    tokens.push({ kind: 'text', raw, width, ch: raw });
    i += width;
  }
  return tokens;
}

/** Visible length of Telegram HTML in UTF-16 units (tags excluded, an entity counts as one). */
export function visibleLength(html: string): number {
  let n = 0;
  for (const t of tokenize(html)) if (t.kind === 'text') n += t.width;
  return n;
}

interface Cut {
  /** Token index the next piece starts at. */
  at: number;
  /** Tags open at the cut (their raw open tags). */
  stack: Array<{ name: string; raw: string }>;
  vis: number;
}

export function chunkHtml(html: string, limit: number = TELEGRAM_TEXT_LIMIT): string[] {
  if (limit < 2) throw new Error('chunk limit must be at least 2');
  const tokens = tokenize(html);
  const pieces: string[] = [];
  let start = 0;
  let startStack: Array<{ name: string; raw: string }> = [];

  while (start < tokens.length) {
    const stack = [...startStack];
    let vis = 0;
    let best: { outside?: Cut; inside?: Cut; space?: Cut } = {};
    let early: { outside?: Cut; inside?: Cut; space?: Cut } = {};
    let cut: Cut | undefined;
    let i = start;
    for (; i < tokens.length; i++) {
      const t = tokens[i];
      if (t === undefined) break;
      if (t.kind === 'open') {
        stack.push({ name: t.name, raw: t.raw });
        continue;
      }
      if (t.kind === 'close') {
        const at = stack.map((s) => s.name).lastIndexOf(t.name);
        if (at >= 0) stack.splice(at, 1);
        continue;
      }
      if (vis + t.width > limit) {
        cut = best.outside ?? best.inside ?? best.space ?? early.outside ?? early.inside ?? early.space ?? {
          at: i,
          stack: [...stack],
          vis,
        };
        break;
      }
      vis += t.width;
      const kind = t.ch === '\n' ? (stack.length === 0 ? 'outside' : 'inside') : t.ch === ' ' ? 'space' : undefined;
      if (kind) {
        const c: Cut = { at: i + 1, stack: [...stack], vis };
        if (vis >= limit / 2) best = { ...best, [kind]: c };
        else early = { ...early, [kind]: c };
      }
    }
    const end = cut ? cut.at : tokens.length;
    const endStack = cut ? cut.stack : stack;
    let piece = startStack.map((s) => s.raw).join('');
    for (let k = start; k < end; k++) piece += tokens[k]?.raw ?? '';
    // Close what is open at the cut, innermost first (tags in the piece are balanced by then).
    if (cut) piece += [...endStack].reverse().map((s) => `</${s.name}>`).join('');
    if (/\S/.test(visibleText(piece))) pieces.push(piece);
    if (!cut) break;
    start = end;
    startStack = endStack;
  }
  return pieces;
}

function visibleText(html: string): string {
  return tokenize(html)
    .map((t) => (t.kind === 'text' ? t.raw : ''))
    .join('');
}

/** Plain text (no parse_mode) in pieces of at most `limit` characters: the kit's `chunkText`. */
export function chunkPlain(text: string, limit: number = TELEGRAM_TEXT_LIMIT): string[] {
  return chunkText(text, limit);
}
