/**
 * What every adapter does between a platform's event and the core: read the files of a message,
 * hand the message to the sink, answer with what the core says.
 *
 * Contract:
 * - `readFiles(files, maxBytes, facts, download)`: each file is classified (kit/attachments.ts) before
 *   any byte is fetched; a refused one is never downloaded. `download` gives the bytes or the reason
 *   they could not be read. Images become base64, text is decoded (a file that is not text is refused).
 *   Files are read one after another, in order; `refused` holds the reasons, in order.
 * - `readBody(res, maxBytes)`: the body's bytes, or `{ over: total }` as soon as more than `maxBytes`
 *   arrived (the rest is not read: leaving the loop cancels the stream).
 * - `deliverMessage(...)`: the model reads `[attachment not read: …]` after the text; the sender hears
 *   `Not read: ….` only when the core accepted the message (a stranger gets no extra reply), then the
 *   core's reply. A core failure is logged and nothing is sent; a failed reply is logged.
 * - `Recent`: a bounded set, the least recently added entries go first.
 */
import type { AdapterSink, Attachment, InboundMessage, Log } from '../types.js';
import { classifyAttachment, decodeText, type FileFacts } from './attachments.js';

export interface ReadFiles {
  attachments: Attachment[];
  refused: string[];
}

export async function readFiles<F>(
  files: Iterable<F>,
  maxBytes: number,
  facts: (f: F) => FileFacts,
  download: (f: F, name: string) => Promise<Buffer | string>,
): Promise<ReadFiles> {
  const attachments: Attachment[] = [];
  const refused: string[] = [];
  for (const f of files) {
    const { name, mimeType, size } = facts(f);
    const c = classifyAttachment({ name, mimeType, size }, maxBytes);
    if (c.kind === 'refused') {
      refused.push(c.reason);
      continue;
    }
    const got = await download(f, name);
    if (typeof got === 'string') refused.push(got);
    else if (c.kind === 'image') attachments.push({ kind: 'image', name, mimeType: c.mimeType, data: got.toString('base64') });
    else {
      const text = decodeText(got);
      if (text === undefined) refused.push(`${name} is not a text file`);
      else attachments.push({ kind: 'text', name, mimeType: c.mimeType, data: text });
    }
  }
  return { attachments, refused };
}

export async function readBody(body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<Buffer | { over: number }> {
  const parts: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.byteLength;
    if (total > maxBytes) return { over: total };
    parts.push(Buffer.from(chunk));
  }
  return Buffer.concat(parts);
}

/** The message text the model reads: the user's text, then a note per file that was not read. */
export function withUnreadNotes(text: string, refused: readonly string[]): string {
  return [text, ...refused.map((r) => `[attachment not read: ${r}]`)].filter((s) => s !== '').join('\n');
}

export interface Delivery {
  sink: AdapterSink;
  msg: InboundMessage;
  refused: readonly string[];
  /** Posts plain text in the message's conversation. */
  reply: (text: string) => Promise<void>;
  log: Log;
  describeError: (err: unknown) => string;
  /** Names the message in the log line when the core fails; default its event id. */
  label?: string;
  /** Runs after the core took the message, before anything is posted (Discord opens its thread here). */
  afterCore?: (result: Awaited<ReturnType<AdapterSink['message']>>) => Promise<void>;
}

export async function deliverMessage(d: Delivery): Promise<void> {
  let result;
  try {
    result = await d.sink.message(d.msg);
  } catch (err) {
    d.log('error', `the core failed on message ${d.label ?? d.msg.eventId}: ${d.describeError(err)}`);
    return;
  }
  try {
    await d.afterCore?.(result);
    if (result.accepted && d.refused.length > 0) await d.reply(d.refused.map((r) => `Not read: ${r}.`).join('\n'));
    if (result.reply) await d.reply(result.reply);
  } catch (err) {
    d.log('error', `could not reply in ${d.msg.conversation.key}: ${d.describeError(err)}`);
  }
}

/** A bounded set: the least recently added entries go first. */
export class Recent {
  private readonly set = new Set<string>();
  constructor(private readonly max: number) {}
  has(k: string): boolean {
    return this.set.has(k);
  }
  add(k: string): void {
    this.set.delete(k);
    this.set.add(k);
    if (this.set.size > this.max) this.set.delete(this.set.values().next().value as string);
  }
}
