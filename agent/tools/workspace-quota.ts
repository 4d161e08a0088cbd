/**
 * The per-agent workspace size limit (`workspaceMaxBytes`), so a full workspace cannot fill the disk
 * the store lives on.
 *
 * Contract:
 * - The executor calls `refusal` before a call runs (and before its card is asked) and `afterRun`
 *   after a call of a tool that changes the workspace (WORKSPACE_WRITERS, WORKSPACE_FREERS, or a tool
 *   that declares `changesWorkspace`). The check is AFTER the fact: a command can overshoot the limit
 *   by what it wrote in one go; the result then says "over the workspace limit: X of Y".
 * - While the last measurement is over the limit, every writing tool is refused with a clear error
 *   (measured again first: space freed some other way counts at once); reads, `rm`, and commands
 *   that only remove or look (rm, rmdir, unlink, ls, du, ...: no redirect, substitution or risky
 *   option) still run, so the model can free space.
 * - The walk counts allocated blocks (st_blocks * 512, like `du`), lstat only: a symlink is counted as
 *   itself and never followed, another filesystem mounted inside is not entered, a hard-linked file
 *   counts once. It stops after `maxEntries` entries and yields to the event loop every few thousand
 *   entries. A workspace it cannot measure whole (over maxEntries, or a folder it cannot read, which
 *   could hide any amount) counts as over the limit, and the message says why.
 * - State (the last measurement) is per workspace folder, shared by the agents that share one.
 */
import { lstatSync, readdirSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { analyzeCommand } from '../../policies/shell/index.js';
import type { ToolResult } from './types.js';

export const DEFAULT_WORKSPACE_MAX_BYTES = 1024 ** 3;
/** Entries the walk visits at most (a workspace of more files is measured as at least what was seen). */
const DEFAULT_MAX_ENTRIES = 200_000;
const YIELD_EVERY = 2_000;

/** Built-in tools that add to the workspace. */
const WORKSPACE_WRITERS: ReadonlySet<string> = new Set(['execute_command', 'write_file', 'edit_file', 'mkdir', 'mv', 'cp']);
/** Built-in tools that only take away from it: they run while over the limit, and measure after. */
const WORKSPACE_FREERS: ReadonlySet<string> = new Set(['rm']);

/** Commands that only remove or look: they run while over the limit (the way to free space). */
const FREEING_OR_LOOKING = new Set(['rm', 'rmdir', 'unlink', 'chmod', 'ls', 'du', 'df', 'pwd', 'stat', 'wc', 'cat', 'head', 'tail', 'find', 'true']);

export interface WorkspaceUsage {
  bytes: number;
  entries: number;
  /** false: the walk stopped at maxEntries or could not read a folder; `bytes` is a lower bound. */
  complete: boolean;
  /** The first folder the walk could not read (a chmod 000 folder would hide what is in it). */
  unreadable?: string;
  /** The walk stopped at maxEntries. */
  capped?: boolean;
}

/** Allocated bytes under `root` (lstat, no symlink followed, one filesystem, hard links once). */
export async function measureWorkspace(root: string, opts: { maxEntries?: number } = {}): Promise<WorkspaceUsage> {
  const maxEntries = opts.maxEntries ?? DEFAULT_MAX_ENTRIES;
  let top: Stats;
  try {
    top = lstatSync(root);
  } catch {
    return { bytes: 0, entries: 0, complete: true };
  }
  if (!top.isDirectory()) return { bytes: top.blocks * 512, entries: 1, complete: true };
  const dev = top.dev;
  const seenLinks = new Set<string>();
  let bytes = top.blocks * 512;
  let entries = 0;
  let complete = true;
  let unreadable: string | undefined;
  const stack = [root];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      complete = false;
      unreadable ??= dir;
      continue;
    }
    for (const name of names) {
      if (entries >= maxEntries) return { bytes, entries, complete: false, capped: true, ...(unreadable ? { unreadable } : {}) };
      entries++;
      if (entries % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
      const path = join(dir, name);
      let st: Stats;
      try {
        st = lstatSync(path);
      } catch {
        continue; // gone meanwhile
      }
      if (st.dev !== dev) continue; // a mount inside: not this workspace's disk
      if (!st.isDirectory() && st.nlink > 1) {
        const id = `${st.ino}`;
        if (seenLinks.has(id)) continue;
        seenLinks.add(id);
      }
      bytes += st.blocks * 512;
      if (st.isDirectory()) stack.push(path);
    }
  }
  return { bytes, entries, complete, ...(unreadable ? { unreadable } : {}) };
}

