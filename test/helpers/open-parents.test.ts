/**
 * test/helpers/open-parents.mjs: a folder others cannot pass is named by the check, and during a jest
 * run the checkout's parents are open (globalSetup opened them; no test file does).
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertParentsOpen } from './open-parents.mjs';

const asRoot = process.getuid?.() === 0;

test('as root, a 0700 folder above the path is named; opened (o+x only) it passes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gh-closed-'));
  try {
    const inner = join(dir, 'a', 'b');
    mkdirSync(inner, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o700);
    if (asRoot) expect(() => assertParentsOpen(inner)).toThrow(new RegExp(`cannot pass through ${dir} \\(no o\\+x\\)`));
    else expect(() => assertParentsOpen(inner)).not.toThrow(); // not root: nobody else is started, nothing to check
    chmodSync(dir, 0o711);
    expect(() => assertParentsOpen(inner)).not.toThrow();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('during the run the checkout and its node_modules are passable', () => {
  expect(() => assertParentsOpen()).not.toThrow();
});
