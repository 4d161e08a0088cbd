/**
 * write_file (low-risk, two-phase) and the change machinery edit_file shares: read the current
 * bytes, diff, and apply exactly what was approved if the file is still what the diff was made from.
 */
import { createTwoFilesPatch } from 'diff';
import { z } from 'zod';
import type { Prepared, Proposal, Tool, ToolContext, ToolResult } from '../../types.js';
import { ToolError } from '../../types.js';
import { handOver } from '../../sandbox/index.js';
import { displayPath, errCode, openInWorkspace, resolveInWorkspace, workspaceRoot } from '../../workspace.js';
import { EDIT_MAX_FILE_BYTES, humanSize, looksBinary, PREVIEW_MAX_CHARS, sha256, text } from './shared.js';

// ---------------------------------------------------------------------------------------------
// write_file / edit_file (two-phase)

/** What propose hands to execute (persisted while an approval waits, so validated on the way back). */
const ChangeData = z.object({
  /** Workspace-relative path, re-resolved (and re-confined) at execute time. */
  path: z.string(),
  newContent: z.string(),
  /** sha256 hex of the file's bytes when proposed; null when the file did not exist. */
  baseHash: z.string().nullable(),
});
type ChangeData = z.infer<typeof ChangeData>;

export interface Current {
  abs: string;
  shown: string;
  /** undefined: the file does not exist yet. */
  content?: string;
  hash: string | null;
}

export async function readCurrent(ctx: ToolContext, userPath: string, tool: string): Promise<Current> {
  const root = await workspaceRoot(ctx.workspace);
  const abs = await resolveInWorkspace(ctx.workspace, userPath);
  const shown = displayPath(root, abs);
  let buf: Buffer;
  try {
    const fh = await openInWorkspace(root, abs);
    try {
      const st = await fh.stat();
      if (st.isDirectory()) throw new ToolError(`${shown} is a directory; ${tool} needs a file path.`);
      if (!st.isFile()) throw new ToolError(`${shown} is not a regular file; ${tool} only writes regular files.`);
      if (st.size > EDIT_MAX_FILE_BYTES) {
        throw new ToolError(`${shown} is ${humanSize(st.size)}; ${tool} only changes files up to ${humanSize(EDIT_MAX_FILE_BYTES)}.`);
      }
      buf = await fh.readFile();
    } finally {
      await fh.close();
    }
  } catch (err) {
    if (err instanceof ToolError) throw err;
    const code = errCode(err);
    if (code === 'ENOENT') return { abs, shown, hash: null };
    throw new ToolError(`${shown} cannot be read (${code}).`);
  }
  if (looksBinary(buf)) throw new ToolError(`${shown} is a binary file; ${tool} only changes text files.`);
  return { abs, shown, content: buf.toString('utf8'), hash: sha256(buf) };
}

/** A diff that takes longer than this (huge rewrites) is summarized instead of shown. */
const DIFF_TIMEOUT_MS = 5000;

function diffOf(shown: string, before: string | undefined, after: string): { preview: string; counts: string } {
  const patch = createTwoFilesPatch(before === undefined ? '/dev/null' : `a/${shown}`, `b/${shown}`, before ?? '', after, undefined, undefined, {
    context: 3,
    timeout: DIFF_TIMEOUT_MS,
  });
  if (patch === undefined) {
    const n = (s: string) => s.split('\n').length;
    return {
      preview: `[diff too large to compute: ${before === undefined ? 0 : n(before)} lines become ${n(after)} lines]`,
      counts: 'diff too large to show',
    };
  }
  let added = 0;
  let removed = 0;
  let inHunks = false;
  for (const line of patch.split('\n')) {
    if (line.startsWith('@@')) inHunks = true;
    else if (!inHunks) continue;
    else if (line.startsWith('+')) added++;
    else if (line.startsWith('-')) removed++;
  }
  const preview = patch.length > PREVIEW_MAX_CHARS ? `${patch.slice(0, PREVIEW_MAX_CHARS)}\n[preview cut at ${PREVIEW_MAX_CHARS} chars]` : patch;
  return { preview, counts: before === undefined ? `new file, +${added}` : `+${added} -${removed}` };
}

