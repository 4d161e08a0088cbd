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
import { chunkMarkdown, parseMarkdown, type MarkdownTarget } from '../kit/markdown.js';
import { textDialectTarget } from '../kit/text-dialect.js';

export const DISCORD_TEXT_LIMIT = 2000;

const SAFE_URL = /^https?:\/\/[^\s<>()]+$/i;

export function escapeDiscord(s: string): string {
  return s.replace(/[\\*_~`|<[\]]/g, '\\$&').replace(/^([ \t]*)([#>-])/gm, '$1\\$2');
}

export function fence(value: string, lang?: string | null): string {
  // a ``` inside the code would end the block early
  const safeLang = lang && /^[A-Za-z0-9_+.-]{1,20}$/.test(lang) ? lang : '';
  return '```' + safeLang + '\n' + value.replace(/```/g, '`\u200b``') + '\n```';
}

const discordMarkdown: MarkdownTarget = textDialectTarget({
  escape: escapeDiscord,
  fence,
  heading: (inner, depth) => (depth <= 3 ? `${'#'.repeat(depth)} ${inner}` : `**${inner}**`),
  listMarker: ({ checked, ordered, number }) => (checked === true ? '- ☑' : checked === false ? '- ☐' : ordered ? `${number}.` : '-'),
  listIndent: '  ',
  marks: { strong: '**', emphasis: '_', delete: '~~' },
  inlineCode: (value) => (value.includes('`') ? `\`\` ${value.replace(/``/g, '`\u200b`')} \`\`` : `\`${value}\``),
  link: (url, raw) => {
    const text = raw.replace(/[[\]]/g, ' ').trim();
    if (SAFE_URL.test(url)) return text === '' || text === url ? url : `[${escapeDiscord(text)}](${url})`;
    return `${escapeDiscord(text)} (${escapeDiscord(url)})`;
  },
  image: (url, alt) => (SAFE_URL.test(url) ? `[${escapeDiscord(alt || 'image')}](${url})` : escapeDiscord(`${alt} (${url})`)),
  thematicBreak: '──────────',
});

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
