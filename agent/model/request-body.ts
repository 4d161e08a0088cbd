/**
 * The Messages API request body as UTF-8 JSON bytes, each stored message's JSON computed once.
 *
 * Why: every model call of a chat sends its whole transcript. Encoding it (JSON.stringify in the SDK)
 * and the SDK's walk over every block for its telemetry header grew with the conversation: in one
 * Telegram chat at 4,000 messages they were the largest part of the bot's CPU per message (bench
 * --cpu-prof). Stored messages are deep-frozen (agent/context/transcript-diff.ts), so their JSON never
 * goes stale; the body is then a join of known pieces. Bytes, not a string: a string joined from
 * thousands of pieces is flattened and then encoded again at every call (about 1 ms at 400 KB, 11%
 * of the bot's CPU in a 3,000-message chat), where the bytes of the known prefix are only copied.
 *
 * Contract: `requestBody(params)` returns exactly the UTF-8 bytes of `JSON.stringify(params)` (same
 * text, same key order) for JSON params, as a Buffer of its own (the caller may keep it). A
 * message's JSON is remembered, weakly, only when the message is deep-frozen; so is the joined JSON
 * of a long list's leading frozen messages (held by its first message), in a buffer that only grows.
 */
const pieces = new WeakMap<object, Buffer>();

function deepFrozen(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return true;
  if (!Object.isFrozen(v)) return false;
  for (const x of Object.values(v as Record<string, unknown>)) if (!deepFrozen(x)) return false;
  return true;
}

function pieceOf(m: unknown): Buffer {
  if (typeof m !== 'object' || m === null) return Buffer.from(JSON.stringify(m) ?? 'null');
  const known = pieces.get(m);
  if (known !== undefined) return known;
  const b = Buffer.from(JSON.stringify(m) ?? 'null');
  if (deepFrozen(m)) pieces.set(m, b);
  return b;
}

/**
 * The joined JSON of a long transcript's leading deep-frozen messages, by its first message: bytes
 * [0, len) of `buf`, which are never written again (the next call of the same chat appends the new
 * messages' pieces after them, in spare room or a bigger copy; a pointer comparison per message
 * checks the prefix is unchanged) instead of joining thousands of pieces again.
 */
const joined = new WeakMap<object, { items: unknown[]; buf: Buffer; len: number }>();
/** Shorter lists (the classifier's, a new chat's) are joined directly. */
const JOIN_MIN = 64;
const COMMA = Buffer.from(',');

function withComma(list: readonly unknown[]): Buffer[] {
  return list.flatMap((m, i) => (i === 0 ? [pieceOf(m)] : [COMMA, pieceOf(m)]));
}

/** The messages' JSON (without the brackets), as chunks to concatenate. */
function messagesChunks(messages: readonly unknown[]): Buffer[] {
  const n = messages.length;
  const first = messages[0];
  if (n < JOIN_MIN || typeof first !== 'object' || first === null) return withComma(messages);
  pieceOf(first);
  if (!pieces.has(first)) return withComma(messages);
  let entry = joined.get(first);
  let i = 0;
  if (entry) {
    const limit = Math.min(entry.items.length, n);
    while (i < limit && entry.items[i] === messages[i]) i++;
  }
  if (!entry || i < entry.items.length) {
    // New, or no longer a prefix of this list: built again from the start.
    entry = { items: [], buf: Buffer.allocUnsafe(0), len: 0 };
    joined.set(first, entry);
    i = 0;
  }
  const rest: Buffer[] = [];
  let extending = true;
  for (let k = i; k < n; k++) {
    const m = messages[k];
    const piece = pieceOf(m);
    // Only deep-frozen messages (their piece is remembered) extend the cached prefix.
    if (extending && typeof m === 'object' && m !== null && pieces.has(m)) {
      const need = entry.len + (k > 0 ? 1 : 0) + piece.length;
      if (need > entry.buf.length) {
        const bigger = Buffer.allocUnsafe(Math.max(need, entry.buf.length * 2, 4096));
        entry.buf.copy(bigger, 0, 0, entry.len);
        entry.buf = bigger;
      }
      if (k > 0) entry.buf[entry.len++] = 0x2c; // ','
      entry.len += piece.copy(entry.buf, entry.len);
      entry.items.push(m);
    } else {
      extending = false;
      if (k > 0) rest.push(COMMA);
      rest.push(piece);
    }
  }
  return [entry.buf.subarray(0, entry.len), ...rest];
}

/** The UTF-8 bytes of `JSON.stringify(params)`, with `params.messages` encoded from remembered pieces. */
export function requestBody(params: { messages: readonly unknown[] } & Record<string, unknown>): Buffer {
  const head: Record<string, unknown> = {};
  const tail: Record<string, unknown> = {};
  let seen = false;
  for (const [k, v] of Object.entries(params)) {
    if (k === 'messages') seen = true;
    else (seen ? tail : head)[k] = v;
  }
  const h = JSON.stringify(head);
  const t = JSON.stringify(tail);
  return Buffer.concat([
    Buffer.from(`${h.slice(0, -1)}${h.length > 2 ? ',' : ''}"messages":[`),
    ...messagesChunks(params.messages),
    Buffer.from(`]${t.length > 2 ? `,${t.slice(1)}` : '}'}`),
  ]);
}
