// Two writers never share a chain: a second claim while the first is held gets a chain of its own,
// a lock left by a process that is gone is taken over, and release frees it for the next run.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claimCliChain } from '../../bot/audit/chain-lock.js';

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gh-chainlock-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('held: the second claim writes its own chain; released: the next claim gets the shared one', () => {
  const a = claimCliChain(dir, 'audit');
  expect(a.chain).toBe('audit-cli');
  const b = claimCliChain(dir, 'audit');
  expect(b.chain).toBe(`audit-cli-${process.pid}`);
  b.release();
  expect(existsSync(join(dir, 'audit-cli.lock'))).toBe(true);
  a.release();
  expect(existsSync(join(dir, 'audit-cli.lock'))).toBe(false);
  expect(claimCliChain(dir, 'audit').chain).toBe('audit-cli');
});

test('a lock whose process is gone is taken over', () => {
  writeFileSync(join(dir, 'audit-cli.lock'), '999999999\n');
  const c = claimCliChain(dir, 'audit');
  expect(c.chain).toBe('audit-cli');
  c.release();
});
