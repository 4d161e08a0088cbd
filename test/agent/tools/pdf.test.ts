// read_pdf and pdf_page_count on PDFs made here with pdf-lib, read back with the real unpdf.
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { parsePages, pdfPageCountTool, readPdfTool, READ_PDF_MAX_PAGES } from '../../../agent/tools/builtin/pdf.js';
import { makeCtx, removeDir, run, tempDir } from './builtin-helpers.js';

let base: string;
let ws: string;

async function makePdf(pages: number, opts: { blank?: number[] } = {}): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let i = 1; i <= pages; i++) {
    const page = doc.addPage();
    if (opts.blank?.includes(i)) continue;
    page.drawText(`Chapter ${i}`, { x: 50, y: 700, font, size: 14 });
    page.drawText(`Body text of page ${i}.`, { x: 50, y: 680, font, size: 12 });
  }
  return doc.save();
}

beforeAll(async () => {
  base = await tempDir('gh-pdf-');
  ws = path.join(base, 'ws');
  await mkdir(ws);
  await writeFile(path.join(ws, 'report.pdf'), await makePdf(3, { blank: [2] }));
  await writeFile(path.join(ws, 'long.pdf'), await makePdf(READ_PDF_MAX_PAGES + 10));
  await writeFile(path.join(ws, 'notes.txt'), 'plain text');
  await writeFile(path.join(ws, 'broken.pdf'), '%PDF-1.7\nthis is not really a pdf\n');
  await writeFile(path.join(base, 'outside.pdf'), await makePdf(1));
  await symlink(path.join(base, 'outside.pdf'), path.join(ws, 'link.pdf'));
});

afterAll(async () => {
  await removeDir(base);
});

const ctx = () => makeCtx(ws);

test('pdf_page_count counts pages', async () => {
  expect(await run(pdfPageCountTool(), { path: 'report.pdf' }, ctx())).toBe('report.pdf: 3 pages');
});

test('read_pdf returns each page under its own heading and says when a page has no text', async () => {
  expect(await run(readPdfTool(), { path: 'report.pdf' }, ctx())).toBe(
    [
      'report.pdf: 3 pages',
      '--- page 1 ---',
      'Chapter 1\nBody text of page 1.',
      '--- page 2 ---',
      '(no text on this page; it may be a scanned image)',
      '--- page 3 ---',
      'Chapter 3\nBody text of page 3.',
    ].join('\n'),
  );
});

test('page ranges select pages; a long document is cut with the pages to read next', async () => {
  const some = await run(readPdfTool(), { path: 'long.pdf', pages: '2-3, 59' }, ctx());
  expect(some.match(/^--- page \d+ ---$/gm)).toEqual(['--- page 2 ---', '--- page 3 ---', '--- page 59 ---']);
  const all = await run(readPdfTool(), { path: 'long.pdf', pages: '1-' }, ctx());
  expect(all.match(/^--- page \d+ ---$/gm)).toHaveLength(READ_PDF_MAX_PAGES);
  expect(all.split('\n').at(-1)).toBe(`[truncated: true; showing 50 of 60 requested pages; call read_pdf with pages="51-60" to read on]`);
});

test('bad ranges, pages past the end, non-PDFs and broken PDFs are clear errors', async () => {
  await expect(run(readPdfTool(), { path: 'report.pdf', pages: '5' }, ctx())).rejects.toThrow('page 5 does not exist: the PDF has 3 pages');
  await expect(run(readPdfTool(), { path: 'report.pdf', pages: '3-1' }, ctx())).rejects.toThrow('not a valid range');
  await expect(run(readPdfTool(), { path: 'report.pdf', pages: 'first' }, ctx())).rejects.toThrow('not a page list');
  await expect(run(readPdfTool(), { path: 'notes.txt' }, ctx())).rejects.toThrow('is not a PDF');
  await expect(run(readPdfTool(), { path: 'broken.pdf' }, ctx())).rejects.toThrow('could not be read as a PDF');
});

test('a PDF outside the workspace, directly or through a symlink, is refused', async () => {
  await expect(run(readPdfTool(), { path: '../outside.pdf' }, ctx())).rejects.toThrow(/outside the workspace/);
  await expect(run(pdfPageCountTool(), { path: 'link.pdf' }, ctx())).rejects.toThrow(/outside the workspace/);
});

test('parsePages: unions, open ranges, order', () => {
  expect(parsePages('3,1-2,2', 10)).toEqual([1, 2, 3]);
  expect(parsePages('8-', 10)).toEqual([8, 9, 10]);
  expect(parsePages('-2', 10)).toEqual([1, 2]);
  expect(parsePages('1-1000000000', 4)).toEqual([1, 2, 3, 4]);
});

test('a PDF that takes longer than the time budget is stopped with a clear error (the worker is terminated)', async () => {
  await expect(run(readPdfTool({ budgetMs: 5 }), { path: 'long.pdf' }, ctx())).rejects.toThrow(/took longer than .* and was stopped; try fewer pages/);
});
