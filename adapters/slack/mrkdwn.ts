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
import { chunkMarkdown, parseMarkdown, type MarkdownTarget } from '../kit/markdown.js';
import { textDialectTarget } from '../kit/text-dialect.js';

/** Slack cuts `text` at 40,000 characters and advises 4,000 for readability. */
export const SLACK_TEXT_LIMIT = 3900;

const SAFE_URL = /^(https?:\/\/|mailto:)[^\s<>|]+$/i;

export function escapeMrkdwn(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function fence(value: string): string {
  // a ``` inside the code would end Slack's block early
  return '```\n' + escapeMrkdwn(value.replace(/```/g, '`\u200b``')) + '\n```';
}

const slackMrkdwn: MarkdownTarget = textDialectTarget({
  escape: escapeMrkdwn,
  fence, // language dropped: Slack ignores it
  heading: (inner) => `*${inner}*`,
  listMarker: ({ checked, ordered, number }) => (checked === true ? '☑' : checked === false ? '☐' : ordered ? `${number}.` : '•'),
  listIndent: '    ',
  marks: { strong: '*', emphasis: '_', delete: '~' },
  inlineCode: (value) => `\`${escapeMrkdwn(value.replace(/`/g, "'"))}\``,
  link: (url, raw) => {
    const text = raw.replace(/[|<>]/g, ' ').trim();
    if (SAFE_URL.test(url)) return text === '' || text === url ? `<${url}>` : `<${url}|${escapeMrkdwn(text)}>`;
    return `${escapeMrkdwn(text)} (${escapeMrkdwn(url)})`;
  },
  image: (url, alt) => (SAFE_URL.test(url) ? `<${url}|${escapeMrkdwn(alt || 'image')}>` : escapeMrkdwn(`${alt} (${url})`)),
  thematicBreak: '──────────',
});

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
