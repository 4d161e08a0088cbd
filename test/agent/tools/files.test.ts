import { mkdir, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { editFileTool, findTool, grepTool, lsTool, READ_MAX_BYTES, readFileTool, writeFileTool } from '../../../agent/tools/builtin/files.js';
import { ToolError } from '../../../agent/tools/types.js';
import { makeCtx, propose, proposeAndRun, removeDir, run, tempDir, textOf } from './builtin-helpers.js';

let base: string;
let ws: string;
let outside: string;

beforeEach(async () => {
  base = await tempDir('gh-files-');
  ws = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  await mkdir(path.join(ws, 'src', 'util'), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(ws, 'README.md'), '# Demo\nHello world\n');
  await writeFile(path.join(ws, 'src', 'a.ts'), 'export const a = 1;\nexport const b = 2;\n');
  await writeFile(path.join(ws, 'src', 'util', 'c.ts'), 'const TODO = "later";\n');
  await writeFile(path.join(outside, 'secret.txt'), 'SECRET-TOKEN\n');
});

afterEach(async () => {
  await removeDir(base);
});

const lastLine = (s: string): string => s.split('\n').at(-1) ?? '';
const lines = (n: number, width = 0): string => Array.from({ length: n }, (_, i) => `line ${i + 1}`.padEnd(width, '.')).join('\n') + '\n';

async function rejection(p: Promise<unknown>): Promise<ToolError> {
  const err = await p.then(
    (v) => {
      throw new Error(`expected a ToolError, got ${JSON.stringify(v)}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

describe('read_file', () => {
  test('returns the file as it is, with no truncated line when complete', async () => {
    const out = await run(readFileTool(), { path: 'src/a.ts' }, makeCtx(ws));
    expect(out).toBe('export const a = 1;\nexport const b = 2;');
    expect(out).not.toContain('[truncated');
  });

  test('offset and limit select lines', async () => {
    await writeFile(path.join(ws, 'ten.txt'), lines(10));
    const out = await run(readFileTool(), { path: 'ten.txt', offset: 4, limit: 3 }, makeCtx(ws));
    expect(out.split('\n').slice(0, 3)).toEqual(['line 4', 'line 5', 'line 6']);
    expect(lastLine(out)).toBe('[truncated: true; showing lines 4-6 of 10; call read_file with offset=7 to read on]');
    const tail = await run(readFileTool(), { path: 'ten.txt', offset: 9 }, makeCtx(ws));
    expect(tail).toBe('line 9\nline 10');
  });

  test('a long file is cut at 2000 lines with the flag and a hint, and reading on completes it', async () => {
    await writeFile(path.join(ws, 'big.txt'), lines(3000));
    const first = await run(readFileTool(), { path: 'big.txt' }, makeCtx(ws));
    const got = first.split('\n');
    expect(got).toHaveLength(2001);
    expect(got[1999]).toBe('line 2000');
    expect(lastLine(first)).toBe('[truncated: true; showing lines 1-2000 of 3000; call read_file with offset=2001 to read on]');
    const rest = await run(readFileTool(), { path: 'big.txt', offset: 2001 }, makeCtx(ws));
    expect(rest.split('\n')).toHaveLength(1000);
    expect(lastLine(rest)).toBe('line 3000');
  });

  test('output is bounded to 50 KB even within the line limit', async () => {
    await writeFile(path.join(ws, 'wide.txt'), lines(1000, 200)); // ~200 KB
    const out = await run(readFileTool(), { path: 'wide.txt' }, makeCtx(ws));
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(READ_MAX_BYTES + 200);
    expect(lastLine(out)).toMatch(/^\[truncated: true; showing lines 1-(\d+) of 1000 \(50 KB limit\); call read_file with offset=(\d+) to read on\]$/);
    const [, shownTo, next] = /lines 1-(\d+) .* offset=(\d+)/.exec(lastLine(out)) ?? [];
    expect(Number(next)).toBe(Number(shownTo) + 1);
    expect(out.split('\n').at(-2)).toMatch(new RegExp(`^line ${shownTo}\\.+$`));
  });

  test('a single enormous line is cut, flagged, and not dumped whole', async () => {
    await writeFile(path.join(ws, 'min.js'), 'x'.repeat(500_000) + '\nsecond line\n');
    const out = await run(readFileTool(), { path: 'min.js' }, makeCtx(ws));
    expect(out.length).toBeLessThan(READ_MAX_BYTES + 300);
    expect(lastLine(out)).toMatch(/^\[truncated: true; line 1 is longer than 50 KB and was cut; .*offset=2/);
    expect(await run(readFileTool(), { path: 'min.js', offset: 2 }, makeCtx(ws))).toBe('second line');
  });

  test('a binary file is reported, not dumped', async () => {
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), Buffer.alloc(100, 7)]);
    await writeFile(path.join(ws, 'logo.png'), png);
    const out = await run(readFileTool(), { path: 'logo.png' }, makeCtx(ws));
    expect(out).toMatch(/logo\.png is a binary file \(112 B\)/);
    expect(out).not.toContain('\0');
  });

  test('clear errors for a directory, a missing file and an offset past the end', async () => {
    expect((await rejection(run(readFileTool(), { path: 'src' }, makeCtx(ws)))).message).toMatch(/src is a directory; use ls/);
    expect((await rejection(run(readFileTool(), { path: 'nope.txt' }, makeCtx(ws)))).message).toMatch(/does not exist/);
    expect((await rejection(run(readFileTool(), { path: 'src/a.ts', offset: 50 }, makeCtx(ws)))).message).toMatch(
      /offset 50 is past the end of src\/a\.ts \(2 lines\)/,
    );
  });

  test('refuses escapes: .., an absolute path outside, a symlinked file and directory out', async () => {
    await symlink(path.join(outside, 'secret.txt'), path.join(ws, 'notes.txt'));
    await symlink(outside, path.join(ws, 'vendor'));
    for (const p of ['../outside/secret.txt', path.join(outside, 'secret.txt'), 'notes.txt', 'vendor/secret.txt']) {
      const err = await rejection(run(readFileTool(), { path: p }, makeCtx(ws)));
      expect(err.message).toContain(ws);
      expect(err.message).not.toContain('SECRET-TOKEN');
    }
  });

  test('the schema rejects unknown keys and bad limits', () => {
    const t = readFileTool();
    expect(t.input.safeParse({ path: 'a', extra: 1 }).success).toBe(false);
    expect(t.input.safeParse({ path: 'a', limit: 5000 }).success).toBe(false);
    expect(t.input.safeParse({ path: 'a', offset: 0 }).success).toBe(false);
  });
});

describe('ls', () => {
  test('lists entries with type and size, directories first, links with their target', async () => {
    await symlink('src/a.ts', path.join(ws, 'link.ts'));
    const out = await run(lsTool(), {}, makeCtx(ws));
    const rows = out.split('\n').map((l) => l.trim().split(/\s+/));
    expect(rows).toEqual([
      ['dir', '-', 'src/'],
      ['file', '19', 'README.md'],
      ['link', '-', 'link.ts', '->', 'src/a.ts'],
    ]);
    const sub = await run(lsTool(), { path: 'src' }, makeCtx(ws));
    expect(sub).toMatch(/^dir +- +util\/\nfile +40 +a\.ts$/);
  });

  test('is bounded and says so', async () => {
    await mkdir(path.join(ws, 'many'));
    await Promise.all(Array.from({ length: 30 }, (_, i) => writeFile(path.join(ws, 'many', `f${String(i).padStart(2, '0')}`), 'x')));
    const out = await run(lsTool(), { path: 'many', limit: 10 }, makeCtx(ws));
    expect(out.split('\n')).toHaveLength(11);
    expect(lastLine(out)).toMatch(/^\[truncated: true; showing 10 of 30 entries; pass limit/);
    expect(await run(lsTool(), { path: 'many' }, makeCtx(ws))).not.toContain('[truncated');
  });

  test('refuses a symlinked directory that leads out', async () => {
    await symlink(outside, path.join(ws, 'out'));
    await rejection(run(lsTool(), { path: 'out' }, makeCtx(ws)));
    await rejection(run(lsTool(), { path: '..' }, makeCtx(ws)));
  });
});

describe('find', () => {
  beforeEach(async () => {
    await mkdir(path.join(ws, 'node_modules', 'dep'), { recursive: true });
    await writeFile(path.join(ws, 'node_modules', 'dep', 'index.ts'), '');
    await mkdir(path.join(ws, '.git'));
    await writeFile(path.join(ws, '.git', 'x.ts'), '');
    await writeFile(path.join(ws, 'src', 'a.test.ts'), '');
  });

  test('matches names at any depth, skipping node_modules and .git', async () => {
    const out = await run(findTool(), { pattern: '*.ts' }, makeCtx(ws));
    expect(out.split('\n')).toEqual(['src/a.test.ts', 'src/a.ts', 'src/util/c.ts']);
  });

  test('includeIgnored searches node_modules and .git too', async () => {
    const out = await run(findTool(), { pattern: '*.ts', includeIgnored: true }, makeCtx(ws));
    expect(out.split('\n')).toEqual(['.git/x.ts', 'node_modules/dep/index.ts', 'src/a.test.ts', 'src/a.ts', 'src/util/c.ts']);
  });

  test('a pattern with "/" matches the path; ** spans directories; braces and directories', async () => {
    expect(await run(findTool(), { pattern: 'src/**/*.ts' }, makeCtx(ws))).toBe('src/a.test.ts\nsrc/a.ts\nsrc/util/c.ts');
    expect(await run(findTool(), { pattern: '**/util/*.ts' }, makeCtx(ws))).toBe('src/util/c.ts');
    expect(await run(findTool(), { pattern: '{README,c}.*' }, makeCtx(ws))).toBe('README.md\nsrc/util/c.ts');
    expect(await run(findTool(), { pattern: 'util' }, makeCtx(ws))).toBe('src/util/');
    expect(await run(findTool(), { pattern: '*.ts', path: 'src/util' }, makeCtx(ws))).toBe('src/util/c.ts');
  });

  test('no match says so; too many matches are cut and flagged', async () => {
    expect(await run(findTool(), { pattern: '*.py' }, makeCtx(ws))).toBe('No files match "*.py" under ..');
    const out = await run(findTool(), { pattern: '*', limit: 2 }, makeCtx(ws));
    expect(out.split('\n')).toHaveLength(3);
    expect(lastLine(out)).toMatch(/^\[truncated: true; stopped at 2 results; narrow the pattern or path, or pass limit/);
  });

  test('does not walk through a symlinked directory that leads out', async () => {
    await writeFile(path.join(outside, 'leak.ts'), '');
    await symlink(outside, path.join(ws, 'src', 'ext'));
    const out = await run(findTool(), { pattern: '*.ts' }, makeCtx(ws));
    expect(out).not.toContain('leak.ts');
    expect(await run(findTool(), { pattern: 'ext' }, makeCtx(ws))).toBe('src/ext'); // listed, not entered
    await rejection(run(findTool(), { pattern: '*', path: 'src/ext' }, makeCtx(ws)));
  });
});

describe('grep', () => {
  beforeEach(async () => {
    await writeFile(path.join(ws, 'src', 'ctx.ts'), ['one', 'two', 'alpha match', 'three', 'four', 'five', 'six', 'beta match', 'seven'].join('\n') + '\n');
  });

  test('prints path:line:text for regex matches', async () => {
    const out = await run(grepTool(), { pattern: 'export const \\w = 2' }, makeCtx(ws));
    expect(out).toBe('src/a.ts:2:export const b = 2;');
  });

  test('fixedString treats regex characters literally; ignoreCase; glob filter; single file', async () => {
    await writeFile(path.join(ws, 'src', 'rx.ts'), 'a.b\naxb\n');
    expect(await run(grepTool(), { pattern: 'a.b', fixedString: true }, makeCtx(ws))).toBe('src/rx.ts:1:a.b');
    expect(await run(grepTool(), { pattern: 'hello', ignoreCase: true }, makeCtx(ws))).toBe('README.md:2:Hello world');
    expect(await run(grepTool(), { pattern: 'const', glob: 'c.ts' }, makeCtx(ws))).toBe('src/util/c.ts:1:const TODO = "later";');
    expect(await run(grepTool(), { pattern: 'const', path: 'src/util/c.ts' }, makeCtx(ws))).toBe('src/util/c.ts:1:const TODO = "later";');
  });

  test('context lines, with -- between separate groups', async () => {
    const out = await run(grepTool(), { pattern: 'match', path: 'src/ctx.ts', context: 1 }, makeCtx(ws));
    expect(out).toBe(
      ['src/ctx.ts-2-two', 'src/ctx.ts:3:alpha match', 'src/ctx.ts-4-three', '--', 'src/ctx.ts-7-six', 'src/ctx.ts:8:beta match', 'src/ctx.ts-9-seven'].join(
        '\n',
      ),
    );
    // Overlapping context is printed once.
    const close = await run(grepTool(), { pattern: 'match', path: 'src/ctx.ts', context: 3 }, makeCtx(ws));
    expect(close.split('\n').map((l) => l.replace(/^src\/ctx\.ts[-:](\d+)[-:].*$/, '$1'))).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9']);
  });

  test('bounded matches are flagged as truncated', async () => {
    await writeFile(path.join(ws, 'many.txt'), lines(500));
    const out = await run(grepTool(), { pattern: '^line', path: 'many.txt', limit: 20 }, makeCtx(ws));
    const got = out.split('\n');
    expect(got).toHaveLength(21);
    expect(got[19]).toBe('many.txt:20:line 20');
    expect(lastLine(out)).toMatch(/^\[truncated: true; stopped at 20 matching lines; narrow the pattern, path or glob, or pass limit/);
    const all = await run(grepTool(), { pattern: 'line 49\\d', path: 'many.txt' }, makeCtx(ws));
    expect(all.split('\n')).toHaveLength(10);
    expect(all).not.toContain('[truncated');
  });

  test('output bytes are bounded too, and very long lines are cut', async () => {
    await writeFile(path.join(ws, 'wide.txt'), lines(1000, 2000));
    const out = await run(grepTool(), { pattern: 'line', path: 'wide.txt', limit: 1000 }, makeCtx(ws));
    expect(Buffer.byteLength(out)).toBeLessThan(60 * 1024);
    expect(out.split('\n')[0]).toMatch(/^wide\.txt:1:line 1\.+… \[line cut at 500 chars\]$/);
    expect(lastLine(out)).toMatch(/^\[truncated: true; output reached 50 KB after \d+ matching lines/);
  });

  test('binary files are skipped and reported', async () => {
    await writeFile(path.join(ws, 'blob.bin'), Buffer.concat([Buffer.from('match me'), Buffer.alloc(10), Buffer.from('match')]));
    const out = await run(grepTool(), { pattern: 'match me' }, makeCtx(ws));
    expect(out).toBe('No matches for "match me" in . (4 files searched).\n[skipped: 1 binary file]');
  });

  test('an invalid regex is a clear error', async () => {
    const err = await rejection(run(grepTool(), { pattern: 'foo(' }, makeCtx(ws)));
    expect(err.message).toMatch(/not a valid regular expression.*fixedString/);
  });

  test('does not read through symlinks that lead out', async () => {
    await symlink(path.join(outside, 'secret.txt'), path.join(ws, 'src', 'notes.txt'));
    await symlink(outside, path.join(ws, 'ext'));
    expect(await run(grepTool(), { pattern: 'SECRET' }, makeCtx(ws))).toMatch(/^No matches/);
    await rejection(run(grepTool(), { pattern: 'SECRET', path: 'src/notes.txt' }, makeCtx(ws)));
    await rejection(run(grepTool(), { pattern: 'SECRET', path: 'ext' }, makeCtx(ws)));
  });
});

describe('abort on a big tree', () => {
  let bigWs: string;

  beforeAll(async () => {
    bigWs = await tempDir('gh-big-');
    // 100 directories x 10 files: far more fs round trips than one event-loop turn allows.
    await Promise.all(
      Array.from({ length: 100 }, async (_, d) => {
        const dir = path.join(bigWs, `d${d}`, 'nested');
        await mkdir(dir, { recursive: true });
        await Promise.all(Array.from({ length: 10 }, (_, f) => writeFile(path.join(dir, `f${f}.txt`), `needle ${d}-${f}\n`)));
      }),
    );
  });

  afterAll(async () => {
    await removeDir(bigWs);
  });

  test('sanity: without an abort both complete over the whole tree', async () => {
    const found = await run(findTool(), { pattern: '*.txt', limit: 1000 }, makeCtx(bigWs));
    expect(found.split('\n')).toHaveLength(1000);
    expect(found).not.toContain('[truncated');
    const hits = await run(grepTool(), { pattern: 'needle 99-9', fixedString: true }, makeCtx(bigWs));
    expect(hits).toBe('d99/nested/f9.txt:1:needle 99-9');
  });

  test.each([
    ['find', () => findTool(), { pattern: '*.nomatch' }],
    ['grep', () => grepTool(), { pattern: 'never-present' }],
  ] as const)('%s stops with the abort reason when the signal fires mid-walk', async (_name, make, input) => {
    const ac = new AbortController();
    const reason = new Error('stopped by /stop');
    const pending = run(make(), input, makeCtx(bigWs, { signal: ac.signal }));
    setImmediate(() => ac.abort(reason));
    await expect(pending).rejects.toBe(reason);
  });

  test('an already aborted signal does no work', async () => {
    const ac = new AbortController();
    ac.abort(new Error('gone'));
    await expect(run(grepTool(), { pattern: 'needle' }, makeCtx(bigWs, { signal: ac.signal }))).rejects.toThrow('gone');
  });
});

describe('write_file (two-phase)', () => {
  test('propose shows a diff and mutates nothing; execute creates the file and its parent dirs', async () => {
    const ctx = makeCtx(ws);
    const p = await propose(writeFileTool(), { path: 'docs/guide/intro.md', content: 'Intro\nMore\n' }, ctx);
    expect(p.summary).toBe('write_file docs/guide/intro.md (new file, +2)');
    expect(p.preview).toContain('+++ b/docs/guide/intro.md');
    expect(p.preview).toContain('+Intro\n+More');
    expect(p.data).toEqual({ path: 'docs/guide/intro.md', newContent: 'Intro\nMore\n', baseHash: null });
    await expect(stat(path.join(ws, 'docs'))).rejects.toMatchObject({ code: 'ENOENT' });

    const out = textOf(await writeFileTool().execute({ path: 'docs/guide/intro.md', content: 'Intro\nMore\n' }, ctx, { proposal: p }));
    expect(out).toBe('Created docs/guide/intro.md (2 lines, 11 B).');
    expect(await readFile(path.join(ws, 'docs', 'guide', 'intro.md'), 'utf8')).toBe('Intro\nMore\n');
  });

  test('overwriting shows +/- counts and leaves the file untouched until execute', async () => {
    const ctx = makeCtx(ws);
    const file = path.join(ws, 'src', 'a.ts');
    const p = await propose(writeFileTool(), { path: 'src/a.ts', content: 'export const a = 1;\nexport const c = 3;\nexport const d = 4;\n' }, ctx);
    expect(p.summary).toBe('write_file src/a.ts (+2 -1)');
    expect(p.preview).toMatch(/-export const b = 2;\n\+export const c = 3;\n\+export const d = 4;/);
    expect(await readFile(file, 'utf8')).toBe('export const a = 1;\nexport const b = 2;\n');
  });

  test('execute writes what was proposed (approved), not a re-derived content', async () => {
    const ctx = makeCtx(ws);
    const p = await propose(writeFileTool(), { path: 'x.txt', content: 'approved\n' }, ctx);
    await writeFileTool().execute({ path: 'x.txt', content: 'something else\n' }, ctx, { proposal: p });
    expect(await readFile(path.join(ws, 'x.txt'), 'utf8')).toBe('approved\n');
  });

  test('a file changed after propose is not overwritten (stale proposal)', async () => {
    const ctx = makeCtx(ws);
    const file = path.join(ws, 'src', 'a.ts');
    const p = await propose(writeFileTool(), { path: 'src/a.ts', content: 'mine\n' }, ctx);
    await writeFile(file, 'someone else edited this\n');
    const err = await rejection(writeFileTool().execute({ path: 'src/a.ts', content: 'mine\n' }, ctx, { proposal: p }));
    expect(err.message).toMatch(/src\/a\.ts was modified after this write_file was proposed.*nothing was written.*Read the file again/);
    expect(await readFile(file, 'utf8')).toBe('someone else edited this\n');
  });

  test('a new file that appeared after propose is not overwritten', async () => {
    const ctx = makeCtx(ws);
    const p = await propose(writeFileTool(), { path: 'new.txt', content: 'mine\n' }, ctx);
    await writeFile(path.join(ws, 'new.txt'), 'theirs\n');
    const err = await rejection(writeFileTool().execute({ path: 'new.txt', content: 'mine\n' }, ctx, { proposal: p }));
    expect(err.message).toMatch(/new\.txt was created after/);
    expect(await readFile(path.join(ws, 'new.txt'), 'utf8')).toBe('theirs\n');
  });

  test('refuses escapes at propose: .., absolute outside, a new file under a symlinked dir, a dangling link', async () => {
    await symlink(outside, path.join(ws, 'out'));
    await symlink(path.join(outside, 'planted.txt'), path.join(ws, 'planted.txt'));
    for (const p of ['../evil.txt', path.join(outside, 'evil.txt'), 'out/evil.txt', 'out/sub/evil.txt', 'planted.txt']) {
      await rejection(propose(writeFileTool(), { path: p, content: 'pwned' }, makeCtx(ws)));
    }
    expect((await readdir(outside)).sort()).toEqual(['secret.txt']);
  });

  test('tampered proposal data pointing outside is refused at execute', async () => {
    const ctx = makeCtx(ws);
    const proposal = { summary: 'write_file x', data: { path: '../outside/secret.txt', newContent: 'pwned', baseHash: null } };
    await rejection(writeFileTool().execute({ path: 'x', content: '' }, ctx, { proposal }));
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('SECRET-TOKEN\n');
  });

  test('a symlink swapped in between propose and execute is not written through', async () => {
    const ctx = makeCtx(ws);
    await mkdir(path.join(ws, 'gen'));
    const p = await propose(writeFileTool(), { path: 'gen/out.txt', content: 'data' }, ctx);
    await removeDir(path.join(ws, 'gen'));
    await symlink(outside, path.join(ws, 'gen'));
    await rejection(writeFileTool().execute({ path: 'gen/out.txt', content: 'data' }, ctx, { proposal: p }));
    expect((await readdir(outside)).sort()).toEqual(['secret.txt']);
  });

  test('without a proposal, execute proposes itself (still confined and still a real write)', async () => {
    const ctx = makeCtx(ws);
    expect(await run(writeFileTool(), { path: 'direct.txt', content: 'ok\n' }, ctx)).toMatch(/^Created direct\.txt/);
    expect(await readFile(path.join(ws, 'direct.txt'), 'utf8')).toBe('ok\n');
  });
});

describe('edit_file (two-phase)', () => {
  test('replaces a unique match; diff counts; propose does not mutate', async () => {
    const file = path.join(ws, 'src', 'a.ts');
    const ctx = makeCtx(ws);
    const input = { path: 'src/a.ts', edits: [{ oldText: 'export const b = 2;', newText: 'export const b = 20;\nexport const c = 30;' }] };
    const p = await propose(editFileTool(), input, ctx);
    expect(p.summary).toBe('edit_file src/a.ts (+2 -1)');
    expect(p.preview).toContain('--- a/src/a.ts');
    expect(await readFile(file, 'utf8')).toBe('export const a = 1;\nexport const b = 2;\n');
    const out = await editFileTool().execute(editFileTool().input.parse(input), ctx, { proposal: p });
    expect(out.content).toBe('Wrote src/a.ts (3 lines, 62 B).');
    expect(await readFile(file, 'utf8')).toBe('export const a = 1;\nexport const b = 20;\nexport const c = 30;\n');
  });

  test('an ambiguous oldText says how many times it occurs and changes nothing', async () => {
    const file = path.join(ws, 'dup.ts');
    await writeFile(file, 'x = 1;\ny = 2;\nx = 1;\nx = 1;\n');
    const err = await rejection(propose(editFileTool(), { path: 'dup.ts', edits: [{ oldText: 'x = 1;', newText: 'x = 9;' }] }, makeCtx(ws)));
    expect(err.message).toMatch(/oldText occurs 3 times in dup\.ts; it must occur exactly once\. Include more surrounding lines/);
    expect(await readFile(file, 'utf8')).toBe('x = 1;\ny = 2;\nx = 1;\nx = 1;\n');
    // Overlapping occurrences are ambiguous too.
    await writeFile(path.join(ws, 'aaa.txt'), 'aaa\n');
    const overlap = await rejection(propose(editFileTool(), { path: 'aaa.txt', edits: [{ oldText: 'aa', newText: 'b' }] }, makeCtx(ws)));
    expect(overlap.message).toMatch(/occurs 2 times/);
    // More context makes it unique.
    const { output } = await proposeAndRun(editFileTool(), { path: 'dup.ts', edits: [{ oldText: 'y = 2;\nx = 1;', newText: 'y = 2;\nx = 5;' }] }, makeCtx(ws));
    expect(output).toMatch(/^Wrote dup\.ts/);
    expect(await readFile(file, 'utf8')).toBe('x = 1;\ny = 2;\nx = 5;\nx = 1;\n');
  });

  test('a missing oldText names which edit failed; nothing is written even if earlier edits matched', async () => {
    const file = path.join(ws, 'src', 'a.ts');
    const err = await rejection(
      proposeAndRun(
        editFileTool(),
        {
          path: 'src/a.ts',
          edits: [
            { oldText: 'a = 1', newText: 'a = 5' },
            { oldText: 'zzz', newText: 'q' },
          ],
        },
        makeCtx(ws),
      ),
    );
    expect(err.message).toMatch(/edits\[1\]\.oldText was not found in src\/a\.ts \(after the earlier edits were applied\)/);
    expect(await readFile(file, 'utf8')).toBe('export const a = 1;\nexport const b = 2;\n');
  });

  test('several edits apply in order', async () => {
    await proposeAndRun(
      editFileTool(),
      {
        path: 'src/a.ts',
        edits: [
          { oldText: 'a = 1', newText: 'a = 10' },
          { oldText: 'b = 2', newText: 'b = 20' },
        ],
      },
      makeCtx(ws),
    );
    expect(await readFile(path.join(ws, 'src', 'a.ts'), 'utf8')).toBe('export const a = 10;\nexport const b = 20;\n');
  });

  test('a CRLF file accepts LF oldText and keeps CRLF', async () => {
    const file = path.join(ws, 'win.txt');
    await writeFile(file, 'first\r\nsecond\r\nthird\r\n');
    await proposeAndRun(editFileTool(), { path: 'win.txt', edits: [{ oldText: 'first\nsecond', newText: 'first\nSECOND\nextra' }] }, makeCtx(ws));
    expect(await readFile(file, 'utf8')).toBe('first\r\nSECOND\r\nextra\r\nthird\r\n');
  });

  test('stale proposal: the file changed after propose, nothing is written', async () => {
    const file = path.join(ws, 'src', 'a.ts');
    const ctx = makeCtx(ws);
    const input = { path: 'src/a.ts', edits: [{ oldText: 'a = 1', newText: 'a = 2' }] };
    const p = await propose(editFileTool(), input, ctx);
    await writeFile(file, 'export const a = 1;\n// a human added this\nexport const b = 2;\n');
    const err = await rejection(editFileTool().execute(editFileTool().input.parse(input), ctx, { proposal: p }));
    expect(err.message).toMatch(/was modified after this edit_file was proposed/);
    expect(await readFile(file, 'utf8')).toContain('// a human added this');
  });

  test('edit_file refuses a missing file, a binary file, a no-op and an escape', async () => {
    await writeFile(path.join(ws, 'b.bin'), Buffer.from([1, 0, 2]));
    await symlink(path.join(outside, 'secret.txt'), path.join(ws, 's.txt'));
    const e = (p: unknown) => rejection(propose(editFileTool(), p, makeCtx(ws)));
    expect((await e({ path: 'none.ts', edits: [{ oldText: 'a', newText: 'b' }] })).message).toMatch(/does not exist; use write_file/);
    expect((await e({ path: 'b.bin', edits: [{ oldText: 'a', newText: 'b' }] })).message).toMatch(/binary/);
    expect((await e({ path: 'src/a.ts', edits: [{ oldText: 'a = 1', newText: 'a = 1' }] })).message).toMatch(/unchanged/);
    expect((await e({ path: 's.txt', edits: [{ oldText: 'SECRET', newText: 'x' }] })).message).toMatch(/symlink/);
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('SECRET-TOKEN\n');
  });

  test('the schema needs at least one edit and rejects unknown keys', () => {
    const t = editFileTool();
    expect(t.input.safeParse({ path: 'a', edits: [] }).success).toBe(false);
    expect(t.input.safeParse({ path: 'a', edits: [{ oldText: 'a', newText: 'b', replaceAll: true }] }).success).toBe(false);
    expect(t.input.safeParse({ path: 'a', edits: [{ oldText: '', newText: 'b' }] }).success).toBe(false);
  });
});
