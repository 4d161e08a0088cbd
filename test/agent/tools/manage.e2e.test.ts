// mkdir, rm, mv, cp: cards that list what changes, re-checks between card and execute, and
// confinement tested by running the attacks in a temp dir and looking at what changed outside.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { cpTool, mkdirTool, mvTool, rmTool } from '../../../agent/tools/builtin/files/manage.js';
import { builtinManageTools } from '../../../agent/tools/builtin/index.js';
import { ToolError } from '../../../agent/tools/types.js';
import { makeCtx, propose, proposeAndRun, removeDir, tempDir, textOf } from './builtin-helpers.js';

let base: string;
let ws: string;
let outside: string;

/** Every entry below `dir` with its content (files) or kind, to compare before and after an attack. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const p = path.join(e.parentPath, e.name);
    const rel = path.relative(dir, p);
    out[rel] = e.isFile() ? await readFile(p, 'utf8') : e.isDirectory() ? '<dir>' : e.isSymbolicLink() ? '<link>' : '<other>';
  }
  return out;
}

beforeEach(async () => {
  base = await tempDir('gh-manage-');
  ws = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  await mkdir(path.join(ws, 'data', 'sub'), { recursive: true });
  await writeFile(path.join(ws, 'data', 'a.txt'), 'aaaa');
  await writeFile(path.join(ws, 'data', 'sub', 'b.txt'), 'bb');
  await writeFile(path.join(ws, 'note.txt'), 'note\n');
  await mkdir(path.join(outside, 'sub'), { recursive: true });
  await writeFile(path.join(outside, 'a.txt'), 'OUTSIDE');
  await writeFile(path.join(outside, 'sub', 'b.txt'), 'OUTSIDE B');
  await writeFile(path.join(base, 'secret.txt'), 'SECRET');
  await symlink(outside, path.join(ws, 'out'));
});

afterEach(async () => {
  await removeDir(base);
});

test('the four tools are high-risk and two-phase', () => {
  expect(builtinManageTools().map((t) => [t.name, t.tier, typeof t.propose])).toEqual([
    ['mkdir', 'high-risk', 'function'],
    ['rm', 'high-risk', 'function'],
    ['mv', 'high-risk', 'function'],
    ['cp', 'high-risk', 'function'],
  ]);
});

describe('mkdir', () => {
  test('the card lists every directory it creates; execute creates them', async () => {
    const ctx = makeCtx(ws);
    const { proposal, output } = await proposeAndRun(mkdirTool(), { path: 'x/y/z' }, ctx);
    expect(proposal.summary).toBe('mkdir x/y/z (creates 3 directories)');
    expect(proposal.preview).toBe('Will create:\n  x/\n  x/y/\n  x/y/z/');
    expect(output).toBe('Created directory x/y/z.');
    expect((await lstat(path.join(ws, 'x/y/z'))).isDirectory()).toBe(true);
  });

  test('refuses an existing directory, a file on the way, and paths through a symlink out', async () => {
    const ctx = makeCtx(ws);
    await expect(propose(mkdirTool(), { path: 'data' }, ctx)).rejects.toThrow('already exists');
    await expect(propose(mkdirTool(), { path: 'note.txt/d' }, ctx)).rejects.toThrow(/not a directory/);
    await expect(propose(mkdirTool(), { path: 'out/new' }, ctx)).rejects.toThrow(/outside the workspace/);
    await expect(propose(mkdirTool(), { path: '../escape' }, ctx)).rejects.toThrow(/outside the workspace/);
    expect(existsSync(path.join(outside, 'new'))).toBe(false);
    expect(existsSync(path.join(base, 'escape'))).toBe(false);
  });
});

describe('rm', () => {
  test('a directory: the card counts files, subdirectories and bytes and lists each entry', async () => {
    const ctx = makeCtx(ws);
    const { proposal, output } = await proposeAndRun(rmTool(), { path: 'data', recursive: true }, ctx);
    expect(proposal.summary).toBe('rm data (directory: 2 files, 1 subdirectory, 6 B)');
    expect(proposal.preview).toBe('Will remove:\n  data/\n  data/a.txt (4 B)\n  data/sub/\n  data/sub/b.txt (2 B)');
    expect(output).toBe('Removed data (directory: 2 files, 1 subdirectory, 6 B).');
    expect(existsSync(path.join(ws, 'data'))).toBe(false);
  });

  test('a non-empty directory needs recursive: true; a missing path is a clear error', async () => {
    const ctx = makeCtx(ws);
    await expect(propose(rmTool(), { path: 'data' }, ctx)).rejects.toThrow('pass recursive: true');
    await expect(propose(rmTool(), { path: 'nope.txt' }, ctx)).rejects.toThrow('does not exist');
    expect(existsSync(path.join(ws, 'data', 'a.txt'))).toBe(true);
  });

  test('a file added after the card was shown: refused, nothing removed', async () => {
    const ctx = makeCtx(ws);
    const tool = rmTool();
    const proposal = await propose(tool, { path: 'data', recursive: true }, ctx);
    await writeFile(path.join(ws, 'data', 'sub', 'new.txt'), 'important');
    await expect(tool.execute({ path: 'data', recursive: true }, ctx, { proposal })).rejects.toThrow('data was changed since the approval card was shown');
    expect(await readFile(path.join(ws, 'data', 'sub', 'new.txt'), 'utf8')).toBe('important');
  });

  test('a symlink pointing out is removed itself; its target is untouched', async () => {
    const before = await snapshot(outside);
    const { proposal, output } = await proposeAndRun(rmTool(), { path: 'out', recursive: true }, makeCtx(ws));
    expect(proposal.summary).toBe('rm out (symlink (the link itself, not its target))');
    expect(output).toMatch(/^Removed out/);
    expect(existsSync(path.join(ws, 'out'))).toBe(false);
    expect(await snapshot(outside)).toEqual(before);
  });

  test('paths through a symlink out, with .., or the workspace itself are refused', async () => {
    const ctx = makeCtx(ws);
    const before = await snapshot(base);
    for (const p of ['out/a.txt', 'out/sub', '../secret.txt', 'data/../../secret.txt', '.', 'data/..', ws, path.join(outside, 'a.txt')]) {
      const attempt = propose(rmTool(), { path: p, recursive: true }, ctx);
      await expect(attempt).rejects.toBeInstanceOf(ToolError);
    }
    expect(await snapshot(base)).toEqual(before);
  });

  test('a directory swapped for a symlink to outside between card and execute: refused, outside untouched', async () => {
    const ctx = makeCtx(ws);
    const tool = rmTool();
    const proposal = await propose(tool, { path: 'data', recursive: true }, ctx);
    await rename(path.join(ws, 'data'), path.join(ws, 'data.moved'));
    await symlink(outside, path.join(ws, 'data'));
    const before = await snapshot(outside);
    await expect(tool.execute({ path: 'data', recursive: true }, ctx, { proposal })).rejects.toThrow('changed since the approval card');
    expect(await snapshot(outside)).toEqual(before);
  });

  test('a parent directory swapped for a symlink to outside between card and execute: refused, outside untouched', async () => {
    const ctx = makeCtx(ws);
    const tool = rmTool();
    const proposal = await propose(tool, { path: 'data/sub', recursive: true }, ctx);
    await rename(path.join(ws, 'data'), path.join(ws, 'data.moved'));
    await symlink(outside, path.join(ws, 'data'));
    const before = await snapshot(outside);
    await expect(tool.execute({ path: 'data/sub', recursive: true }, ctx, { proposal })).rejects.toThrow(/outside the workspace/);
    expect(await snapshot(outside)).toEqual(before);
  });

  test('a symlink planted inside a directory is unlinked, never followed', async () => {
    await symlink(outside, path.join(ws, 'data', 'sub', 'evil'));
    await symlink(path.join(base, 'secret.txt'), path.join(ws, 'data', 'evil-file'));
    const before = await snapshot(base);
    const { proposal } = await proposeAndRun(rmTool(), { path: 'data', recursive: true }, makeCtx(ws));
    expect(proposal.summary).toBe('rm data (directory: 2 files, 1 subdirectory, 2 symlinks, 6 B)');
    const after = await snapshot(base);
    for (const k of Object.keys(before)) if (!k.startsWith('ws/data')) expect([k, after[k]]).toEqual([k, before[k]]);
    expect(existsSync(path.join(ws, 'data'))).toBe(false);
  });
});

describe('mv', () => {
  test('renames; an existing destination needs overwrite and the card lists what is replaced', async () => {
    const ctx = makeCtx(ws);
    await expect(propose(mvTool(), { from: 'note.txt', to: 'data' }, ctx)).rejects.toThrow('pass overwrite: true');
    const { proposal, output } = await proposeAndRun(mvTool(), { from: 'note.txt', to: 'data', overwrite: true }, ctx);
    expect(proposal.summary).toBe('mv note.txt -> data (file, 5 B, overwrites data: directory: 2 files, 1 subdirectory, 6 B)');
    expect(proposal.preview).toContain('Will first remove (overwritten):\n  data/\n  data/a.txt (4 B)');
    expect(output).toBe('Moved note.txt to data.');
    expect(await readFile(path.join(ws, 'data'), 'utf8')).toBe('note\n');
  });

  test('a destination changed after the card: refused, both ends kept', async () => {
    const ctx = makeCtx(ws);
    await writeFile(path.join(ws, 'target.txt'), 'old');
    const tool = mvTool();
    const proposal = await propose(tool, { from: 'note.txt', to: 'target.txt', overwrite: true }, ctx);
    await writeFile(path.join(ws, 'target.txt'), 'rewritten meanwhile');
    await expect(tool.execute({ from: 'note.txt', to: 'target.txt', overwrite: true }, ctx, { proposal })).rejects.toThrow(
      'target.txt was changed since the approval card',
    );
    expect(await readFile(path.join(ws, 'target.txt'), 'utf8')).toBe('rewritten meanwhile');
    expect(await readFile(path.join(ws, 'note.txt'), 'utf8')).toBe('note\n');
  });

  test('into itself, out of the workspace, or through a symlink out: refused, nothing moved', async () => {
    const ctx = makeCtx(ws);
    const before = await snapshot(base);
    await expect(propose(mvTool(), { from: 'data', to: 'data/sub/x' }, ctx)).rejects.toThrow('into itself');
    await expect(propose(mvTool(), { from: 'note.txt', to: '../note.txt' }, ctx)).rejects.toThrow(/outside the workspace/);
    await expect(propose(mvTool(), { from: 'note.txt', to: 'out/note.txt' }, ctx)).rejects.toThrow(/outside the workspace/);
    await expect(propose(mvTool(), { from: 'out/a.txt', to: 'stolen.txt' }, ctx)).rejects.toThrow(/outside the workspace/);
    expect(await snapshot(base)).toEqual(before);
  });
});

describe('cp', () => {
  test('copies a directory recursively, skipping symlinks, with counts on card and result', async () => {
    await symlink(path.join(base, 'secret.txt'), path.join(ws, 'data', 'leak'));
    const { proposal, output } = await proposeAndRun(cpTool(), { from: 'data', to: 'backup' }, makeCtx(ws));
    expect(proposal.summary).toBe('cp data -> backup (directory: 2 files, 1 subdirectory, 1 symlink, 6 B)');
    expect(output).toBe('Copied data to backup (2 files, 2 directories, 6 bytes; skipped 1 symlink or special file).');
    expect(await snapshot(path.join(ws, 'backup'))).toEqual({ 'a.txt': 'aaaa', sub: '<dir>', 'sub/b.txt': 'bb' });
  });

  test('copying a symlink or from outside is refused; nothing outside is read into the workspace', async () => {
    const ctx = makeCtx(ws);
    await expect(propose(cpTool(), { from: 'out', to: 'copy' }, ctx)).rejects.toThrow('is a symlink');
    await expect(propose(cpTool(), { from: 'out/a.txt', to: 'copy' }, ctx)).rejects.toThrow(/outside the workspace/);
    expect(existsSync(path.join(ws, 'copy'))).toBe(false);
  });
});

// The race: a real child process swaps `d` between a real directory and a symlink to `outside` in a
// tight loop while rm, mv and cp act through `d`. Afterwards `outside` must be exactly as before.
const SWAPPER = `
const fs = require('node:fs');
const [ws] = process.argv.slice(1);
const d = ws + '/d', real = ws + '/d.real', l = ws + '/l', stop = ws + '/stop';
let rounds = 0, aside = 0;
function put(from, to) {
  for (;;) {
    try { fs.renameSync(from, to); return; }
    catch (e) {
      if (e.code === 'ENOENT') return;
      if (e.code !== 'EISDIR' && e.code !== 'ENOTDIR' && e.code !== 'ENOTEMPTY' && e.code !== 'EEXIST') throw e;
      fs.renameSync(to, ws + '/aside-' + (aside++));
    }
  }
}
for (;;) {
  put(d, real); put(l, d); put(d, l); put(real, d);
  rounds++;
  if (rounds % 64 === 0 && fs.existsSync(stop)) break;
}
process.stdout.write(String(rounds));
`;

let swapper: ChildProcess | undefined;
afterEach(() => {
  if (swapper && swapper.exitCode === null) swapper.kill('SIGKILL');
  swapper = undefined;
});

test('rm, mv and cp through a directory swapped with a symlink to outside never change outside', async () => {
  const N = 300;
  await rm(outside, { recursive: true });
  await mkdir(outside);
  await mkdir(path.join(ws, 'd'));
  await mkdir(path.join(ws, 'moved'));
  for (let i = 0; i < N; i++) {
    await writeFile(path.join(outside, `v${i}`), `outside ${i}`);
    await writeFile(path.join(ws, 'd', `v${i}`), `inside ${i}`);
  }
  await symlink(outside, path.join(ws, 'l'));
  const before = await snapshot(outside);
  const child = spawn(process.execPath, ['-e', SWAPPER, ws], { stdio: ['ignore', 'pipe', 'inherit'] });
  swapper = child;
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  const rounds = new Promise<number>((resolve, reject) =>
    child.on('exit', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`swapper exited ${code}`)))),
  );
  const ctx = makeCtx(ws);
  const done = { rm: 0, mv: 0, cp: 0 };
  const attempt = async (name: keyof typeof done, fn: () => Promise<unknown>): Promise<void> => {
    try {
      await fn();
      done[name]++;
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
    }
  };
  try {
    for (let i = 0; i < N; i++) {
      // No proposal handed in: execute proposes and acts back to back, the tightest window.
      const k = i % 3;
      if (k === 0) await attempt('rm', async () => textOf(await rmTool().execute({ path: `d/v${i}` }, ctx, {})));
      if (k === 1) await attempt('mv', async () => textOf(await mvTool().execute({ from: `d/v${i}`, to: `moved/v${i}` }, ctx, {})));
      if (k === 2) await attempt('cp', async () => textOf(await cpTool().execute({ from: 'note.txt', to: `d/c${i}` }, ctx, {})));
    }
  } finally {
    await writeFile(path.join(ws, 'stop'), '');
  }
  const swaps = await rounds;
  console.log(`manage race: ${JSON.stringify(done)} of ${N} succeeded, ${swaps} swap rounds`);
  expect(await snapshot(outside)).toEqual(before);
  expect(swaps).toBeGreaterThan(50);
  expect(done.rm + done.mv + done.cp).toBeGreaterThan(0);
}, 90_000);
