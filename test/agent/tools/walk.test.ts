// The fd-by-fd walk of grep and find (agent/tools/builtin/files/walk.ts): it holds open directory fds,
// so it must give every one back however a search ends, and stay bounded on a tree built to be deep.
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { closeGrepWorkers, findTool, grepTool, lsTool } from '../../../agent/tools/builtin/files.js';
import { WALK_MAX_DEPTH } from '../../../agent/tools/builtin/files/walk.js';
import { makeCtx, removeDir, run, tempDir } from './builtin-helpers.js';

let ws: string;

beforeAll(async () => {
  ws = await tempDir('gh-walk-');
  for (let d = 0; d < 30; d++) {
    const dir = path.join(ws, `pkg-${String(d).padStart(2, '0')}`, 'src');
    await mkdir(dir, { recursive: true });
    for (let f = 0; f < 5; f++) await writeFile(path.join(dir, `f${f}.txt`), `NEEDLE ${d}/${f}\nhay\n`);
  }
});

afterAll(async () => {
  await closeGrepWorkers();
  await removeDir(ws);
});

async function openFds(): Promise<number> {
  return (await readdir('/proc/self/fd')).length;
}

/** Directory handles are closed asynchronously after the last release: wait (by count) for them. */
async function settledFds(target: number): Promise<number> {
  let n = await openFds();
  for (let i = 0; i < 200 && n > target; i++) {
    await new Promise((r) => setImmediate(r));
    n = await openFds();
  }
  return n;
}

test('grep and find give back every directory fd, also when they stop early (cut, limit, abort)', async () => {
  const ctx = makeCtx(ws);
  // Warm up once (the grep worker, lazy modules) so the baseline already holds what stays open.
  await run(grepTool(), { pattern: 'NEEDLE' }, ctx);
  const before = await settledFds(0);
  for (let i = 0; i < 40; i++) {
    await run(grepTool(), { pattern: 'NEEDLE', limit: 1 }, ctx); // cut after the first file
    await run(grepTool(), { pattern: 'NEEDLE', glob: 'f4.txt' }, ctx); // a full walk
    await run(findTool(), { pattern: '*.txt', limit: 3 }, ctx); // stops mid-walk
    await run(lsTool(), { path: 'pkg-01/src' }, ctx);
    const ac = new AbortController();
    const aborted = run(grepTool(), { pattern: 'NEEDLE' }, makeCtx(ws, { signal: ac.signal }));
    ac.abort(new Error('stopped by the test'));
    await aborted.catch(() => undefined);
  }
  expect(await settledFds(before)).toBeLessThanOrEqual(before);
});

test(`a tree deeper than ${WALK_MAX_DEPTH} levels is walked down to the limit and the rest is reported, not an fd exhaustion`, async () => {
  const deepWs = await tempDir('gh-walk-deep-');
  try {
    const parts = Array.from({ length: WALK_MAX_DEPTH + 6 }, (_, i) => `d${i}`);
    await mkdir(path.join(deepWs, ...parts), { recursive: true });
    await writeFile(path.join(deepWs, ...parts.slice(0, 10), 'shallow.txt'), 'NEEDLE shallow\n');
    await writeFile(path.join(deepWs, ...parts, 'bottom.txt'), 'NEEDLE bottom\n');
    const ctx = makeCtx(deepWs);
    const grep = await run(grepTool(), { pattern: 'NEEDLE' }, ctx);
    expect(grep).toContain('shallow.txt:1:NEEDLE shallow');
    expect(grep).not.toContain('bottom');
    expect(grep).toContain(`[skipped: 1 directory deeper than ${WALK_MAX_DEPTH} levels]`);
    const find = await run(findTool(), { pattern: '*.txt' }, ctx);
    expect(find).toContain('shallow.txt');
    expect(find).toContain(`[skipped: 1 directory deeper than ${WALK_MAX_DEPTH} levels]`);
    // Deep, but still inside the limit when started lower down: the limit counts from the start.
    const lower = await run(findTool(), { pattern: '*.txt', path: parts.slice(0, 10).join('/') }, ctx);
    expect(lower).toContain('bottom.txt');
  } finally {
    await removeDir(deepWs);
  }
});

test('ls of a socket shows it as "other" (a socket cannot be opened to fstat it)', async () => {
  const { createServer } = await import('node:net');
  const server = createServer();
  const sock = path.join(ws, 'app.sock');
  await new Promise<void>((resolve) => server.listen(sock, resolve));
  try {
    expect(await run(lsTool(), { path: 'app.sock' }, makeCtx(ws))).toMatch(/^other +- +app\.sock$/);
  } finally {
    await new Promise((r) => server.close(r));
  }
});
