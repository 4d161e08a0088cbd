/**
 * The Messages API request body as JSON text, each stored message's JSON computed once.
 *
 * Why: every model call of a chat sends its whole transcript. Encoding it (JSON.stringify in the SDK)
 * and the SDK's walk over every block for its telemetry header grew with the conversation: in one
 * Telegram chat at 4,000 messages they were the largest part of the bot's CPU per message (bench
 * --cpu-prof). Stored messages are deep-frozen (agent/context/transcript-diff.ts), so their JSON never
 * goes stale; the body is then a join of known pieces.
 *
 * Contract: `requestBody(params)` returns exactly `JSON.stringify(params)` (same text, same key
 * order) for JSON params. A message's JSON is remembered, weakly, only when the message is deep-frozen;
 * so is the joined JSON of a long list's leading frozen messages (held by its first message).
 */
const pieces = new WeakMap<object, string>();

function deepFrozen(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return true;
  if (!Object.isFrozen(v)) return false;
  for (const x of Object.values(v as Record<string, unknown>)) if (!deepFrozen(x)) return false;
  return true;
}

function pieceOf(m: unknown): string {
  if (typeof m !== 'object' || m === null) return JSON.stringify(m) ?? 'null';
  const known = pieces.get(m);
  if (known !== undefined) return known;
  const s = JSON.stringify(m) ?? 'null';
  if (deepFrozen(m)) pieces.set(m, s);
  return s;
}

/**
 * The joined JSON of a long transcript's leading deep-frozen messages, by its first message: the
 * next call of the same chat appends the new messages' pieces to it (a pointer comparison per
 * message checks the prefix is unchanged) instead of joining thousands of pieces again.
 */
const joined = new WeakMap<object, { items: unknown[]; json: string }>();
/** Shorter lists (the classifier's, a new chat's) are joined directly. */
const JOIN_MIN = 64;

function messagesJson(messages: readonly unknown[]): string {
  const n = messages.length;
  const first = messages[0];
  if (n < JOIN_MIN || typeof first !== 'object' || first === null) return messages.map(pieceOf).join(',');
  pieceOf(first);
  if (!pieces.has(first)) return messages.map(pieceOf).join(',');
  let entry = joined.get(first);
  let i = 0;
  if (entry) {
    const limit = Math.min(entry.items.length, n);
    while (i < limit && entry.items[i] === messages[i]) i++;
  }
  if (!entry || i < entry.items.length) {
    // New, or no longer a prefix of this list: built again from the start.
    entry = { items: [], json: '' };
    joined.set(first, entry);
    i = 0;
  }
  let out = entry.json;
  let extending = true;
  for (let k = i; k < n; k++) {
    const m = messages[k];
    const piece = pieceOf(m);
    out = k === 0 ? piece : `${out},${piece}`;
    // Only deep-frozen messages (their piece is remembered) extend the cached prefix.
    if (extending && typeof m === 'object' && m !== null && pieces.has(m)) {
      entry.items.push(m);
      entry.json = out;
    } else extending = false;
  }
  return out;
}

/** `JSON.stringify(params)`, with `params.messages` encoded from remembered pieces. */
export function requestBody(params: { messages: readonly unknown[] } & Record<string, unknown>): string {
  const head: Record<string, unknown> = {};
  const tail: Record<string, unknown> = {};
  let seen = false;
  for (const [k, v] of Object.entries(params)) {
    if (k === 'messages') seen = true;
    else (seen ? tail : head)[k] = v;
  }
  const h = JSON.stringify(head);
  const t = JSON.stringify(tail);
  const list = `"messages":[${messagesJson(params.messages)}]`;
  return `${h.slice(0, -1)}${h.length > 2 ? ',' : ''}${list}${t.length > 2 ? `,${t.slice(1)}` : '}'}`;
}
