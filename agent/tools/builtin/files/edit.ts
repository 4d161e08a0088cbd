/** edit_file (low-risk, two-phase): exact, unique-match replacements. */
import { z } from 'zod';
import type { Tool } from '../../types.js';
import { ToolError } from '../../types.js';
import { applyChange, proposal, readCurrent } from './write.js';

export const EditFileInput = z.strictObject({
  path: z.string().min(1).describe('Existing text file to edit, relative to the workspace root.'),
  edits: z
    .array(
      z.strictObject({
        oldText: z.string().min(1).describe('Exact text to replace, including whitespace and indentation; must occur exactly once in the file.'),
        newText: z.string().describe('The replacement text.'),
      }),
    )
    .min(1)
    .max(100)
    .describe('Replacements applied in order; each oldText must match exactly once at the time it is applied.'),
});
export type EditFileInput = z.infer<typeof EditFileInput>;

function countOccurrences(hay: string, needle: string): number {
  let n = 0;
  let i = hay.indexOf(needle);
  while (i !== -1) {
    n++;
    i = hay.indexOf(needle, i + 1); // overlapping matches count too: "aa" is ambiguous in "aaa"
  }
  return n;
}

/**
 * edit_file: low-risk (same reasoning as write_file). Exact, unique-match replacements; a CRLF file
 * also accepts LF-only oldText/newText (converted to CRLF).
 */
export function editFileTool(): Tool<EditFileInput> {
  const tool: Tool<EditFileInput> = {
    name: 'edit_file',
    description:
      'Edit an existing text file in the workspace by exact replacements: each edit replaces oldText, which ' +
      'must occur exactly once, with newText. Read the file first and copy oldText exactly. The change may need ' +
      'approval; a diff is shown.',
    input: EditFileInput,
    tier: 'low-risk',
    async propose(input, ctx) {
      const cur = await readCurrent(ctx, input.path, 'edit_file');
      if (cur.content === undefined) {
        throw new ToolError(`${cur.shown} does not exist; use write_file to create it, or ls/find to locate the file.`);
      }
      const crlf = cur.content.includes('\r\n');
      let next = cur.content;
      input.edits.forEach((edit, k) => {
        let { oldText, newText } = edit;
        let n = countOccurrences(next, oldText);
        if (n === 0 && crlf && !oldText.includes('\r\n')) {
          const o = oldText.replace(/\n/g, '\r\n');
          const m = countOccurrences(next, o);
          if (m > 0) {
            oldText = o;
            newText = newText.replace(/\r?\n/g, '\r\n');
            n = m;
          }
        }
        const which = input.edits.length > 1 ? `edits[${k}].oldText` : 'oldText';
        if (n === 0) {
          throw new ToolError(
            `${which} was not found in ${cur.shown}` +
              (k > 0 ? ' (after the earlier edits were applied)' : '') +
              '; read the file again and copy the text exactly, including whitespace and indentation. Nothing was changed.',
          );
        }
        if (n > 1) {
          throw new ToolError(
            `${which} occurs ${n} times in ${cur.shown}; it must occur exactly once. Include more surrounding lines ` +
              'so it matches one place. Nothing was changed.',
          );
        }
        const at = next.indexOf(oldText);
        next = next.slice(0, at) + newText + next.slice(at + oldText.length);
      });
      if (next === cur.content) throw new ToolError(`These edits leave ${cur.shown} unchanged; nothing to do.`);
      return proposal('edit_file', cur, next);
    },
    async execute(input, ctx, prepared) {
      return applyChange(ctx, prepared, 'edit_file', () => tool.propose!(input, ctx));
    },
  };
  return tool;
}
