/**
 * parseMarkdown's plain-text path (adapters/kit/markdown.ts) gives exactly the tree micromark gives,
 * positions included, on random texts of words, plain punctuation and line breaks; and every text
 * that holds anything markdown could read (a list marker, an autolink, a trailing space...) takes
 * micromark's path, which the same comparison shows.
 */
import { describe, expect, it } from '@jest/globals';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmFromMarkdown } from 'mdast-util-gfm';
import { gfm } from 'micromark-extension-gfm';
import { parseMarkdown, plainTree } from '../../../adapters/kit/markdown.js';
import { seededRandom } from '../../helpers/random.js';

const OPTIONS = { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] };
const reference = (md: string) => fromMarkdown(md.replace(/\r\n?/g, '\n'), OPTIONS);

describe('parseMarkdown on plain text', () => {
  it('matches micromark on random texts of words, punctuation, blank lines and almost-markdown', () => {
    const random = seededRandom();
    // Mostly what plain answers hold, sometimes something markdown reads (then micromark's path).
    const plain = ['a', 'Word', 'é', 'Ж', '日本', '1', '42', ' ', ' ', ',', '.', ';', ':', '?', "'", '"', '(', ')', '\n', '\n\n', '\r\n'];
    const marked = [
      'www.x.org',
      'WWW.',
      '1. ',
      '- ',
      '* ',
      '+ ',
      '# ',
      '> ',
      '_',
      '~',
      '`',
      '|',
      '<',
      '&amp;',
      '[',
      ']',
      '!',
      '=',
      '-',
      '/',
      '@',
      '\\',
      '\t',
      ' \n',
      '\u00a0',
      '  ',
    ];
    let direct = 0;
    for (let i = 0; i < 3000; i++) {
      const n = random.int(0, 15);
      let md = '';
      for (let k = 0; k < n; k++) md += random.int(0, 10) === 0 ? marked[random.int(0, marked.length)] : plain[random.int(0, plain.length)];
      if (plainTree(md.replace(/\r\n?/g, '\n'))) direct++;
      expect({ md, tree: parseMarkdown(md).root }).toEqual({ md, tree: reference(md) });
    }
    // Both paths were compared, each many times.
    expect(direct).toBeGreaterThan(300);
    expect(direct).toBeLessThan(2700);
  });

  it("plain answers take the direct path; anything markdown could read takes micromark's", () => {
    for (const md of ['ok', 'Hello there.\nSecond line, with (asides): yes?', 'a\n\nb', '', 'a\n\n\n\nb\n', 'x\n', 'Über 3 Tage; "quoted" and it\'s fine.']) {
      expect(plainTree(md)).toBeDefined();
      expect(parseMarkdown(md).root).toEqual(reference(md));
    }
    for (const md of ['1. one', '- item', 'see www.example.com', 'a  \nb', ' indented', 'mail me@x.org', 'x = 1', '*a*', 'Title\n===', 'http://x'])
      expect(plainTree(md)).toBeUndefined();
  });
});
