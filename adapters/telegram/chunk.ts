/**
 * Splitting text for Telegram's 4,096-character message limit.
 *
 * Contract:
 * - `visibleLength(html)`: the visible length of Telegram HTML in UTF-16 units, as Telegram counts it
 *   (the kit's markdown cutter measures answers with it).
 * - `chunkPlain(text, limit)`: plain text (no parse_mode) in pieces of at most `limit`, via the kit.
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

/** Plain text (no parse_mode) in pieces of at most `limit` characters: the kit's `chunkText`. */
export function chunkPlain(text: string, limit: number = TELEGRAM_TEXT_LIMIT): string[] {
  return chunkText(text, limit);
}
