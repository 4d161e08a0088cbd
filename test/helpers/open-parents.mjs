/**
 * Contract: the checkout's parent folders are passable (search permission, o+x; not listing) for
 * other users for the whole jest run, when the tests run as root.
 * Tests running as root start processes as other users: the bot as the image's uid 1000
 * (test/deploy), PostgreSQL as `postgres`, boxed MCP servers as 65534. Each must pass through every
 * folder above the checkout and above the node_modules it runs from, and a checkout may sit in a
 * folder only root can enter (a CI clone in `mktemp -d`, mode 0700).
 * - `openParents()` runs ONCE per jest run, from globalSetup (test/helpers/global-setup.mjs, also
 *   under TEST_FAST): adds o+x where it is missing and remembers the old modes;
 *   `restoreParents()` puts them back at globalTeardown. Nothing else changes these modes, so no
 *   test file can take a folder away from another that still runs.
 * - `assertParentsOpen(from?)` is what a test calls: it changes nothing and throws naming every
 *   folder from `from` (default: the checkout) up to / that the other users cannot pass.
 * - Not root: all three do nothing (tests then start no process as another user).
 */
import { chmodSync, existsSync, realpathSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const checkoutRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The old modes of the folders this run opened; on globalThis so teardown finds what setup did. */
const KEY = Symbol.for('gatehouse.test.openedParents');
const isRoot = () => process.getuid?.() === 0;

/** The checkout and the real place of its node_modules (a symlink in a worktree), each with its parents. */
function starts() {
  const modules = join(checkoutRoot, 'node_modules');
  return [checkoutRoot, ...(existsSync(modules) ? [realpathSync(modules)] : [])];
}

/** Every folder from `dir` up to /, `dir` included, that others cannot pass through. */
function closedFrom(dir) {
  const closed = [];
  for (let d = dir; ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) closed.push(d);
    if (d === dirname(d)) return closed;
  }
}

export function openParents() {
  if (!isRoot()) return;
  const opened = (globalThis[KEY] ??= []);
  for (const d of new Set(starts().flatMap(closedFrom))) {
    const mode = statSync(d).mode & 0o7777;
    opened.push({ path: d, mode });
    chmodSync(d, mode | 0o001);
  }
}

export function restoreParents() {
  const opened = globalThis[KEY] ?? [];
  for (const { path, mode } of opened.splice(0).reverse()) {
    try {
      chmodSync(path, mode);
    } catch {
      // gone meanwhile
    }
  }
}

export function assertParentsOpen(from) {
  if (!isRoot()) return;
  const closed = [...new Set((from === undefined ? starts() : [from]).flatMap(closedFrom))];
  if (closed.length > 0) {
    throw new Error(
      `other users cannot pass through ${closed.join(', ')} (no o+x): jest.config.js globalSetup (test/helpers/global-setup.mjs) ` +
        'opens the checkout and its node_modules for the run; run the tests through jest, or chmod o+x those folders.',
    );
  }
}
