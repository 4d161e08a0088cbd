/**
 * Fitting a transcript into the model's context window.
 *
 * Trimming drops the oldest whole exchanges: it only cuts at a user message that starts a turn
 * (one holding no tool_result), so a tool_use is never separated from its tool_result and the
 * transcript still starts with a user turn. The most recent exchange is always kept.
 * Token counts are estimates (about 4 characters a token; an image about 1,600 tokens): the point is
 * to stay clear of the limit, not to count exactly.
 */
import type { ContentBlock, Message } from './messages.js';
import { isStored, perStoredMessage } from './transcript-diff.js';

const IMAGE_TOKENS = 1600;

/** Sizes of messages, remembered for stored ones (agent/context/transcript-diff.ts). */
const sizeOf = perStoredMessage((m): { chars: number; images: number } => {
  let chars = 0;
  let images = 0;
  for (const b of m.content) ({ chars, images } = countBlock(b, chars, images));
  return { chars, images };
});

/**
 * Running totals over the leading frozen messages of a long transcript, by its first message: the
 * same transcript measured again after appends (twice per model call) costs a pointer comparison
 * per message and the sizes of the new ones, instead of a size lookup per message.
 */
interface Prefix {
  items: Message[];
  chars: number[];
  images: number[];
}
const prefixes = new WeakMap<Message, Prefix>();
/** Shorter lists (slices of a tail, classifier prompts) are summed directly. */
const PREFIX_MIN = 64;

export function estimateTokens(messages: readonly Message[]): number {
  const n = messages.length;
  let chars = 0;
  let images = 0;
  let i = 0;
  let p: Prefix | undefined;
  if (n >= PREFIX_MIN && isStored(messages[0]!)) {
    const first = messages[0]!;
    p = prefixes.get(first);
    if (!p) prefixes.set(first, (p = { items: [], chars: [], images: [] }));
    const limit = Math.min(p.items.length, n);
    while (i < limit && p.items[i] === messages[i]) i++;
    if (i > 0) {
      chars = p.chars[i - 1]!;
      images = p.images[i - 1]!;
    }
    // Extended (after a divergence: replaced) only by messages whose size is final (frozen).
    if (i < n) p.items.length = p.chars.length = p.images.length = i;
  }
  for (; i < n; i++) {
    const m = messages[i]!;
    const s = sizeOf(m);
    chars += s.chars;
    images += s.images;
    if (p && p.items.length === i && isStored(m)) {
      p.items.push(m);
      p.chars.push(chars);
      p.images.push(images);
    }
  }
  return Math.ceil(chars / 4) + images * IMAGE_TOKENS;
}

function countBlock(b: ContentBlock, chars: number, images: number): { chars: number; images: number } {
  switch (b.type) {
    case 'text':
      return { chars: chars + b.text.length, images };
    case 'image':
      return { chars, images: images + 1 };
    case 'tool_use':
      return { chars: chars + b.name.length + JSON.stringify(b.input ?? {}).length, images };
    case 'tool_result':
      if (typeof b.content === 'string') return { chars: chars + b.content.length, images };
      for (const c of b.content) ({ chars, images } = countBlock(c, chars, images));
      return { chars, images };
    case 'thinking':
      return { chars: chars + b.thinking.length + b.signature.length, images };
    case 'redacted_thinking':
      return { chars: chars + b.data.length, images };
    case 'server_tool_use':
      return { chars: chars + b.name.length + JSON.stringify(b.input ?? {}).length, images };
    case 'web_search_tool_result':
      return { chars: chars + JSON.stringify(b.content ?? '').length, images };
  }
}

function startsTurn(m: Message): boolean {
  return m.role === 'user' && !m.content.some((b) => b.type === 'tool_result');
}

/** Returns the newest suffix of `messages` that starts a turn and fits `budgetTokens`. */
export function fitToContext(messages: readonly Message[], budgetTokens: number): Message[] {
  if (estimateTokens(messages) <= budgetTokens) return [...messages];
  const cuts: number[] = [];
  messages.forEach((m, i) => {
    if (startsTurn(m)) cuts.push(i);
  });
  for (const cut of cuts) {
    const rest = messages.slice(cut);
    if (estimateTokens(rest) <= budgetTokens) return rest;
  }
  const last = cuts[cuts.length - 1];
  return last === undefined ? [...messages] : messages.slice(last);
}

/** Context windows by model prefix, in tokens. Unknown models get the common 200k. */
export function contextWindow(model: string): number {
  if (/^claude-(sonnet-4|opus-4)/.test(model) && model.includes('1m')) return 1_000_000;
  return 200_000;
}
