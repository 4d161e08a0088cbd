import { htmlToPlain, markdownToTelegramHtml } from '../../../adapters/telegram/format.js';
import { parseTelegramHtml } from '../../fakes/telegram.js';

describe('markdownToTelegramHtml', () => {
  const table: Array<[string, string, string]> = [
    ['bold', 'a **bold** b', 'a <b>bold</b> b'],
    ['bold underscores', '__strong__', '<b>strong</b>'],
    ['italic star', 'an *italic* word', 'an <i>italic</i> word'],
    ['italic underscore', 'an _italic_ word', 'an <i>italic</i> word'],
    ['snake_case stays', 'call my_func_name now', 'call my_func_name now'],
    ['multiplication stays', '2*3*4 = 24', '2*3*4 = 24'],
    ['strike', '~~gone~~', '<s>gone</s>'],
    ['inline code', 'run `ls -la` here', 'run <code>ls -la</code> here'],
    ['inline code escapes', 'use `a<b && c>d`', 'use <code>a&lt;b &amp;&amp; c&gt;d</code>'],
    ['no markdown inside code', '`**not bold**`', '<code>**not bold**</code>'],
    ['fenced with language', '```ts\nconst x = a < b;\n```', '<pre><code class="language-ts">const x = a &lt; b;</code></pre>'],
    ['fenced without language', '```\n<div> & </div>\n```', '<pre>&lt;div&gt; &amp; &lt;/div&gt;</pre>'],
    ['unterminated fence runs to the end', '```sh\necho hi', '<pre><code class="language-sh">echo hi</code></pre>'],
    ['link', 'see [the docs](https://example.com/a?b=1&c=2)', 'see <a href="https://example.com/a?b=1&amp;c=2">the docs</a>'],
    ['link with bold label', '[**big** deal](https://x.io)', '<a href="https://x.io"><b>big</b> deal</a>'],
    ['unsafe link written out', '[click](javascript:alert(1))', 'click (javascript:alert(1))'],
    ['heading', '## Results <now>', '<b>Results &lt;now&gt;</b>'],
    ['bullets', '- one\n* two\n  + nested', '• one\n• two\n  • nested'],
    ['numbered', '1. first\n2) second', '1. first\n2. second'],
    ['tasks', '- [ ] todo\n- [x] done', '☐ todo\n☑ done'],
    ['quote', '> quoted **text**\n> more', '<blockquote>quoted <b>text</b>\nmore</blockquote>'],
    ['escaping text', 'if a < b && c > d then', 'if a &lt; b &amp;&amp; c &gt; d then'],
    ['html in markdown is text', '<script>x</script>', '&lt;script&gt;x&lt;/script&gt;'],
    ['nested bold italic', '**bold _and italic_ here**', '<b>bold <i>and italic</i> here</b>'],
    ['triple star (CommonMark nests emphasis outside)', '***both***', '<i><b>both</b></i>'],
    ['unclosed bold is literal', 'a **b c', 'a **b c'],
    ['backslash escape', '\\*not italic\\*', '*not italic*'],
    ['table as pre', '| a | b |\n|---|---|\n| 1 | <2> |', '<pre>| a | b |\n|---|---|\n| 1 | &lt;2&gt; |</pre>'],
    ['blank lines collapse', 'a\n\n\n\nb', 'a\n\nb'],
  ];

  test.each(table)('%s', (_name, md, html) => {
    expect(markdownToTelegramHtml(md)).toBe(html);
  });

  test.each(table)('%s: Telegram accepts the result', (_name, md) => {
    expect(parseTelegramHtml(markdownToTelegramHtml(md))).toMatchObject({ ok: true });
  });

  test('crossed or hostile markdown still gives HTML Telegram parses', () => {
    const nasty = [
      '**a *b** c*',
      '*a **b* c**',
      '_a __b_ c__ ~~d **e~~ f**',
      '[a **b](https://x.io) c**',
      '`a **b` c**',
      '<b>not a tag</b> & &amp; &#60;',
      '* * * ** __ ~~ ` ``` [ ] ( )',
      '*'.repeat(500) + 'x' + '_'.repeat(500),
    ];
    for (const md of nasty) {
      const r = parseTelegramHtml(markdownToTelegramHtml(md));
      expect({ md, r }).toEqual({ md, r: expect.objectContaining({ ok: true }) });
    }
  });

  test('the visible text keeps every word of the input', () => {
    const md = '# Title\nSome **bold**, `code` and [a link](https://e.x/y).\n\n```py\nprint("<hi>")\n```';
    expect(htmlToPlain(markdownToTelegramHtml(md))).toBe('Title\nSome bold, code and a link (https://e.x/y).\n\nprint("<hi>")');
  });
});

describe('htmlToPlain', () => {
  test('decodes entities once and keeps link targets', () => {
    expect(htmlToPlain('<b>a &amp;lt; b</b> <a href="https://x.io/?a=1&amp;b=2">here</a> <a href="https://y.io">https://y.io</a>')).toBe(
      'a &lt; b here (https://x.io/?a=1&b=2) https://y.io',
    );
  });
});
