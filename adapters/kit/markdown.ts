/**
 * Markdown as models write it, parsed ONCE into an mdast tree (micromark + GFM: tables, strike,
 * task lists, autolinks), then rendered per platform and cut into messages on the tree.
 *
 * Contract:
 * - `parseMarkdown(md)` never throws; every input gives a tree (CommonMark + GFM rules).
 * - A `MarkdownTarget` renders a tree (a Root whose children are some of the document's blocks) to
 *   the platform's text, and measures rendered text as the platform counts its limit.
 * - `chunkMarkdown(doc, target, limit)` gives messages each measuring at most `limit`. Blocks are
 *   kept whole when they fit; a block too long for one message is split on the tree: a code block
 *   into several complete code blocks (same language) at line breaks, a paragraph between words
 *   (styles closed and reopened), never inside a link, an inline code span or an entity unless that
 *   one piece alone is over the limit; lists between items, quotes between their blocks. Nothing is
 *   dropped: the pieces' text, joined, is the whole answer's text (whitespace at cuts aside).
 * - `blockSeparator` keeps the author's spacing: blocks on adjacent lines are joined by one line
 *   break, blocks with blank lines between them by one blank line.
 */
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmFromMarkdown } from 'mdast-util-gfm';
import { gfm } from 'micromark-extension-gfm';
import type { Code, Node, Parent, Paragraph, PhrasingContent, Root, RootContent, Text } from 'mdast';
import { cutBefore } from './attachments.js';
import { AdapterError } from './errors.js';

export interface ParsedMarkdown {
  root: Root;
  /** The text the tree was parsed from (positions are offsets into it). */
  source: string;
}

export interface MarkdownTarget {
  render(root: Root, source: string): string;
  measure(rendered: string): number;
}

/**
 * Built once: the extensions are plain construct tables and handlers (per-document state lives in
 * the parser and compiler). Building them per call cost 0.37 ms of the 0.55 ms a short answer's
 * parse took, on every chat message.
 */
const PARSE_OPTIONS = { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] };

export function parseMarkdown(md: string): ParsedMarkdown {
  const source = md.replace(/\r\n?/g, '\n');
  const root = plainTree(source) ?? fromMarkdown(source, PARSE_OPTIONS);
  return { root, source };
}

/**
 * A line of words and plain punctuation, which no markdown construct can start or contain: it
 * begins with a letter (no list marker, indent or heading) and holds no character any construct
 * needs (`*_~\`[]<>&#|!\\=+-/@`, tabs), no `www.` (a GFM autolink) and no trailing space (a hard
 * break). Blank lines between such lines separate paragraphs.
 */
