/**
 * The bin launcher (bin/gatehouse.js) as a real process on a copy of the repository: it builds
 * dist/ when it is missing or older than the sources, and not otherwise (`npm start` does not
 * recompile on every start).
 *
 * The first build is the real one (TypeScript compiles the copy, and the built CLI answers). The
 * rebuild after a source change is checked for the launcher's decision and its call: there the copy's
 * TypeScript is a stand-in that records how it was called (a second full compile would only repeat
 * the first one's proof, at a minute or more of a 2-core machine).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot as root } from '../helpers/process.js';

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };

/** Replaces the copy's node_modules link by a folder of links to the real packages, TypeScript by a recorder. */
function recordingTypeScript(copy: string): string {
  const modules = join(copy, 'node_modules');
  unlinkSync(modules);
  mkdirSync(modules);
  for (const name of readdirSync(join(root, 'node_modules'))) {
    if (name !== 'typescript') symlinkSync(join(root, 'node_modules', name), join(modules, name));
  }
  const ts = join(modules, 'typescript');
  mkdirSync(join(ts, 'bin'), { recursive: true });
  writeFileSync(join(ts, 'package.json'), JSON.stringify({ name: 'typescript', version: '0.0.0-recorder' }));
  const calls = join(copy, 'tsc-calls.json');
  writeFileSync(join(ts, 'bin', 'tsc'), `require('node:fs').appendFileSync(${JSON.stringify(calls)}, JSON.stringify(process.argv.slice(2)) + '\\n');\n`);
  return calls;
}

test('the launcher builds a fresh clone once, not on every start, and again when a source changes', () => {
  const copy = mkdtempSync(join(tmpdir(), 'gh-launcher-'));
  try {
    for (const p of ['bin', 'bot', 'adapters', 'agent', 'policies', 'bench', 'test/fakes', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
      cpSync(join(root, p), join(copy, p), { recursive: true });
    }
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
    const run = () => spawnSync(process.execPath, [join(copy, 'bin', 'gatehouse.js'), '--version'], { cwd: copy, encoding: 'utf8' });

    const fresh = run();
    expect(fresh.stderr).toContain('Building Gatehouse');
    expect(fresh.stdout).toBe(`gatehouse ${pkg.version}\n`);
    expect(fresh.status).toBe(0);

    const again = run();
    expect(again.stderr).toBe('');
    expect(again.stdout).toBe(`gatehouse ${pkg.version}\n`);

    // A source newer than the build (a git pull): built again before it runs.
    const calls = recordingTypeScript(copy);
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(copy, 'bot', 'cli', 'index.ts'), later, later);
    const changed = run();
    expect(changed.stderr).toContain('Building Gatehouse');
    expect(changed.status).toBe(0);
    expect(
      existsSync(calls)
        ? readFileSync(calls, 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as string[])
        : [],
    ).toEqual([['-p', join(copy, 'tsconfig.build.json')]]);
    expect(changed.stdout).toBe(`gatehouse ${pkg.version}\n`);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}, 300_000);
