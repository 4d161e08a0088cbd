import { AdapterError } from './errors.js';
/**
 * Plain text in pieces for a platform's message limit.
 *
 * Contract: `chunkText(text, limit)` gives pieces of at most `limit` UTF-16 units, cut preferably
 * at a line break in the second half of a piece, then at a space, then anywhere (never inside a
 * surrogate pair). The line break or space at a cut is dropped; whitespace-only pieces are dropped;
 * otherwise the pieces joined give back the text.
 */

export function chunkText(text: string, limit: number): string[] {
  if (limit < 2) throw new AdapterError('bad_input', 'chunk limit must be at least 2');
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const window = rest.slice(0, limit + 1);
    let at = window.lastIndexOf('\n', limit);
    if (at < limit / 2) at = Math.max(at, window.lastIndexOf(' ', limit));
    if (at <= 0) {
      at = limit;
      // never split a surrogate pair
      const code = rest.charCodeAt(at - 1);
      if (code >= 0xd800 && code <= 0xdbff) at--;
      pieces.push(rest.slice(0, at));
      rest = rest.slice(at);
    } else {
      pieces.push(rest.slice(0, at));
      rest = rest.slice(at + 1);
    }
  }
  pieces.push(rest);
  return pieces.filter((p) => /\S/.test(p));
}
