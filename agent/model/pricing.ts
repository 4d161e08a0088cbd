/**
 * Model prices and usage accounting.
 *
 * Contract:
 * - `priceUsage(model, tokens)` turns the token counts of one model response into a `Usage` with its
 *   USD cost. A model with no entry here gets `costKnown: false` and `costUSD: 0`: callers must show
 *   "cost unknown", never "free".
 * - `addUsage(a, b)` sums two usages; `costKnown` stays false once any part was unknown (sticky), and
 *   the sum's costUSD is then 0 like any unknown usage.
 * - Model ids match an entry exactly, or as the entry plus a snapshot suffix: a date (`-20250929`,
 *   `@20251101`, Bedrock's `-20250929-v1:0`) or `-latest`. Provider prefixes (`anthropic.`,
 *   `us.anthropic.`, `anthropic/`) are ignored. A NEW version (claude-opus-4-9) does not inherit
 *   an older entry's price: it reads as unknown until someone adds it here.
 * - `inputTokens` is what the API reports as `input_tokens`, which excludes cache reads and writes;
 *   cache writes are priced at the 5-minute rate (the only TTL Gatehouse asks for).
 *
 * Prices in USD per million tokens, from platform.claude.com/docs/about-claude/pricing.
 */
import type { Usage } from '../events.js';

export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

interface Rates {
  input: number;
  output: number;
  /** 5-minute cache write. */
  cacheWrite: number;
  cacheRead: number;
}

export interface ModelPrice extends Rates {
  /** Some models bill a whole request at other rates once its prompt exceeds a size. */
  longPrompt?: { overTokens: number; rates: Rates };
}

const r = (input: number, output: number, cacheWrite: number, cacheRead: number): Rates => ({
  input,
  output,
  cacheWrite,
  cacheRead,
});

const OPUS_45 = r(5, 25, 6.25, 0.5);
const OPUS_4 = r(15, 75, 18.75, 1.5);
const SONNET_4 = r(3, 15, 3.75, 0.3);
const SONNET_5 = r(2, 10, 2.5, 0.2);
const FABLE_5 = r(10, 50, 12.5, 1);
const FABLE_51 = r(10, 50, 12.5, 0.25);
// Sonnet 4 and 4.5 with the 1M context: a prompt over 200k tokens bills the whole request higher.
const SONNET_4_LONG = { overTokens: 200_000, rates: r(6, 22.5, 7.5, 0.6) };

const PRICES: Readonly<Record<string, ModelPrice>> = {
  'claude-fable-5-1': FABLE_51,
  'claude-mythos-5-1': FABLE_51,
  'claude-fable-5': FABLE_5,
  'claude-mythos-5': FABLE_5,
  'claude-opus-5-5': r(4, 20, 5, 0.2),
  'claude-opus-5': OPUS_45,
  'claude-opus-4-8': OPUS_45,
  'claude-opus-4-7': OPUS_45,
  'claude-opus-4-6': OPUS_45,
  'claude-opus-4-5': OPUS_45,
  'claude-opus-4-1': OPUS_4,
  'claude-opus-4-0': OPUS_4,
  'claude-opus-4': OPUS_4,
  'claude-sonnet-5-5': SONNET_5,
  'claude-sonnet-5': SONNET_5,
  'claude-sonnet-4-6': SONNET_4,
  'claude-sonnet-4-5': { ...SONNET_4, longPrompt: SONNET_4_LONG },
  'claude-sonnet-4-0': { ...SONNET_4, longPrompt: SONNET_4_LONG },
  'claude-sonnet-4': { ...SONNET_4, longPrompt: SONNET_4_LONG },
  'claude-haiku-5-5': {
    ...r(0.1, 0.5, 0.125, 0.01),
    longPrompt: { overTokens: 100_000, rates: r(0.5, 2.5, 0.625, 0.05) },
  },
  'claude-haiku-4-5': r(1, 5, 1.25, 0.1),
  'claude-3-7-sonnet': SONNET_4,
  'claude-3-5-sonnet': SONNET_4,
  'claude-3-5-haiku': r(0.8, 4, 1, 0.08),
  'claude-3-opus': OPUS_4,
  'claude-3-haiku': r(0.25, 1.25, 0.3, 0.03),
};

// Longest key first, so claude-opus-4-5 is tried before claude-opus-4.
const KEYS = Object.keys(PRICES).sort((a, b) => b.length - a.length);
const PROVIDER_PREFIX = /^(?:[a-z]{2,4}\.)?anthropic[./]/;
const SNAPSHOT_SUFFIX = /^(?:[-@]\d{8}(?:$|[-:])|-latest$)/;

/** The price entry for a model id, or undefined when the table has none. */
export function priceFor(model: string): ModelPrice | undefined {
  const id = model.trim().toLowerCase().replace(PROVIDER_PREFIX, '');
  for (const key of KEYS) {
    if (id === key) return PRICES[key];
    if (id.startsWith(key) && SNAPSHOT_SUFFIX.test(id.slice(key.length))) return PRICES[key];
  }
  return undefined;
}

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUSD: 0, costKnown: true };
}

export function priceUsage(model: string, tokens: TokenCounts): Usage {
  const cacheReadTokens = tokens.cacheReadTokens ?? 0;
  const cacheWriteTokens = tokens.cacheWriteTokens ?? 0;
  const counts = { inputTokens: tokens.inputTokens, outputTokens: tokens.outputTokens, cacheReadTokens, cacheWriteTokens };
  const price = priceFor(model);
  if (!price) return { ...counts, costUSD: 0, costKnown: false };
  const promptTokens = tokens.inputTokens + cacheReadTokens + cacheWriteTokens;
  const rates = price.longPrompt && promptTokens > price.longPrompt.overTokens ? price.longPrompt.rates : price;
  const micro = tokens.inputTokens * rates.input + tokens.outputTokens * rates.output + cacheWriteTokens * rates.cacheWrite + cacheReadTokens * rates.cacheRead;
  return { ...counts, costUSD: micro / 1_000_000, costKnown: true };
}

export function addUsage(a: Usage, b: Usage): Usage {
  const costKnown = a.costKnown && b.costKnown;
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    costUSD: costKnown ? a.costUSD + b.costUSD : 0,
    costKnown,
  };
}
