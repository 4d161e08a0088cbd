// grep against catastrophic regular expressions: the matching runs in a worker, so the main
// thread stays responsive, /stop (ctx.signal) ends it, and a runaway pattern hits a budget.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { closeGrepWorkers, grepTool, grepWorkerStats } from '../../../agent/tools/builtin/files.js';
import { ToolError } from '../../../agent/tools/types.js';
import { waitFor } from '../../helpers/wait.js';
import { makeCtx, removeDir, run, tempDir } from './builtin-helpers.js';

// `(a+)+$` against "aaaa…a!" backtracks exponentially: about 0.15 s per line of 24 a's on a
// laptop, so 400 such lines keep a synchronous matcher busy for about a minute.
const EVIL = '(a+)+$';
const EVIL_LINES = `${Array.from({ length: 400 }, () => `${'a'.repeat(24)}!`).join('\n')}\n`;

let ws: string;

beforeEach(async () => {
  ws = await tempDir('gh-grep-safety-');
  await mkdir(path.join(ws, 'src'));
  await writeFile(path.join(ws, 'src', 'ok.ts'), 'const answer = 42;\nconst other = 1;\n');
  await writeFile(path.join(ws, 'src', 'evil.txt'), EVIL_LINES);
  await closeGrepWorkers(); // each test starts with no idle worker, so the counts below are exact
});

afterEach(async () => {
  await removeDir(ws);
});

afterAll(async () => {
  await closeGrepWorkers();
});

/** Counts main-thread timer ticks until `p` settles; the promise's outcome is kept as is. */
function ticksWhile<T>(p: Promise<T>): { ticks: () => number; settled: Promise<void> } {
  let n = 0;
  const timer = setInterval(() => n++, 5);
  const settled = p.then(
    () => clearInterval(timer),
    () => clearInterval(timer),
  );
  return { ticks: () => n, settled };
}

const until = (cond: () => boolean): Promise<void> => waitFor('the condition', cond, 30_000).then(() => undefined);

test('while a catastrophic pattern runs, main-thread timers keep firing; abort ends it and the worker is gone', async () => {
  const ac = new AbortController();
  const reason = new Error('stopped by /stop');
  const pending = run(grepTool(), { pattern: EVIL, path: 'src/evil.txt' }, makeCtx(ws, { signal: ac.signal }));
  pending.catch(() => undefined);
  let settled = false;
  void pending.then(
    () => (settled = true),
    () => (settled = true),
  );
  const t = ticksWhile(pending);
  // A synchronous matcher would hold the event loop for about a minute: not one tick would fire.
  await until(() => t.ticks() >= 40);
  expect(settled).toBe(false);
  expect(grepWorkerStats().live).toBe(1);
  ac.abort(reason);
  await expect(pending).rejects.toBe(reason);
  await t.settled;
  expect(grepWorkerStats()).toMatchObject({ live: 0, idle: false });
});

test('a pattern over the matching budget fails with a clear ToolError, and the next grep gets a fresh worker', async () => {
  // The budget's clock runs from the request, worker start-up included (a fresh worker takes a
  // while on a busy machine): 2 s is far under the evil pattern's minute and far over a start-up.
  const tool = grepTool({ matchBudgetMs: 2000 });
  const before = grepWorkerStats().created;
  const err = await run(tool, { pattern: EVIL }, makeCtx(ws)).then(
    (v) => {
      throw new Error(`expected a ToolError, got ${v}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolError);
  expect((err as ToolError).message).toMatch(/took too long .*catastrophic backtracking.*simplify it.*fixedString/);
  expect((err as ToolError).message).toContain(JSON.stringify(EVIL));
  expect(grepWorkerStats().live).toBe(0);

  // The hung worker was replaced: the same tool still searches.
  expect(await run(tool, { pattern: 'answer' }, makeCtx(ws))).toBe('src/ok.ts:1:const answer = 42;');
  expect(grepWorkerStats().created).toBe(before + 2);
  // The evil lines themselves are found instantly with a sane pattern or fixedString.
  const plain = await run(tool, { pattern: 'aaaa!', fixedString: true, limit: 2 }, makeCtx(ws));
  expect(plain.split('\n').slice(0, 2)).toEqual([`src/evil.txt:1:${'a'.repeat(24)}!`, `src/evil.txt:2:${'a'.repeat(24)}!`]);
});

test("one conversation's runaway grep does not hold up another's", async () => {
  const ac = new AbortController();
  const runaway = run(grepTool(), { pattern: EVIL, path: 'src/evil.txt' }, makeCtx(ws, { signal: ac.signal }));
  runaway.catch(() => undefined);
  await until(() => grepWorkerStats().live === 1);
  expect(await run(grepTool(), { pattern: 'other', path: 'src' }, makeCtx(ws))).toBe('src/ok.ts:2:const other = 1;');
  ac.abort(new Error('stop'));
  await expect(runaway).rejects.toThrow('stop');
  // The finished search's worker is kept idle for reuse; the aborted one is gone.
  expect(grepWorkerStats()).toMatchObject({ live: 1, idle: true });
});

test('sequential greps reuse one idle worker', async () => {
  const before = grepWorkerStats().created;
  for (let i = 0; i < 3; i++) {
    expect(await run(grepTool(), { pattern: 'answer' }, makeCtx(ws))).toBe('src/ok.ts:1:const answer = 42;');
  }
  expect(grepWorkerStats()).toMatchObject({ live: 1, idle: true, created: before + 1 });
});

test('an already aborted signal starts no worker', async () => {
  const before = grepWorkerStats().created;
  const ac = new AbortController();
  ac.abort(new Error('gone'));
  await expect(run(grepTool(), { pattern: EVIL }, makeCtx(ws, { signal: ac.signal }))).rejects.toThrow('gone');
  expect(grepWorkerStats().created).toBe(before);
});

test('results stay in walk order across batches; skipped binaries are counted only up to the cut', async () => {
  // 120 files (several worker batches), every third one binary; each text file has one match.
  const dir = path.join(ws, 'many');
  await mkdir(dir);
  await Promise.all(
    Array.from({ length: 120 }, (_, i) => {
      const name = path.join(dir, `f${String(i).padStart(3, '0')}.txt`);
      return i % 3 === 2 ? writeFile(name, Buffer.from([104, 105, 0, 0])) : writeFile(name, `skip\nhit ${i}\n`);
    }),
  );
  const out = await run(grepTool(), { pattern: '^hit', path: 'many', limit: 50 }, makeCtx(ws));
  const got = out.split('\n');
  const texts = Array.from({ length: 120 }, (_, i) => i).filter((i) => i % 3 !== 2);
  expect(got.slice(0, 50)).toEqual(texts.slice(0, 50).map((i) => `many/f${String(i).padStart(3, '0')}.txt:2:hit ${i}`));
  // The 51st text file (f075) holds the first match past the limit; binaries before it: f002 … f074.
  expect(got[50]).toBe('[skipped: 25 binary files]');
  expect(got[51]).toMatch(/^\[truncated: true; stopped at 50 matching lines;/);
  expect(got).toHaveLength(52);

  // Context and "--" separators work across file boundaries as before.
  const ctxOut = await run(grepTool(), { pattern: 'hit (0|1)$', path: 'many', context: 1 }, makeCtx(ws));
  expect(ctxOut).toBe(
    ['many/f000.txt-1-skip', 'many/f000.txt:2:hit 0', '--', 'many/f001.txt-1-skip', 'many/f001.txt:2:hit 1', '[skipped: 40 binary files]'].join('\n'),
  );
});
