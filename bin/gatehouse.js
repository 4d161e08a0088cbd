#!/usr/bin/env node
// The `gatehouse` command (package.json "bin", `npm start`, `npx gatehouse`). It runs the compiled
// CLI in dist/, compiling it first only when dist/ is missing or older than a source file (a fresh
// clone whose install skipped `prepare`, a `git pull`): a normal start does not recompile.
// Build messages go to stderr, so `--json` output on stdout stays clean.
// The check on every start is one readdir per source folder and one stat per .ts file (a few ms);
// node:child_process and TypeScript are loaded only when a build is due.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'dist', 'bot', 'main.js');
const SOURCES = ['bot', 'adapters', 'agent', 'policies'];

/** Newest modification time of the TypeScript sources (0 when there are none, as in the Docker image). */
function newestSource(dir) {
  let newest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

const built = existsSync(entry) ? statSync(entry).mtimeMs : 0;
const sources = Math.max(...SOURCES.map((d) => newestSource(join(root, d))));
if (built === 0 || sources > built) {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!existsSync(tsc)) {
    if (built === 0) {
      process.stderr.write('Gatehouse is not built and TypeScript is not installed: run `npm ci` (it builds), then try again.\n');
      process.exit(1);
    }
    process.stderr.write('Note: the sources are newer than dist/, but TypeScript is not installed to rebuild; running the old build.\n');
  } else {
    process.stderr.write('Building Gatehouse (dist/ is missing or older than the sources)...\n');
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: ['ignore', 2, 2] });
    if (r.status !== 0) {
      process.stderr.write('The build failed (see above); fix it, or run `npm run build` to see the errors again.\n');
      process.exit(1);
    }
  }
}
await import(pathToFileURL(entry).href);
