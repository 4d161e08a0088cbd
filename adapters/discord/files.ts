/**
 * A Discord message's attachments -> what the agent may read, via the kit's classification.
 *
 * Contract: images and text files only, each at most `maxBytes` (checked on Discord's stated size,
 * then again while downloading); anything else is `refused` with the reason to tell the user and the
 * model. Files are fetched from their CDN URL (signed by Discord): the bot token is never sent there.
 */
import { classifyAttachment, decodeText, overLimit } from '../kit/attachments.js';
import type { Attachment, Log } from '../types.js';

export interface DiscordFile {
  name: string;
  contentType: string | null;
  size: number;
  url: string;
}

export async function readAttachments(files: Iterable<DiscordFile>, maxBytes: number, log: Log): Promise<{ attachments: Attachment[]; refused: string[] }> {
  const attachments: Attachment[] = [];
  const refused: string[] = [];
  for (const a of files) {
    const name = a.name || 'file';
    const c = classifyAttachment({ name, mimeType: a.contentType ?? undefined, size: a.size }, maxBytes);
    if (c.kind === 'refused') {
      refused.push(c.reason);
      continue;
    }
    const got = await download(a.url, name, maxBytes, log);
    if (typeof got === 'string') refused.push(got);
    else if (c.kind === 'image') attachments.push({ kind: 'image', name, mimeType: c.mimeType, data: got.toString('base64') });
    else {
      const t = decodeText(got);
      if (t === undefined) refused.push(`${name} is not a text file`);
      else attachments.push({ kind: 'text', name, mimeType: c.mimeType, data: t });
    }
  }
  return { attachments, refused };
}

async function download(url: string, name: string, maxBytes: number, log: Log): Promise<Buffer | string> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(60_000) });
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      log('warn', `file download for ${name} failed: HTTP ${res.status}`);
      return `${name} could not be downloaded from Discord`;
    }
    const parts: Buffer[] = [];
    let total = 0;
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      total += chunk.byteLength;
      if (total > maxBytes) return overLimit(name, total, maxBytes);
      parts.push(Buffer.from(chunk));
    }
    return Buffer.concat(parts);
  } catch (err) {
    log('warn', `file download for ${name} failed: ${(err as Error).message}`);
    return `${name} could not be downloaded from Discord`;
  }
}
