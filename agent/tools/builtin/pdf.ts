/**
 * read_pdf and pdf_page_count (read-only): the text of a PDF in the workspace, by page ranges, with
 * unpdf (pdf.js).
 *
 * Contract:
 * - The file is opened like read_file's (openInWorkspace: confined, fd by fd, no symlink followed) and
 *   must be a regular file of at most PDF_MAX_FILE_BYTES.
 * - Parsing runs in the document worker (../untrusted/doc-worker.ts), never on the bot's event loop:
 *   a hostile or huge PDF can cost at most PDF_TIME_BUDGET_MS (or the call's abort), a heap of
 *   PDF_WORKER_HEAP_MB, one decoded stream of DOC_BUDGETS.pdf.maxAllocationBytes (nested filter
 *   chains included: a compression bomb) and DOC_BUDGETS.pdf.maxBufferBytes of decoded data in all
 *   before the worker is terminated; then the call fails with a ToolError naming the budget.
 * - `pages` is a list of ranges, "1-3,7,10-": at most READ_PDF_MAX_PAGES pages and READ_PDF_MAX_CHARS
 *   characters per call. Output: a header line, then `--- page N ---` and that page's text per page;
 *   when cut, the last line is `[truncated: true; ...]` naming the `pages` value that reads on.
 *   A page with no text layer (a scan) says so instead of being silently empty.
 */
import { z } from 'zod';
import type { Tool, ToolContext } from '../types.js';
import { ToolError } from '../types.js';
import { DocJobError, DOC_BUDGETS, runDocJob, type DocBudget } from '../untrusted/doc-worker.js';
import { displayPath, errCode, openInWorkspace, resolveInWorkspace, workspaceRoot } from '../workspace.js';
import { humanSize, truncatedLine } from './files/shared.js';

const PDF_MAX_FILE_BYTES = 50 * 1024 * 1024;
export const READ_PDF_MAX_PAGES = 50;
const READ_PDF_DEFAULT_PAGES = 20;
const READ_PDF_MAX_CHARS = 100_000;
const PDF_TIME_BUDGET_MS = DOC_BUDGETS.pdf.timeMs;

/** Parses `pages` ("1-3,7,10-") into sorted unique page numbers, bounded by the page count. */
export function parsePages(spec: string, count: number): number[] {
  const out = new Set<number>();
  for (const raw of spec.split(',')) {
    const part = raw.trim();
    const m = /^(\d+)?\s*(-)?\s*(\d+)?$/.exec(part);
    if (!part || !m || (m[1] === undefined && m[3] === undefined)) {
      throw new ToolError(`pages "${spec}" is not a page list; use numbers and ranges like "1-3,7,10-".`);
    }
    const from = m[1] !== undefined ? Number(m[1]) : 1;
    const to = m[2] ? (m[3] !== undefined ? Number(m[3]) : count) : from;
    if (from < 1 || to < from) throw new ToolError(`pages "${part}" is not a valid range; pages count from 1 and a range goes up (e.g. "2-5").`);
    if (from > count) throw new ToolError(`page ${from} does not exist: the PDF has ${count} page${count === 1 ? '' : 's'}.`);
    for (let p = from; p <= Math.min(to, count); p++) out.add(p);
  }
  return [...out].sort((a, b) => a - b);
}

