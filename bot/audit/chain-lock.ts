/**
 * Which chain a process that is not the service writes (an in-process `gatehouse run`): the chain
 * `<base>-cli`, held by one process at a time through `<chain>.lock` (created exclusively, holding the
 * pid). A second run at the same time writes its own chain `<base>-cli-<pid>`, so two processes never
 * append to one chain (each writer keeps the last hash in memory: two writers would fork the chain).
 *
 * Contract: `claimCliChain(dir, base)` returns the chain name and a release function (removes the
 * lock if this process made it). A lock whose pid is no longer running is taken over.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function claimCliChain(dir: string, base: string): { chain: string; release: () => void } {
  const chain = `${base}-cli`;
  const lock = join(dir, `${chain}.lock`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lock, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return { chain, release: () => rmSync(lock, { force: true }) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number.parseInt(readFileSync(lock, 'utf8'), 10);
      if (Number.isInteger(holder) && holder > 0 && alive(holder)) break;
      rmSync(lock, { force: true }); // its process is gone: take it over
    }
  }
  return { chain: `${chain}-${process.pid}`, release: () => undefined };
}
