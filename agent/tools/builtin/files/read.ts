/** read_file (read-only): a window of lines, opened fd by fd through openInWorkspace. */
import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import type { Tool } from '../../types.js';
import { ToolError } from '../../types.js';
import { displayPath, errCode, openInWorkspace, resolveInWorkspace, workspaceRoot } from '../../workspace.js';
import { COUNT_SCAN_BYTES, humanSize, looksBinary, READ_DEFAULT_LINES, READ_MAX_BYTES, text, truncatedLine } from './shared.js';

// ---------------------------------------------------------------------------------------------
// read_file

export const ReadFileInput = z.strictObject({
  path: z.string().min(1).describe('File to read, relative to the workspace root (or absolute inside it).'),
  offset: z.number().int().min(1).optional().describe('1-based line number to start at (default 1). Use it to read on after a truncated read.'),
  limit: z.number().int().min(1).max(READ_DEFAULT_LINES).optional().describe(`Maximum number of lines to return (default and maximum ${READ_DEFAULT_LINES}).`),
});
export type ReadFileInput = z.infer<typeof ReadFileInput>;

/** read_file: read-only. At most 2000 lines / 50 KB per call; offset/limit page through. */
export function readFileTool(): Tool<ReadFileInput> {
  return {
    name: 'read_file',
    description:
      'Read a text file from the workspace. Returns the raw lines (no line numbers). Reads at most ' +
      `${READ_DEFAULT_LINES} lines or ${READ_MAX_BYTES / 1024} KB per call; when cut, the last line is ` +
      '"[truncated: true; ...]" and says which offset to pass to read on. Binary files are reported, not shown.',
    input: ReadFileInput,
    tier: 'read-only',
    async execute(input, ctx) {
      const root = await workspaceRoot(ctx.workspace);
      const abs = await resolveInWorkspace(ctx.workspace, input.path, { mustExist: true });
      return text(await readWindow(root, abs, displayPath(root, abs), input.offset ?? 1, input.limit ?? READ_DEFAULT_LINES, ctx.signal));
    },
  };
}

async function readWindow(root: string, abs: string, shown: string, offset: number, limit: number, signal: AbortSignal): Promise<string> {
  // Opened fd by fd without following symlinks: a directory swapped for a symlink is not read through.
  const fh = await openInWorkspace(root, abs).catch((err: unknown) => {
    if (err instanceof ToolError) throw err;
    throw new ToolError(`${shown} cannot be opened (${errCode(err)}); use ls or find to see what is there.`);
  });
  try {
    const st = await fh.stat();
    if (st.isDirectory()) throw new ToolError(`${shown} is a directory; use ls to list it.`);
    if (!st.isFile()) throw new ToolError(`${shown} is not a regular file (a device, socket or pipe); it cannot be read.`);
    if (st.size === 0) return `(${shown} is empty)`;
    const buf = Buffer.alloc(64 * 1024);
    const decoder = new StringDecoder('utf8');
    const out: string[] = [];
    let bytes = 0;
    let lineNo = 0; // lines counted so far (complete, or cut and counted early)
    let carry = ''; // the unfinished last line while still splitting text
    let collecting = true; // false once the window is full: from then on only newlines are counted
    let cutReason: 'lines' | 'bytes' | 'longline' | undefined;
    let pos = 0;
    let countedToEnd = true;
    let openLineCounted = false; // the line in progress was already counted (its '\n' is still ahead)
    let tailHasText = false; // the bytes after the last '\n' seen so far are not empty

    const take = (line: string): void => {
      lineNo++;
      if (!collecting || lineNo < offset) return;
      if (out.length >= limit) {
        collecting = false;
        cutReason = 'lines';
        return;
      }
      const size = Buffer.byteLength(line) + 1;
      if (bytes + size > READ_MAX_BYTES) {
        collecting = false;
        if (out.length === 0) {
          // One line longer than the whole budget: show its head rather than nothing.
          out.push(Buffer.from(line).subarray(0, READ_MAX_BYTES).toString('utf8'));
          cutReason = 'longline';
        } else {
          cutReason = 'bytes';
        }
        return;
      }
      bytes += size;
      out.push(line);
    };

    for (;;) {
      signal.throwIfAborted();
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      const first = pos === 0;
      pos += bytesRead;
      const chunk = buf.subarray(0, bytesRead);
      if (first && looksBinary(chunk)) {
        return `${shown} is a binary file (${humanSize(st.size)}); it is not shown. Use a command that understands the format.`;
      }
      if (!collecting) {
        // Past the window: count newlines on the raw bytes to report the total, up to a bound.
        if (pos > COUNT_SCAN_BYTES) {
          countedToEnd = false;
          break;
        }
        let i = -1;
        while ((i = chunk.indexOf(10, i + 1)) !== -1) {
          if (openLineCounted) openLineCounted = false;
          else lineNo++;
        }
        tailHasText = chunk[bytesRead - 1] !== 10;
        continue;
      }
      const parts = (carry + decoder.write(chunk)).split('\n');
      carry = parts.pop() ?? '';
      for (const part of parts) take(part);
      if (!collecting) {
        tailHasText = carry.length > 0;
        continue;
      }
      if (carry.length > READ_MAX_BYTES * 2) {
        if (lineNo + 1 >= offset) {
          // An enormous line inside the window: it is cut anyway, count it now.
          take(carry);
          openLineCounted = true;
          tailHasText = true;
        } else {
          // Before the window: its text is never shown, only its end matters for counting.
          carry = carry.slice(-1);
        }
      }
    }
    if (collecting) {
      const last = carry + decoder.end();
      if (last.length > 0) take(last);
    } else if (tailHasText && !openLineCounted) {
      lineNo++; // a final line without a trailing newline
    }
    if (out.length === 0) {
      throw new ToolError(`offset ${offset} is past the end of ${shown} (${lineNo} lines). Use a smaller offset.`);
    }
    const body = out.join('\n');
    if (!cutReason) return body;
    const last = offset + out.length - 1;
    if (cutReason === 'longline') {
      return `${body}\n${truncatedLine(
        `line ${last} is longer than ${READ_MAX_BYTES / 1024} KB and was cut`,
        `use grep to find what you need in it` + (lineNo > last ? `; offset=${last + 1} reads the lines after it` : ''),
      )}`;
    }
    const of = countedToEnd ? `of ${lineNo}` : `of more than ${lineNo}`;
    const why = cutReason === 'bytes' ? ` (${READ_MAX_BYTES / 1024} KB limit)` : '';
    return `${body}\n${truncatedLine(`showing lines ${offset}-${last} ${of}${why}`, `call read_file with offset=${last + 1} to read on`)}`;
  } finally {
    await fh.close();
  }
}