/** "1.5 GiB": sizes in messages. */
function formatBytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} bytes` : `${v.toFixed(1)} ${units[i]}`;
}

const SIZE = /^(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib|t|tb|tib)?$/i;
const UNIT: Record<string, number> = {
  b: 1,
  k: 1024,
  kib: 1024,
  kb: 1000,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  mb: 1000 ** 2,
  g: 1024 ** 3,
  gib: 1024 ** 3,
  gb: 1000 ** 3,
  t: 1024 ** 4,
  tib: 1024 ** 4,
  tb: 1000 ** 4,
};

/** A config size: bytes as a number, or "500MB", "1GiB", "2G" (K/M/G/T and KiB.. are 1024-based, KB.. 1000-based); 0 / "none" / "off": no limit (0). */
export function parseByteSize(v: unknown): number | { error: string } {
  if (typeof v === 'bigint') v = Number(v);
  if (typeof v === 'number') {
    if (Number.isInteger(v) && v >= 0 && Number.isSafeInteger(v)) return v;
    return { error: `expected a whole number of bytes (0 = no limit) or a size like "1GiB", got ${v}` };
  }
  if (typeof v === 'string') {
    const s = v.trim();
    if (/^(none|off|unlimited)$/i.test(s)) return 0;
    const m = SIZE.exec(s);
    if (m) return Math.round(Number(m[1]) * UNIT[(m[2] ?? 'b').toLowerCase()]!);
    return { error: `expected a size like "500MB", "1GiB" or a number of bytes (0 or "none" = no limit), got ${JSON.stringify(v)}` };
  }
  return { error: `expected a size like "1GiB" or a number of bytes, got ${v === null ? 'nothing' : typeof v}` };
}

interface Measured {
  usage: WorkspaceUsage;
  limit: number;
}

/** The last measurement per workspace folder. */
const lastByRoot = new Map<string, Measured>();

interface QuotaTool {
  name: string;
  /** A tool not in the built-in lists that writes (true) or only frees (`'frees'`) the workspace. */
  changesWorkspace?: boolean | 'frees';
}

function kindOf(tool: QuotaTool): 'writes' | 'frees' | null {
  if (tool.changesWorkspace === 'frees' || WORKSPACE_FREERS.has(tool.name)) return 'frees';
  if (tool.changesWorkspace === true || WORKSPACE_WRITERS.has(tool.name)) return 'writes';
  return null;
}

/** A command that only removes or looks at files (allowed while over the limit). */
async function onlyFreesOrLooks(command: string): Promise<boolean> {
  const a = await analyzeCommand(command);
  if (!a.parsed || a.denied || a.hasFileRedirect || a.hasSubstitution) return false;
  if (a.commandWords.length === 0) return false;
  return a.commandWords.every((words, i) => {
    const bin = (words[0] ?? '').split('/').pop() ?? '';
    return FREEING_OR_LOOKING.has(bin) && a.optionRisks[i] === null;
  });
}

export interface WorkspaceQuota {
  /** A refusal message when this call would write while the workspace is over its limit, else null. */
  refusal(tool: QuotaTool, input: unknown): Promise<string | null>;
  /** After a call of a workspace-changing tool: measures, and says so in the result when over. */
  afterRun(tool: QuotaTool, result: ToolResult): Promise<ToolResult>;
}

/**
 * Over: more bytes than the limit, or a workspace that cannot be measured whole (more entries than
 * the walk visits, or a folder it cannot read): either could hide any amount of data.
 */
function isOver(m: Measured): boolean {
  return m.usage.bytes > m.limit || m.usage.capped === true || m.usage.unreadable !== undefined;
}

function overText(root: string, m: Measured): string {
  const used = `${m.usage.complete ? '' : 'at least '}${formatBytes(m.usage.bytes)}`;
  const why = m.usage.capped
    ? ` (more than ${m.usage.entries} files and folders: too many to measure)`
    : m.usage.unreadable
      ? ` (the folder ${m.usage.unreadable} cannot be read, so it cannot be measured: chmod it readable or remove it)`
      : '';
  return `over the workspace limit: ${used} of ${formatBytes(m.limit)} used in ${root} (workspaceMaxBytes)${why}`;
}

/** The quota of one workspace; `limit` 0 (or a non-positive value) turns it off. */
export function workspaceQuota(root: string, limit: number, opts: { maxEntries?: number } = {}): WorkspaceQuota | undefined {
  if (!(limit > 0)) return undefined;
  const measure = async (): Promise<Measured> => {
    const m = { usage: await measureWorkspace(root, opts), limit };
    lastByRoot.set(root, m);
    return m;
  };
  return {
    async refusal(tool, input) {
      if (kindOf(tool) !== 'writes') return null;
      let last = lastByRoot.get(root);
      // Not measured yet in this process (a restart): the workspace may be over already.
      if (!last || last.limit !== limit || isOver(last)) last = await measure();
      if (!isOver(last)) return null;
      if (tool.name === 'execute_command' && typeof (input as { command?: unknown })?.command === 'string') {
        if (await onlyFreesOrLooks((input as { command: string }).command)) return null;
      }
      return (
        `${tool.name} did not run: the workspace is ${overText(root, last)}. ` +
        'Free space first (the rm tool, or a command that only removes files, like `rm old.log`); ' +
        'writing tools and commands that write are refused until the workspace is under the limit.'
      );
    },
    async afterRun(tool, result) {
      if (kindOf(tool) === null) return result;
      const m = await measure();
      if (!isOver(m)) return result;
      const note = `\n\nThe workspace is now ${overText(root, m)}. Free space before writing more: until it is under the limit, writing tools and commands that write are refused (rm and reads still work).`;
      const content = typeof result.content === 'string' ? result.content + note : [...result.content, { type: 'text' as const, text: note.trimStart() }];
      return { content, isError: true };
    },
  };
}

/** Tests: forget the measurements (a new process). */
export function resetWorkspaceQuotaState(): void {
  lastByRoot.clear();
}
