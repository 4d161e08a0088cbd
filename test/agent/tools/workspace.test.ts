import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { resolveInWorkspace } from '../../../agent/tools/workspace.js';
import { ToolError } from '../../../agent/tools/types.js';
import { removeDir, tempDir } from './builtin-helpers.js';

let base: string; // holds the workspace and, beside it, an "outside" directory
let ws: string;
let outside: string;

beforeEach(async () => {
  base = await tempDir('gh-ws-');
  ws = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  await mkdir(path.join(ws, 'src'), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(ws, 'src', 'a.ts'), 'export const a = 1;\n');
  await writeFile(path.join(outside, 'secret.txt'), 'top secret\n');
});

afterEach(async () => {
  await removeDir(base);
});

async function refusal(userPath: string, opts?: { mustExist?: boolean }): Promise<ToolError> {
  const err = await resolveInWorkspace(ws, userPath, opts).then(
    (p) => {
      throw new Error(`expected a refusal, got ${p}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

describe('resolveInWorkspace: paths inside', () => {
  test('a relative path resolves against the workspace', async () => {
    await expect(resolveInWorkspace(ws, 'src/a.ts')).resolves.toBe(path.join(ws, 'src', 'a.ts'));
    await expect(resolveInWorkspace(ws, '.')).resolves.toBe(ws);
    await expect(resolveInWorkspace(ws, '')).resolves.toBe(ws);
  });

  test('.. that stays inside is fine', async () => {
    await expect(resolveInWorkspace(ws, 'src/../src/a.ts')).resolves.toBe(path.join(ws, 'src', 'a.ts'));
  });

  test('an absolute path inside the workspace is accepted', async () => {
    await expect(resolveInWorkspace(ws, path.join(ws, 'src', 'a.ts'))).resolves.toBe(path.join(ws, 'src', 'a.ts'));
  });

  test('a workspace configured through a symlink accepts paths spelled either way', async () => {
    const alias = path.join(base, 'alias');
    await symlink(ws, alias);
    await expect(resolveInWorkspace(alias, 'src/a.ts')).resolves.toBe(path.join(ws, 'src', 'a.ts'));
    await expect(resolveInWorkspace(alias, path.join(alias, 'src', 'a.ts'))).resolves.toBe(path.join(ws, 'src', 'a.ts'));
  });

  test('a file that does not exist yet resolves to where it would be created', async () => {
    await expect(resolveInWorkspace(ws, 'new/dir/file.txt')).resolves.toBe(path.join(ws, 'new', 'dir', 'file.txt'));
  });

  test('a symlink that stays inside resolves to its real target', async () => {
    await symlink(path.join(ws, 'src'), path.join(ws, 'lib'));
    await symlink('a.ts', path.join(ws, 'src', 'alias.ts'));
    await expect(resolveInWorkspace(ws, 'lib/a.ts')).resolves.toBe(path.join(ws, 'src', 'a.ts'));
    await expect(resolveInWorkspace(ws, 'src/alias.ts')).resolves.toBe(path.join(ws, 'src', 'a.ts'));
  });

  test('a dangling symlink inside resolves to the inside file it would create', async () => {
    await symlink(path.join(ws, 'src', 'later.ts'), path.join(ws, 'pending.ts'));
    await expect(resolveInWorkspace(ws, 'pending.ts')).resolves.toBe(path.join(ws, 'src', 'later.ts'));
  });

  test('`..` inside a link target climbs the physical chain, as the kernel does', async () => {
    await mkdir(path.join(ws, 'src', 'deeper'));
    await symlink('src/deeper', path.join(ws, 'x'));
    await symlink('x/..', path.join(ws, 'y')); // x/.. is src, not the workspace root
    await expect(resolveInWorkspace(ws, 'y/a.ts', { mustExist: true })).resolves.toBe(path.join(ws, 'src', 'a.ts'));
  });

  test('a path deeper than the resolver holds fds for is refused clearly', async () => {
    const deep = Array.from({ length: 260 }, () => 'd').join('/');
    await mkdir(path.join(ws, deep), { recursive: true });
    const err = await refusal(`${deep}/x`);
    expect(err.message).toMatch(/directories deep/);
  });

  test('mustExist refuses a missing path and says how to look around', async () => {
    const err = await refusal('src/missing.ts', { mustExist: true });
    expect(err.message).toContain('"src/missing.ts" does not exist');
    expect(err.message).toContain(ws);
    expect(err.message).toMatch(/ls or find/);
  });
});

describe('resolveInWorkspace: escapes are refused', () => {
  test('.. climbing out, naming the path and the workspace', async () => {
    const err = await refusal('../outside/secret.txt');
    expect(err.message).toContain('"../outside/secret.txt"');
    expect(err.message).toContain(`outside the workspace ${ws}`);
    await refusal('src/../../outside');
    await refusal('..');
  });

  test('an absolute path elsewhere', async () => {
    const err = await refusal(path.join(outside, 'secret.txt'));
    expect(err.message).toContain(ws);
    await refusal('/etc/passwd');
    // A sibling whose name merely starts with the workspace's name is not inside it.
    await mkdir(`${ws}-evil`);
    await refusal(`${ws}-evil/x`);
  });

  test('a symlinked directory that leads out (existing and new files below it)', async () => {
    await symlink(outside, path.join(ws, 'out'));
    const err = await refusal('out/secret.txt');
    expect(err.message).toContain('through a symlink');
    expect(err.message).toContain(path.join(outside, 'secret.txt'));
    await refusal('out');
    await refusal('out/new-file.txt'); // the new file's parent is a symlink out
    await refusal('out/deeper/new-file.txt');
  });

  test('a symlinked file that leads out', async () => {
    await symlink(path.join(outside, 'secret.txt'), path.join(ws, 'src', 'innocent.txt'));
    const err = await refusal('src/innocent.txt');
    expect(err.message).toContain('"src/innocent.txt"');
  });

  test('a dangling symlink a new file would be written through', async () => {
    await symlink(path.join(outside, 'not-yet.txt'), path.join(ws, 'drop.txt'));
    await refusal('drop.txt');
    // A chain: inside link -> inside dangling link -> outside.
    await symlink('drop.txt', path.join(ws, 'chain.txt'));
    await refusal('chain.txt');
  });

  test('a symlink in an intermediate directory, relative target', async () => {
    await symlink('../../outside', path.join(ws, 'src', 'up'));
    await refusal('src/up/secret.txt');
    await refusal('src/up/x/y.txt');
  });

  test('a NUL byte', async () => {
    const err = await refusal('src/a.ts\0.png');
    expect(err.message).toMatch(/NUL/);
  });

  test('a symlink loop is refused with a clear message, not a crash', async () => {
    await symlink('loop-b', path.join(ws, 'loop-a'));
    await symlink('loop-a', path.join(ws, 'loop-b'));
    const err = await refusal('loop-a/x');
    expect(err.message).toMatch(/symlink/);
  });

  test('a workspace that does not exist is a configuration error', async () => {
    const err = await resolveInWorkspace(path.join(base, 'nope'), 'a.txt').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolError);
    expect((err as Error).message).toMatch(/workspace .*nope.*create the directory/);
  });
});