/** Compact ranges for a hint: [4,5,6,9] -> "4-6,9". */
function formatPages(pages: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < pages.length; ) {
    let j = i;
    while (j + 1 < pages.length && pages[j + 1] === pages[j]! + 1) j++;
    parts.push(i === j ? String(pages[i]) : `${pages[i]}-${pages[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

async function readPdfBytes(ctx: ToolContext, userPath: string): Promise<{ shown: string; bytes: Buffer }> {
  const root = await workspaceRoot(ctx.workspace);
  const abs = await resolveInWorkspace(ctx.workspace, userPath, { mustExist: true });
  const shown = displayPath(root, abs);
  const fh = await openInWorkspace(root, abs).catch((err: unknown) => {
    if (err instanceof ToolError) throw err;
    throw new ToolError(`${shown} cannot be opened (${errCode(err)}).`);
  });
  try {
    const st = await fh.stat();
    if (st.isDirectory()) throw new ToolError(`${shown} is a directory; pass a PDF file.`);
    if (!st.isFile()) throw new ToolError(`${shown} is not a regular file.`);
    if (st.size > PDF_MAX_FILE_BYTES) throw new ToolError(`${shown} is ${humanSize(st.size)}; PDFs up to ${humanSize(PDF_MAX_FILE_BYTES)} are read.`);
    const bytes = await fh.readFile();
    if (!bytes.subarray(0, 1024).includes('%PDF-')) throw new ToolError(`${shown} is not a PDF (no %PDF- header); use read_file for text files.`);
    return { shown, bytes };
  } finally {
    await fh.close();
  }
}

interface Extracted {
  numPages: number;
  pages: Array<{ n: number; text: string }>;
}

/** Parses in the document worker (../untrusted/doc-worker.ts) within the PDF budget. */
async function extract(shown: string, bytes: Buffer, pages: number[], signal: AbortSignal, budget: Partial<DocBudget>): Promise<Extracted> {
  // A copy of the file's bytes is moved to the worker: `bytes` stays usable for a second pass.
  const copy = new Uint8Array(bytes).buffer;
  try {
    return await runDocJob<Extracted>(
      'pdf',
      { bytes: copy, pages, maxChars: READ_PDF_MAX_CHARS },
      { what: `reading ${shown}`, signal, budget, transfer: [copy] },
    );
  } catch (err) {
    if (!(err instanceof DocJobError)) {
      if (err instanceof ToolError && /time budget/.test(err.message)) throw new ToolError(`${err.message.replace(/\.$/, '')}; try fewer pages.`);
      throw err;
    }
    if (/password/i.test(err.libName + err.message)) throw new ToolError(`${shown} is password-protected; it cannot be read.`);
    throw new ToolError(`${shown} could not be read as a PDF (${err.message}).`);
  }
}

export interface PdfToolOptions {
  /** Worker time one call may spend (default PDF_TIME_BUDGET_MS). */
  budgetMs?: number;
  /** For tests: other memory budgets than DOC_BUDGETS.pdf. */
  budget?: Partial<DocBudget>;
}

function budgetOf(opts: PdfToolOptions): Partial<DocBudget> {
  return { ...opts.budget, timeMs: opts.budgetMs ?? opts.budget?.timeMs ?? PDF_TIME_BUDGET_MS };
}

export const PdfPageCountInput = z.strictObject({
  path: z.string().min(1).describe('PDF file, relative to the workspace root.'),
});
export type PdfPageCountInput = z.infer<typeof PdfPageCountInput>;

export function pdfPageCountTool(opts: PdfToolOptions = {}): Tool<PdfPageCountInput> {
  return {
    name: 'pdf_page_count',
    description: 'Count the pages of a PDF in the workspace (to plan read_pdf calls on a long document).',
    input: PdfPageCountInput,
    tier: 'read-only',
    async execute(input, ctx) {
      const { shown, bytes } = await readPdfBytes(ctx, input.path);
      const r = await extract(shown, bytes, [], ctx.signal, budgetOf(opts));
      return { content: `${shown}: ${r.numPages} page${r.numPages === 1 ? '' : 's'}` };
    },
  };
}

export const ReadPdfInput = z.strictObject({
  path: z.string().min(1).describe('PDF file, relative to the workspace root.'),
  pages: z
    .string()
    .optional()
    .describe(`Pages to read, e.g. "1-3,7,10-" (default the first ${READ_PDF_DEFAULT_PAGES}; at most ${READ_PDF_MAX_PAGES} per call).`),
});
export type ReadPdfInput = z.infer<typeof ReadPdfInput>;

export function readPdfTool(opts: PdfToolOptions = {}): Tool<ReadPdfInput> {
  return {
    name: 'read_pdf',
    description:
      `Extract the text of a PDF in the workspace, page by page ("--- page N ---" before each). At most ${READ_PDF_MAX_PAGES} ` +
      `pages and ${READ_PDF_MAX_CHARS / 1000}k characters per call; when cut, the last line says which pages to read next. ` +
      'Scanned pages without a text layer are reported as such.',
    input: ReadPdfInput,
    tier: 'read-only',
    async execute(input, ctx) {
      const { shown, bytes } = await readPdfBytes(ctx, input.path);
      const budget = budgetOf(opts);
      // The page count first (pdf.js loads pages lazily, so this is cheap), then the pages asked for.
      const { numPages } = await extract(shown, bytes, [], ctx.signal, budget);
      const wanted = parsePages(input.pages ?? `1-${READ_PDF_DEFAULT_PAGES}`, numPages);
      const batch = wanted.slice(0, READ_PDF_MAX_PAGES);
      const r = await extract(shown, bytes, batch, ctx.signal, budget);
      const lines = [`${shown}: ${numPages} page${numPages === 1 ? '' : 's'}`];
      let chars = 0;
      const shownPages: number[] = [];
      for (const p of r.pages) {
        if (!batch.includes(p.n)) continue;
        const room = READ_PDF_MAX_CHARS - chars;
        if (room <= 0) break;
        const text = p.text.trim();
        lines.push(`--- page ${p.n} ---`, text === '' ? '(no text on this page; it may be a scanned image)' : text.slice(0, room));
        chars += Math.min(text.length, room);
        if (text.length > room) {
          lines.push(truncatedLine(`page ${p.n} was cut at ${READ_PDF_MAX_CHARS / 1000}k characters for this call`, 'the rest of that page cannot be shown'));
        }
        shownPages.push(p.n);
      }
      const rest = wanted.filter((n) => !shownPages.includes(n));
      if (rest.length > 0) {
        lines.push(
          truncatedLine(`showing ${shownPages.length} of ${wanted.length} requested pages`, `call read_pdf with pages="${formatPages(rest)}" to read on`),
        );
      }
      return { content: lines.join('\n') };
    },
  };
}
