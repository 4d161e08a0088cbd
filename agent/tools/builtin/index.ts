/**
 * The built-in tool sets, as the registry takes them. Each call builds fresh tool objects (no
 * shared state between agents); a tool's tier is declared on the tool itself.
 */
import type { AnyTool, Tool } from '../types.js';
import { editFileTool, findTool, grepTool, lsTool, readFileTool, writeFileTool } from './files.js';
import { cpTool, mkdirTool, mvTool, rmTool } from './files/manage.js';
import { httpRequestTool, webFetchTool, type WebToolOptions } from './web/tools.js';
import { pdfPageCountTool, readPdfTool } from './pdf.js';
import { getTimeTool, type GetTimeOptions } from './time.js';
import { listTodosTool, manageTodosTool } from './todos.js';

/** The registry stores tools untyped; each tool validates its own input before it is called. */
export function erase<I>(tool: Tool<I>): AnyTool {
  return tool as unknown as AnyTool;
}

/** read_file, ls, find, grep (read-only); write_file, edit_file (low-risk, two-phase). */
export function builtinFileTools(): AnyTool[] {
  return [erase(readFileTool()), erase(lsTool()), erase(findTool()), erase(grepTool()), erase(writeFileTool()), erase(editFileTool())];
}

/** mkdir, rm, mv, cp (high-risk, two-phase: the card lists what is created, removed or overwritten). */
export function builtinManageTools(): AnyTool[] {
  return [erase(mkdirTool()), erase(rmTool()), erase(mvTool()), erase(cpTool())];
}

/** web_fetch (read-only), http_request (GET/HEAD read-only, other methods high-risk). */
export function builtinWebTools(opts: WebToolOptions = {}): AnyTool[] {
  return [erase(webFetchTool(opts)), erase(httpRequestTool(opts))];
}

/** read_pdf, pdf_page_count (read-only). */
export function builtinPdfTools(): AnyTool[] {
  return [erase(readPdfTool()), erase(pdfPageCountTool())];
}

/** get_time, list_todos (read-only); manage_todos (low-risk). */
export function builtinMiscTools(opts: { time?: GetTimeOptions } = {}): AnyTool[] {
  return [erase(getTimeTool(opts.time)), erase(manageTodosTool()), erase(listTodosTool())];
}
