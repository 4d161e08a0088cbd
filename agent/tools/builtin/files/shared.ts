/**
 * What the file tools share: their limits (exported so tests and docs agree with the code), the
 * output conventions (truncation line, binary sniffing) and globs. Path confinement lives in
 * ../../workspace.ts, the fd-by-fd directory walk in ./walk.ts.
 */
import { createHash } from 'node:crypto';
import type { ToolResult } from '../../types.js';
import { ToolError } from '../../types.js';

// ---------------------------------------------------------------------------------------------
// Limits (exported so tests and docs agree with the code)

export const READ_DEFAULT_LINES = 2000;
export const READ_MAX_BYTES = 50 * 1024;
export const LS_DEFAULT_ENTRIES = 500;
export const LS_MAX_ENTRIES = 2000;
export const FIND_DEFAULT_RESULTS = 200;
export const FIND_MAX_RESULTS = 1000;
export const GREP_DEFAULT_MATCHES = 100;
export const GREP_MAX_MATCHES = 1000;
export const GREP_MAX_OUTPUT_BYTES = 50 * 1024;
export const GREP_MAX_LINE_CHARS = 500;
/** grep skips larger files (reported as skipped). */
export const GREP_MAX_FILE_BYTES = 10 * 1024 * 1024;
/** write_file/edit_file refuse to diff and rewrite larger files. */
export const EDIT_MAX_FILE_BYTES = 2 * 1024 * 1024;
/** Directories find and grep skip unless includeIgnored is set. */
export const IGNORED_DIRS: ReadonlySet<string> = new Set(['node_modules', '.git']);

const SNIFF_BYTES = 8000;
/** read_file stops counting the total lines of a huge file after this many bytes. */
export const COUNT_SCAN_BYTES = 64 * 1024 * 1024;
export const PREVIEW_MAX_CHARS = 100_000;

// ---------------------------------------------------------------------------------------------
// Shared helpers

export function truncatedLine(what: string, hint: string): string {
  return `[truncated: true; ${what}; ${hint}]`;
}

/** Like git: a NUL byte in the first 8000 bytes means binary. */
export function looksBinary(buf: Uint8Array): boolean {
  return buf.subarray(0, SNIFF_BYTES).includes(0);
}

export function sha256(buf: Uint8Array | string): string {
  return createHash('sha256').update(buf).digest('hex');
}

export function humanSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Glob to an anchored RegExp over '/'-separated paths: `*` any run within a segment, `?` one
 * character, `**` any number of segments, `[abc]`/`[!abc]` a class, `{a,b}` alternatives.
 */
function globToRegExp(glob: string): RegExp {
  let re = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const atSegStart = i === 0 || glob[i - 1] === '/';
        i++;
        if (atSegStart && glob[i + 1] === '/') {
          re += '(?:.*/)?';
          i++;
        } else {
          re += '.*';
        }
      } else {
        re += '[^/]*';
      }
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end === -1) {
        re += '\\[';
      } else {
        let body = glob.slice(i + 1, end);
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        re += `[${body.replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '{') {
      braces++;
      re += '(?:';
    } else if (c === '}' && braces > 0) {
      braces--;
      re += ')';
    } else if (c === ',' && braces > 0) {
      re += '|';
    } else {
      re += c.replace(/[.+^${}()|\\/]/g, '\\$&');
    }
  }
  while (braces-- > 0) re += ')';
  try {
    return new RegExp(`^${re}$`);
  } catch {
    throw new ToolError(`The glob "${glob}" is not valid; use *, ?, **, [abc] and {a,b}.`);
  }
}

/** A glob without '/' matches the base name at any depth; with '/' it matches the relative path. */
export function globMatcher(glob: string): (rel: string, base: string) => boolean {
  const re = globToRegExp(glob);
  return glob.includes('/') ? (rel) => re.test(rel) : (_rel, base) => re.test(base);
}

export function text(content: string): ToolResult {
  return { content };
}