const PLAIN_LINE = /^\p{L}[\p{L}\p{N} ,.;:?'"()]*$/u;

/**
 * The tree micromark gives a text of plain lines, built directly: most chat answers are a sentence
 * or two, and micromark sets up its parser (every construct of CommonMark and GFM) at every call,
 * about 80 µs for "ok" on the chat path. Undefined when any line is not plain. (The equivalence
 * with fromMarkdown is tested on random texts: test/adapters/kit/markdown-plain.test.ts.)
 */
export function plainTree(source: string): Root | undefined {
  if (/www\./i.test(source)) return undefined;
  const lines = source.split('\n');
  for (const l of lines) if (l !== '' && (!PLAIN_LINE.test(l) || l.endsWith(' '))) return undefined;
  const point = (line: number, column: number, offset: number) => ({ line, column, offset });
  const children: Paragraph[] = [];
  let offset = 0;
  let open: { start: number; line: number; text: string[] } | undefined;
  const close = (endLine: number, endOffset: number) => {
    if (!open) return;
    const last = open.text[open.text.length - 1]!;
    const position = () => ({ start: point(open!.line, 1, open!.start), end: point(endLine, last.length + 1, endOffset) });
    children.push({ type: 'paragraph', children: [{ type: 'text', value: open.text.join('\n'), position: position() }], position: position() });
    open = undefined;
  };
  lines.forEach((l, i) => {
    if (l === '') close(i, offset - 1);
    else if (open) open.text.push(l);
    else open = { start: offset, line: i + 1, text: [l] };
    offset += l.length + 1;
  });
  close(lines.length, source.length);
  const lastLine = lines[lines.length - 1]!;
  return { type: 'root', children, position: { start: point(1, 1, 0), end: point(lines.length, lastLine.length + 1, source.length) } };
}

/** "\n" between blocks on adjacent source lines, "\n\n" otherwise. */
export function blockSeparator(prev: Node, next: Node): string {
  const end = prev.position?.end.line;
  const start = next.position?.start.line;
  return end !== undefined && start !== undefined && start - end <= 1 ? '\n' : '\n\n';
}

/** The source text of a node (empty for synthetic nodes). */
export function sourceOf(node: Node, source: string): string {
  const p = node.position;
  return p?.start.offset !== undefined && p.end.offset !== undefined ? source.slice(p.start.offset, p.end.offset) : '';
}

/** Plain text of a node's leaves (for fallbacks). */
export function textOf(node: Node): string {
  if ('value' in node && typeof node.value === 'string') return node.value;
  if ('children' in node && Array.isArray(node.children)) return (node.children as Node[]).map(textOf).join('');
  if ('alt' in node && typeof node.alt === 'string') return node.alt;
  return '';
}

export function chunkMarkdown(doc: ParsedMarkdown, target: MarkdownTarget, limit: number): string[] {
  if (limit < 16) throw new AdapterError('bad_input', 'chunk limit must be at least 16');
  const c = new Chunker(doc.source, target, limit);
  const units = doc.root.children.flatMap((b) => c.fit(b));
  return c.pack(units).filter((s) => /\S/.test(s));
}

class Chunker {
  constructor(
    private readonly source: string,
    private readonly target: MarkdownTarget,
    private readonly limit: number,
  ) {}

  private size(blocks: RootContent[]): number {
    return this.target.measure(this.render(blocks));
  }

  private render(blocks: RootContent[]): string {
    return this.target.render({ type: 'root', children: blocks }, this.source);
  }

  private fits(blocks: RootContent[]): boolean {
    return this.size(blocks) <= this.limit;
  }

  /** Consecutive blocks into messages (greedy; each unit fits alone). */
  pack(units: RootContent[]): string[] {
    const out: string[] = [];
    let group: RootContent[] = [];
    for (const u of units) {
      if (group.length > 0 && this.fits([...group, u])) {
        group.push(u);
        continue;
      }
      if (group.length > 0) out.push(this.render(group));
      group = [u];
    }
    if (group.length > 0) out.push(this.render(group));
    return out;
  }

  /** A block as one or more blocks that each fit a message. */
  fit(block: RootContent): RootContent[] {
    if (this.fits([block])) return [block];
    switch (block.type) {
      case 'code':
        return this.splitCode(block);
      case 'paragraph':
      case 'heading':
        return this.splitPhrasing(block);
      case 'list': {
        if (block.children.length > 1) {
          const start = block.start ?? 1;
          return block.children.flatMap((item, i) => this.fit({ ...block, start: start + i, children: [item] } as RootContent));
        }
        // One item too long: its blocks, without the bullet.
        return (block.children[0]?.children ?? []).flatMap((b) => this.fit(b as RootContent));
      }
      case 'blockquote':
        if (block.children.length > 1) return block.children.flatMap((b) => this.fit({ ...block, children: [b] }));
        return (block.children as RootContent[]).flatMap((b) => this.fit(b));
      case 'table': {
        const code: Code = { type: 'code', value: sourceOf(block, this.source), lang: null, meta: null };
        if (block.position) code.position = block.position;
        return this.splitCode(code);
      }
      default: {
        const text = sourceOf(block, this.source) || textOf(block);
        const p: Paragraph = { type: 'paragraph', children: [{ type: 'text', value: text }] };
        if (block.position) p.position = block.position;
        return this.splitPhrasing(p);
      }
    }
  }

  private splitCode(code: Code): RootContent[] {
    const make = (value: string): Code => ({ ...code, value });
    const lines = code.value.split('\n').flatMap((line) => this.splitLong(line, (v) => this.fits([make(v)])));
    return this.packPieces(lines, '\n', (v) => make(v));
  }

  /** Cuts a string no piece of which may be longer than fits, surrogate-safe, keeping every character. */
  private splitLong(s: string, fits: (v: string) => boolean): string[] {
    if (fits(s)) return [s];
    const out: string[] = [];
    let rest = s;
    while (rest !== '' && !fits(rest)) {
      let lo = 1;
      let hi = rest.length;
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (fits(cutBefore(rest, mid))) lo = mid;
        else hi = mid - 1;
      }
      const head = cutBefore(rest, lo) || rest.slice(0, 2);
      out.push(head);
      rest = rest.slice(head.length);
    }
    if (rest !== '') out.push(rest);
    return out;
  }

  /** Greedy join of string pieces into as few fitting blocks as possible. */
  private packPieces(pieces: string[], joiner: string, make: (v: string) => RootContent): RootContent[] {
    const out: RootContent[] = [];
    let current: string | undefined;
    for (const piece of pieces) {
      const joined = current === undefined ? piece : current + joiner + piece;
      if (current === undefined || this.fits([make(joined)])) {
        current = joined;
        continue;
      }
      out.push(make(current));
      current = piece;
    }
    if (current !== undefined) out.push(make(current));
    return out;
  }

  /** A paragraph or heading into several, between words; links and code spans kept whole. */
  private splitPhrasing(block: Paragraph | Extract<RootContent, { type: 'heading' }>): RootContent[] {
    const atoms: Atom[] = [];
    this.atomize(block.children, [], atoms, block);
    const build = (list: Atom[]): RootContent => ({ ...block, children: rebuild(list) }) as RootContent;
    const out: RootContent[] = [];
    let group: Atom[] = [];
    for (const a of atoms) {
      if (group.length === 0 || this.fits([build([...group, a])])) {
        group.push(a);
        continue;
      }
      out.push(build(group));
      group = isBlank(a) ? [] : [a];
    }
    if (group.length > 0) out.push(build(group));
    return out;
  }

  private atomize(nodes: PhrasingContent[], chain: Parent[], out: Atom[], block: RootContent): void {
    const alone = (leaf: PhrasingContent) => this.fits([{ ...block, children: rebuild([{ chain, leaf }]) } as RootContent]);
    for (const node of nodes) {
      if (node.type === 'text') {
        for (const word of node.value.match(/\S+\s*|\s+/g) ?? []) {
          for (const part of this.splitLong(word, (v) => alone({ ...node, value: v }))) {
            out.push({ chain, leaf: { ...node, value: part } });
          }
        }
      } else if (node.type === 'strong' || node.type === 'emphasis' || node.type === 'delete') {
        this.atomize(node.children, [...chain, node], out, block);
      } else if ((node.type === 'link' || node.type === 'linkReference') && !alone(node)) {
        this.atomize(node.children, [...chain, node], out, block);
      } else if (node.type === 'inlineCode' && !alone(node)) {
        for (const part of this.splitLong(node.value, (v) => alone({ ...node, value: v }))) {
          out.push({ chain, leaf: { ...node, value: part } });
        }
      } else {
        out.push({ chain, leaf: node });
      }
    }
  }
}

interface Atom {
  /** The styles and link around the leaf (original nodes; cloned on rebuild). */
  chain: Parent[];
  leaf: PhrasingContent;
}

const isBlank = (a: Atom) => a.leaf.type === 'text' && (a.leaf as Text).value.trim() === '';

/** Phrasing content from atoms, reopening each style or link around the atoms that share it. */
function rebuild(atoms: Atom[]): PhrasingContent[] {
  const root: PhrasingContent[] = [];
  // open[i] = [original, clone] for chain depth i
  let open: Array<[Parent, Parent]> = [];
  for (const a of atoms) {
    let same = 0;
    while (same < open.length && same < a.chain.length && open[same]?.[0] === a.chain[same]) same++;
    open = open.slice(0, same);
    for (let i = same; i < a.chain.length; i++) {
      const original = a.chain[i] as Parent;
      const clone = { ...original, children: [] } as Parent;
      const parent = open[i - 1]?.[1];
      if (parent) (parent.children as Node[]).push(clone);
      else root.push(clone as unknown as PhrasingContent);
      open.push([original, clone]);
    }
    const top = open[open.length - 1]?.[1];
    if (top) (top.children as Node[]).push(a.leaf);
    else root.push(a.leaf);
  }
  return root;
}
