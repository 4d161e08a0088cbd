/**
 * Finding a secret value in text, whatever common encoding it went out in.
 *
 * Contract of `SecretMatcher` (built once per secret set, then used for every text):
 * - Secrets shorter than MIN_SECRET_CHARS are ignored: they would match ordinary text by chance.
 * - Comparison is on a normal form of both sides: ASCII letters and digits only, case-folded. So a
 *   secret is found with separators inserted anywhere (`sk-a nt-…`, `["sk-a","nt-…"]`), upper- or
 *   lower-cased, and base64's std and url-safe alphabets (and its `=` padding) look the same.
 * - Forms of each secret that are looked for (precomputed): the secret, reversed, hex, base64 and
 *   base32 of the secret and of its lower- and upper-cased spellings, each at every byte alignment
 *   (the stable middle of the encoding, so a secret embedded in a longer base64 or base32 string is
 *   found too). A well-known vendor prefix (`sk-ant-api03-`, `xoxb-`, a Telegram bot id, a Discord
 *   token's base64 user id...) is cut first: it is the same for everyone and public.
 * - The text is looked at as written and decoded: percent-decoding (once, and to the end, so stacked
 *   layers are undone), JSON/JS/HTML escapes (`\u0073`, `\x73`, `&#x73;`), `0x` byte prefixes removed.
 * - `chunks: true` (the web tools): a form matches when ANY CHUNK_CHARS-long run of it appears, so a
 *   secret cut into pieces still trips on each piece of 12+ characters. `chunks: false` (environment
 *   values): the whole form must appear.
 * - `find` returns what matched (the form and the decoding), never the secret.
 * - Not caught: a secret sent in pieces shorter than CHUNK_CHARS across separate calls, chains of
 *   encodings beyond the above (base64 of hex...), encryption, any transformation the model computes.
 */

/** No real credential is shorter; shorter values would match ordinary text. */
export const MIN_SECRET_CHARS = 8;
/** A run of this many normalized characters of a secret's form counts as the secret. */
export const CHUNK_CHARS = 12;

export type SecretForm = 'verbatim' | 'reversed' | 'hex' | 'base64' | 'base32';

export interface SecretHit {
  form: SecretForm;
  /** How the text was decoded before the match: 'as written', 'percent-decoded', 'unescaped'... */
  decoding: string;
}

/** Letters and digits only, lower-cased. */
function normalize(s: string): string {
  return s.replace(/[^A-Za-z0-9]+/g, '').toLowerCase();
}

/** Public, shared prefixes of well-known credential formats (cut before matching). */
const VENDOR_PREFIXES: readonly RegExp[] = [
  /^sk-ant-[a-z]+\d*-/i, // Anthropic
  /^sk-(proj-|svcacct-|admin-)?/i, // OpenAI and similar
  /^xox[a-z]-(\d+-)*/i, // Slack bot/user tokens (the team and user ids after it are public)
  /^xapp-\d+-[A-Z0-9]+-\d+-/i, // Slack app-level tokens
  /^\d{5,}:/, // Telegram: the numeric bot id
  /^[MNO][A-Za-z0-9_-]{20,30}\.(?=[A-Za-z0-9_-]{5,7}\.[A-Za-z0-9_-]{27,}$)/, // Discord: base64 of the bot's id
  /^(gh[pousr]_|github_pat_|glpat-|npm_|hf_|sk_live_|rk_live_|sk_test_)/i,
];

/** The part of a secret that is really secret: its value without a public vendor prefix. */
export function secretBody(secret: string): string {
  for (const re of VENDOR_PREFIXES) {
    const m = re.exec(secret);
    if (m && m[0].length > 0) {
      const rest = secret.slice(m[0].length);
      return normalize(rest).length >= MIN_SECRET_CHARS ? rest : secret;
    }
  }
  return secret;
}

const B32 = 'abcdefghijklmnopqrstuvwxyz234567';

function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let acc = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += B32[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out += B32[(acc << (5 - bits)) & 31];
  return out;
}

/**
 * The characters of an encoding of `bytes` that do not depend on what surrounds it, for each byte
 * alignment: base64 groups 3 bytes (3 alignments), base32 groups 5 (5 alignments).
 */
