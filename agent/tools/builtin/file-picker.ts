/**
 * ask_file_picker: the model asks the people in the conversation to pick files from the workspace.
 * It is ask_user_question with the workspace's files as the choices, so it reaches every surface the
 * same way: buttons on chat platforms, numbers in the terminal, `user_input_required` on headless.
 *
 * Contract:
 * - The choices are files (not directories) under `path` matching `pattern`, found by the same
 *   fd-by-fd walk as find (nothing outside the workspace is listed; node_modules and .git skipped).
 *   The first MAX_BUTTONS are buttons; a typed reply also answers (one path, or several separated
 *   by commas or new lines when `multiple`).
 * - Every picked path is checked after the answer: it must be an existing file inside the workspace.
 *   The result lists the picked paths; what did not check out is named, never passed on silently.
 * - needsHuman: not offered where nobody can answer (headless unattended, a sub-agent). longRunning:
 *   the wait does not count against the run's timeout. Read-only: picking changes nothing.
 */
import { z } from 'zod';
import { ToolError, type Tool } from '../types.js';
import { displayPath, errCode, openInWorkspace, resolveInWorkspace, workspaceRoot } from '../workspace.js';
import { globMatcher } from './files/shared.js';
import { walkTree } from './files/walk.js';

/** Buttons shown at most (the rest can be typed). */
const MAX_BUTTONS = 8;
/** Files listed at most (as buttons and in the question's text). */
const MAX_LISTED = 50;

const Input = z.strictObject({
  prompt: z.string().min(1).max(2000).describe('What the files are for, shown above the choices.'),
  path: z.string().optional().describe('Directory to pick from, relative to the workspace root (default: the root).'),
  pattern: z.string().min(1).max(200).default('*').describe('Glob the files must match, e.g. "*.md" or "src/**/*.ts" (default: all files).'),
  multiple: z.boolean().default(false).describe('Whether several files may be picked (typed, separated by commas).'),
});
export type FilePickerInput = z.infer<typeof Input>;

export function askFilePickerTool(): Tool<FilePickerInput> {
  return {
    name: 'ask_file_picker',
    description:
      'Ask the user to pick one file (or several, with multiple) from the workspace, and wait for the answer. ' +
      'Use when the user must choose which file to work on. Returns the workspace-relative paths picked.',
    input: Input as z.ZodType<FilePickerInput>,
    tier: 'read-only',
    longRunning: true,
    needsHuman: true,
    async execute(input, ctx) {
      if (!ctx.askUser) throw new ToolError('nobody can pick files in this conversation; ask for the file name in your answer instead.');
      const root = await workspaceRoot(ctx.workspace);
      const start = await resolveInWorkspace(ctx.workspace, input.path ?? '.', { mustExist: true });
      const shownStart = displayPath(root, start);
      const match = globMatcher(input.pattern);
      const dir = await openInWorkspace(root, start).catch((err: unknown) => {
        throw err instanceof ToolError ? err : new ToolError(`${shownStart} cannot be opened (${errCode(err)}).`);
      });
      const files: string[] = [];
      let more = false;
      // walkTree owns `dir` and closes it however the loop ends.
      for await (const e of walkTree(dir, ctx.signal, { includeIgnored: false })) {
        if (e.kind !== 'file' || !match(e.rel, e.name)) continue;
        if (files.length >= MAX_LISTED) {
          more = true;
          break;
        }
        files.push(shownStart === '.' ? e.rel : `${shownStart}/${e.rel}`);
      }
      if (files.length === 0) throw new ToolError(`No files match "${input.pattern}" under ${shownStart}; nothing to pick from.`);
      const listed = files.length > MAX_BUTTONS ? `\n\nAlso: ${files.slice(MAX_BUTTONS).join(', ')}${more ? ', …' : ''}` : '';
      const how = input.multiple ? 'Tap one, or type several paths separated by commas.' : 'Tap one, or type its path.';
      const a = await ctx.askUser({
        question: `${input.prompt}\n${how}${listed}`,
        suggestions: files.slice(0, MAX_BUTTONS).map((f) => ({ value: f, label: label(f) })),
        allowCustom: true,
      });
      if (a.answer === null) return { content: 'Nobody picked a file in time. Say which file you will assume, or ask again later.' };
      const picked = input.multiple
        ? a.answer
            .split(/[,\n]/)
            .map((s) => s.trim())
            .filter(Boolean)
        : [a.answer.trim()];
      const ok: string[] = [];
      const bad: string[] = [];
      for (const p of picked) ((await isWorkspaceFile(ctx.workspace, root, p)) ? ok : bad).push(p);
      const by = a.by ? ` by ${a.by}` : '';
      if (ok.length === 0)
        return { content: `The answer${by} (${JSON.stringify(a.answer)}) names no file in the workspace. Ask again, or ask what they meant.`, isError: true };
      return { content: [`Picked${by}: ${ok.join(', ')}`, ...(bad.length ? [`Not files in the workspace (left out): ${bad.join(', ')}`] : [])].join('\n') };
    },
  };
}

/** Button text: the file's name, and as much of its folder as fits in 60 characters. */
function label(rel: string): string {
  return rel.length <= 60 ? rel : `…${rel.slice(rel.length - 59)}`;
}

async function isWorkspaceFile(workspace: string, root: string, p: string): Promise<boolean> {
  try {
    const abs = await resolveInWorkspace(workspace, p, { mustExist: true });
    const fh = await openInWorkspace(root, abs);
    try {
      return (await fh.stat()).isFile();
    } finally {
      await fh.close();
    }
  } catch {
    return false;
  }
}