export function proposal(tool: string, cur: Current, newContent: string): Proposal {
  const { preview, counts } = diffOf(cur.shown, cur.content, newContent);
  const data: ChangeData = { path: cur.shown, newContent, baseHash: cur.hash };
  return { summary: `${tool} ${cur.shown} (${counts})`, preview, data };
}

export async function applyChange(ctx: ToolContext, prepared: Prepared, tool: string, fallback: () => Promise<Proposal>): Promise<ToolResult> {
  const parsed = ChangeData.safeParse(prepared.proposal?.data);
  const change = parsed.success ? parsed.data : (ChangeData.parse((await fallback()).data) as ChangeData);
  const root = await workspaceRoot(ctx.workspace);
  // Re-resolve: the path is confined again now, not trusted from when it was proposed.
  const abs = await resolveInWorkspace(ctx.workspace, change.path);
  const shown = displayPath(root, abs);
  let nowHash: string | null = null;
  try {
    const fh = await openInWorkspace(root, abs);
    try {
      nowHash = sha256(await fh.readFile());
    } finally {
      await fh.close();
    }
  } catch (err) {
    if (err instanceof ToolError) throw err;
    if (errCode(err) !== 'ENOENT') throw new ToolError(`${shown} cannot be read before writing (${errCode(err)}).`);
  }
  if (nowHash !== change.baseHash) {
    const how = change.baseHash === null ? 'was created' : nowHash === null ? 'was deleted' : 'was modified';
    throw new ToolError(
      `${shown} ${how} after this ${tool} was proposed, so the diff that was shown no longer applies; nothing was written. ` +
        `Read the file again and propose the change anew.`,
    );
  }
  await writeInWorkspace(root, abs, shown, change.newContent);
  const lines = change.newContent === '' ? 0 : change.newContent.split('\n').length - (change.newContent.endsWith('\n') ? 1 : 0);
  const verb = change.baseHash === null ? 'Created' : 'Wrote';
  return text(`${verb} ${shown} (${lines} lines, ${humanSize(Buffer.byteLength(change.newContent))}).`);
}

/**
 * THE write path of write_file and edit_file: creates missing parent directories and the file inside
 * `root` without ever following a symlink (openInWorkspace), so a directory swapped for a symlink
 * while this runs makes the write fail instead of landing outside the workspace.
 */
async function writeInWorkspace(root: string, abs: string, shown: string, content: string): Promise<void> {
  try {
    // A root bot hands what it writes (and the folders it makes) to the sandbox user, so the agent's
    // commands can change it too.
    const fh = await openInWorkspace(root, abs, { write: true, createDirs: true, onCreatedDir: handOver });
    try {
      // O_CREAT|O_TRUNC already ran: refuse (after the fact, but harmlessly) anything that is no regular file.
      if (!(await fh.stat()).isFile()) throw new ToolError(`${shown} is not a regular file; only regular files are written.`);
      await handOver(fh);
      await fh.writeFile(content, 'utf8');
    } finally {
      await fh.close();
    }
  } catch (err) {
    if (err instanceof ToolError) throw err;
    throw new ToolError(`${shown} could not be written (${errCode(err)}); nothing or only part of it was written.`);
  }
}

export const WriteFileInput = z.strictObject({
  path: z.string().min(1).describe('File to create or overwrite, relative to the workspace root. Parent directories are created.'),
  content: z.string().describe('The complete new content of the file.'),
});
export type WriteFileInput = z.infer<typeof WriteFileInput>;

/**
 * write_file: low-risk. Changes only the agent's own workspace and always shows a diff first; an
 * agent configured read-only asks an approver.
 */
export function writeFileTool(): Tool<WriteFileInput> {
  const tool: Tool<WriteFileInput> = {
    name: 'write_file',
    description:
      'Create a file or replace its whole content, inside the workspace. Parent directories are created. ' +
      'For a small change to an existing file prefer edit_file. The change may need approval; a diff is shown.',
    input: WriteFileInput,
    tier: 'low-risk',
    async propose(input, ctx) {
      const cur = await readCurrent(ctx, input.path, 'write_file');
      return proposal('write_file', cur, input.content);
    },
    async execute(input, ctx, prepared) {
      return applyChange(ctx, prepared, 'write_file', () => tool.propose!(input, ctx));
    },
  };
  return tool;
}