function alignedCores(bytes: Buffer, group: number, bitsPerChar: number, encode: (b: Buffer) => string): string[] {
  const out: string[] = [];
  for (let k = 0; k < group; k++) {
    const text = encode(Buffer.concat([Buffer.alloc(k), bytes]));
    const start = Math.ceil((8 * k) / bitsPerChar);
    const end = Math.floor((8 * (k + bytes.length)) / bitsPerChar);
    out.push(text.slice(start, end));
  }
  return out;
}

function formsOf(secret: string): Array<[SecretForm, string]> {
  const body = secretBody(secret);
  const forms: Array<[SecretForm, string]> = [
    ['verbatim', body],
    ['reversed', [...body].reverse().join('')],
  ];
  for (const spelling of new Set([body, body.toLowerCase(), body.toUpperCase()])) {
    const bytes = Buffer.from(spelling, 'utf8');
    forms.push(['hex', bytes.toString('hex')]);
    for (const core of alignedCores(bytes, 3, 6, (b) => b.toString('base64'))) forms.push(['base64', core]);
    for (const core of alignedCores(bytes, 5, 5, base32)) forms.push(['base32', core]);
  }
  return forms;
}

// ------------------------------------------------------------------------------------------------
// Decodings of the text

function percentDecode(s: string): string {
  return s
    .replace(/%u([0-9a-fA-F]{4})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
    .replace(/(?:%[0-9a-fA-F]{2})+/g, (m) => Buffer.from(m.replace(/%/g, ''), 'hex').toString('utf8'));
}

function unescapeText(s: string): string {
  return s
    .replace(/\\u\{([0-9a-fA-F]{1,6})\}|\\u([0-9a-fA-F]{4})/g, (m, a?: string, b?: string) => safeChar(parseInt((a ?? b)!, 16), m))
    .replace(/\\x([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
    .replace(/&#x([0-9a-fA-F]{1,6});?/g, (m, h: string) => safeChar(parseInt(h, 16), m))
    .replace(/&#(\d{1,7});?/g, (m, d: string) => safeChar(parseInt(d, 10), m));
}

function safeChar(code: number, fallback: string): string {
  return code <= 0x10ffff ? String.fromCodePoint(code) : fallback;
}

const MAX_VARIANTS = 10;
/** A list of 0x-prefixed bytes (`0x73, 0x6b, ...`), not a stray `0x` in base64. */
const BYTE_LIST = /(0x[0-9a-f]{2}[^0-9a-z]{0,3}){4}/i;

/** The text as written and as decoded (percent, escapes, `0x` prefixes), each once, labelled. */
export function decodings(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [['as written', text]];
  const seen = new Set([text]);
  for (let i = 0; i < out.length && out.length < MAX_VARIANTS; i++) {
    const [label, v] = out[i]!;
    const next: Array<[string, string]> = [];
    if (v.includes('%')) {
      const once = percentDecode(v);
      next.push(['percent-decoded', once]);
      // Many layers at once, so stacking encodings cannot outrun MAX_VARIANTS.
      let full = once;
      for (let n = 0; n < 32 && full.includes('%'); n++) {
        const again = percentDecode(full);
        if (again === full) break;
        full = again;
      }
      if (full !== once) next.push(['fully percent-decoded', full]);
    }
    if (v.includes('\\') || v.includes('&#')) next.push(['unescaped', unescapeText(v)]);
    if (BYTE_LIST.test(v)) next.push(['0x removed', v.replace(/0x/gi, '')]);
    for (const [how, d] of next) {
      if (seen.has(d) || out.length >= MAX_VARIANTS) continue;
      seen.add(d);
      out.push([label === 'as written' ? how : `${label}, ${how}`, d]);
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// The matcher

const HASH_BASE = 131;

/** Rolling hash of CHUNK_CHARS characters, 32-bit. */
function hashAt(s: string, i: number): number {
  let h = 0;
  for (let j = i; j < i + CHUNK_CHARS; j++) h = (Math.imul(h, HASH_BASE) + s.charCodeAt(j)) | 0;
  return h;
}

/** 2^20 buckets (128 KB of bits): with a few thousand chunks, 99.5% of positions miss the filter. */
const FILTER_SHIFT = 12;
const FILTER_WORDS = (1 << (32 - FILTER_SHIFT)) / 32;

let POW = 1;
for (let i = 1; i < CHUNK_CHARS; i++) POW = Math.imul(POW, HASH_BASE);

interface Needle {
  form: SecretForm;
  /** What must appear at the position whose CHUNK_CHARS-long hash matched (the chunk, or a whole form). */
  text: string;
}

export class SecretMatcher {
  /** Normalized forms shorter than a chunk, looked for with includes. */
  private readonly whole: Needle[] = [];
  /** Secrets whose normal form is too short: looked for case-folded as written. */
  private readonly raw: string[] = [];
  /** chunk hash -> the chunks with that hash and their form. */
  private readonly chunks = new Map<number, Needle[]>();
  /** One bit per hash bucket: most positions of a text are ruled out without a Map lookup. */
  private readonly filter = new Uint32Array(FILTER_WORDS);
  readonly size: number;

  constructor(secrets: Iterable<string>, opts: { chunks: boolean }) {
    const unique = new Set<string>();
    for (const s of secrets) if (s.length >= MIN_SECRET_CHARS) unique.add(s);
    this.size = unique.size;
    const wholeSeen = new Set<string>();
    for (const secret of unique) {
      if (normalize(secret).length < MIN_SECRET_CHARS) {
        this.raw.push(secret.toLowerCase());
        continue;
      }
      for (const [form, value] of formsOf(secret)) {
        const n = normalize(value);
        if (n.length < MIN_SECRET_CHARS) continue;
        if (n.length < CHUNK_CHARS) {
          if (!wholeSeen.has(n)) this.whole.push({ form, text: n });
          wholeSeen.add(n);
          continue;
        }
        // chunks: every CHUNK_CHARS-long run is a needle; whole: the form is, found by its first run.
        const needles = opts.chunks ? Array.from({ length: n.length - CHUNK_CHARS + 1 }, (_, i) => n.slice(i, i + CHUNK_CHARS)) : [n];
        for (const text of needles) {
          const h = hashAt(text, 0);
          const bucket = h >>> FILTER_SHIFT;
          this.filter[bucket >>> 5]! |= 1 << (bucket & 31);
          const list = this.chunks.get(h) ?? [];
          if (!list.some((x) => x.text === text)) list.push({ form, text });
          this.chunks.set(h, list);
        }
      }
    }
  }

  /** What of a secret `text` carries, in any of the forms and decodings above; undefined when none. */
  find(text: string): SecretHit | undefined {
    if (this.size === 0 || text.length < MIN_SECRET_CHARS) return undefined;
    for (const [decoding, v] of decodings(text)) {
      const form = this.findIn(v);
      if (form) return { form, decoding };
    }
    return undefined;
  }

  private findIn(v: string): SecretForm | undefined {
    if (this.raw.length) {
      const folded = v.toLowerCase();
      if (this.raw.some((r) => folded.includes(r))) return 'verbatim';
    }
    const n = normalize(v);
    for (const w of this.whole) if (n.includes(w.text)) return w.form;
    if (this.chunks.size === 0 || n.length < CHUNK_CHARS) return undefined;
    const filter = this.filter;
    let h = hashAt(n, 0);
    for (let i = 0; ; i++) {
      const bucket = h >>> FILTER_SHIFT;
      if (filter[bucket >>> 5]! & (1 << (bucket & 31))) {
        const found = this.chunks.get(h)?.find((x) => n.startsWith(x.text, i));
        if (found) return found.form;
      }
      if (i + CHUNK_CHARS >= n.length) return undefined;
      h = (Math.imul(h - Math.imul(n.charCodeAt(i), POW), HASH_BASE) + n.charCodeAt(i + CHUNK_CHARS)) | 0;
    }
  }
}

/** One matcher per distinct secret set and mode, reused while the set stays the same. */
const cache = new Map<string, SecretMatcher>();
const CACHE_MAX = 16;

export function matcherFor(secrets: readonly string[], opts: { chunks: boolean }): SecretMatcher {
  const key = `${opts.chunks ? 'c' : 'w'}\0${[...new Set(secrets)].sort().join('\0')}`;
  let m = cache.get(key);
  if (!m) {
    m = new SecretMatcher(secrets, opts);
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
    cache.set(key, m);
  }
  return m;
}
