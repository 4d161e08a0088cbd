/**
 * The built-in file tools: read_file, ls, find, grep (read-only) and write_file, edit_file
 * (low-risk, two-phase). Every path goes through resolveInWorkspace; nothing here touches a path
 * the model wrote without it. Every file read_file / write_file / edit_file opens (and every
 * directory write_file creates) goes through openInWorkspace (workspace.ts): fd by fd, never following
 * a symlink, so a directory swapped for a symlink by a concurrent command cannot redirect it outside.
 * The one write path is writeInWorkspace. ls, find and grep open their start the same way and reach
 * everything below it relative to open directory fds (files/walk.ts), never by a workspace path
 * string: a racing swap (rename, renameat2 RENAME_EXCHANGE) can make them skip an entry, never list
 * or read outside (test/agent/tools/workspace-race.e2e.test.ts runs that attack).
 *
 * Tiers: reading and listing are `read-only`. write_file and edit_file are `low-risk`: they change
 * only files inside the agent's own workspace, and their propose half always produces the unified
 * diff an approver sees, so an agent configured `read-only` must ask before either runs.
 *
 * Output convention (what the model reads): plain text. When a bounded tool cut its output, the
 * LAST line is exactly one `[truncated: true; <what was cut>; <how to get the rest>]` line; when
 * the output is complete there is no such line. Other notes (skipped binary files) use the same
 * bracketed form on their own line, e.g. `[skipped: 2 binary files]`. Binary files are never dumped.
 *
 * Two-phase writes: propose resolves the path, reads the current bytes, computes the new content
 * and a unified diff, and returns Proposal { summary: 'edit_file src/a.ts (+3 -1)', preview: diff,
 * data: { path, newContent, baseHash } } without mutating anything. execute re-resolves the path,
 * refuses when the file's sha256 no longer equals baseHash (changed since the diff was shown), then
 * writes exactly the proposal's newContent (what was approved), creating parent directories inside
 * the workspace for write_file.
 *
 * One file per tool or small family under ./files/ (shared.ts: limits and globs, walk.ts: the fd-by-fd walk); this module
 * is the stable import path for the lot.
 */
export { closeGrepWorkers, grepWorkerStats } from './grep-worker.js';
export * from './files/shared.js';
export * from './files/read.js';
export * from './files/list.js';
export * from './files/grep.js';
export * from './files/write.js';
export * from './files/edit.js';
