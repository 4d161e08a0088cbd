/**
 * What an adapter may read of a user's file, and text cutting that never splits a surrogate pair.
 *
 * Contract:
 * - `classifyAttachment({name, mimeType, size}, maxBytes)` says `image` (jpeg png gif webp, by MIME
 *   type or extension), `text` (text/* and the usual source/config types, by MIME or extension), or
 *   `refused` with the reason to tell the user and the model (not a readable kind, or over the size
 *   limit; an unknown size is checked again while downloading with `overLimit`).
 * - `decodeText(bytes)` is the UTF-8 text, or undefined when the bytes are not text (a NUL byte).
 * - `cutText(s, max)` is `s` when it fits, otherwise at most `max` UTF-16 units ending in "…", never
 *   half a surrogate pair. `cutBefore(s, max)` is the longest surrogate-safe prefix of at most `max`.
 */
import type { Attachment } from '../types.js';

const TEXT_MIME = /^(text\/|application\/(json|xml|x-yaml|yaml|toml|javascript|x-javascript|typescript|x-sh|x-shellscript|sql|x-ndjson|ld\+json|csv)\b)/i;
const TEXT_EXT =
  /\.(txt|md|markdown|rst|json|jsonl|ndjson|ya?ml|toml|ini|cfg|conf|env|csv|tsv|log|xml|html?|css|scss|js|mjs|cjs|ts|tsx|jsx|py|rb|go|rs|java|kt|c|h|cc|cpp|hpp|cs|php|sh|bash|zsh|fish|sql|diff|patch|tf|hcl|lua|pl|r|swift|dockerfile|gitignore)$/i;
const IMAGE_MIME = /^image\/(jpeg|png|gif|webp)$/i;
const IMAGE_EXT: Record<string, string> = { jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif', webp: 'image/webp' };

export interface FileFacts {
  name: string;
  mimeType?: string | undefined;
  /** Bytes, when the platform says. */
  size?: number | undefined;
}

export type Classification = { kind: Attachment['kind']; mimeType: string } | { kind: 'refused'; reason: string };

export function humanSize(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1).replace(/\.0$/, '')} MB`;
}

export function overLimit(name: string, size: number, maxBytes: number): string {
  return `${name} is ${humanSize(size)}; the limit is ${humanSize(maxBytes)}`;
}

export function classifyAttachment(file: FileFacts, maxBytes: number): Classification {
  const ext = /\.([A-Za-z0-9]+)$/.exec(file.name)?.[1]?.toLowerCase() ?? '';
  const given = file.mimeType && file.mimeType !== 'application/octet-stream' ? file.mimeType : undefined;
  const mime = given ?? IMAGE_EXT[ext] ?? file.mimeType ?? 'application/octet-stream';
  let kind: Attachment['kind'] | undefined;
  if (IMAGE_MIME.test(mime) || IMAGE_EXT[ext]) kind = 'image';
  else if (TEXT_MIME.test(mime) || TEXT_EXT.test(file.name)) kind = 'text';
  if (!kind) return { kind: 'refused', reason: `${file.name} (${mime}): I can read images and text files only` };
  if (file.size !== undefined && file.size > maxBytes) return { kind: 'refused', reason: overLimit(file.name, file.size, maxBytes) };
  const mimeType = kind === 'image' && !IMAGE_MIME.test(mime) ? (IMAGE_EXT[ext] ?? mime) : mime;
  return { kind, mimeType };
}

export function decodeText(bytes: Uint8Array): string | undefined {
  const text = new TextDecoder('utf-8').decode(bytes);
  return text.includes('\u0000') ? undefined : text;
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

export function cutBefore(s: string, max: number): string {
  if (s.length <= max) return s;
  let end = Math.max(0, max);
  if (end > 0 && isHighSurrogate(s.charCodeAt(end - 1))) end--;
  return s.slice(0, end);
}

export function cutText(s: string, max: number): string {
  if (s.length <= max) return s;
  return `${cutBefore(s, max - 1)}…`;
}
