/**
 * A Discord message's attachments -> what the agent may read, via the kit's classification.
 *
 * Contract: images and text files only, each at most `maxBytes` (checked on Discord's stated size,
 * then again while downloading); anything else is `refused` with the reason to tell the user and the
 * model. Files are fetched from their CDN URL (signed by Discord): the bot token is never sent there.
 */
import { overLimit } from '../kit/attachments.js';
import { type ReadFiles, readBody, readFiles } from '../kit/inbound.js';
import type { Log } from '../types.js';
import { messageOf } from '../../agent/log.js';

export interface DiscordFile {
  name: string;
  contentType: string | null;
  size: number;
  url: string;
}

export function readAttachments(files: Iterable<DiscordFile>, maxBytes: number, log: Log): Promise<ReadFiles> {
  return readFiles(
    files,
    maxBytes,
    (a) => ({ name: a.name || 'file', mimeType: a.contentType ?? undefined, size: a.size }),
    (a, name) => download(a.url, name, maxBytes, log),
  );
}

async function download(url: string, name: string, maxBytes: number, log: Log): Promise<Buffer | string> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(60_000) });
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      log('warn', `file download for ${name} failed: HTTP ${res.status}`);
      return `${name} could not be downloaded from Discord`;
    }
    const got = await readBody(res.body as AsyncIterable<Uint8Array>, maxBytes);
    return Buffer.isBuffer(got) ? got : overLimit(name, got.over, maxBytes);
  } catch (err) {
    log('warn', `file download for ${name} failed: ${messageOf(err)}`);
    return `${name} could not be downloaded from Discord`;
  }
}
