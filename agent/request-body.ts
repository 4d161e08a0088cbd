/**
 * The Messages API request body as JSON text, each stored message's JSON computed once.
 *
 * Why: every model call of a chat sends its whole transcript. Encoding it (JSON.stringify in the SDK)
 * and the SDK's walk over every block for its telemetry header grew with the conversation: in one
 * Telegram chat at 4,000 messages they were the largest part of the bot's CPU per message (bench
 * --cpu-prof). Stored messages are deep-frozen (agent/transcript-diff.ts), so their JSON never
 * goes stale; the body is then a join of known pieces.
 *
 * Contract: `requestBody(params)` returns exactly `JSON.stringify(params)` (same text, same key
 * order) for JSON params. A message's JSON is remembered, weakly, only when the message is deep-frozen.
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
  const list = `"messages":[${params.messages.map(pieceOf).join(',')}]`;
  return `${h.slice(0, -1)}${h.length > 2 ? ',' : ''}${list}${t.length > 2 ? `,${t.slice(1)}` : '}'}`;
}
