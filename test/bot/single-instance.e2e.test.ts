/**
 * One `gatehouse serve` per SQLite store, on real processes: a second start exits 1 saying "already
 * running (pid N, since ...)" and touches nothing of the first (its pid file, socket and token stay
 * as they were, it keeps serving); after the first is killed with SIGKILL (no cleanup, a stale lock
 * file left behind) the next start takes the store over.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGatehouse, waitForProcess, type TestProcess } from '../helpers/process.js';

const CONFIG = `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [view_memory]
    tier: low-risk
    workspace: ./ws
    approvers: { console: [local] }
`;

type Bot = TestProcess;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-single-'));
  writeFileSync(join(dir, 'gatehouse.yaml'), CONFIG);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function serve(): Bot {
  return startGatehouse(['serve'], { cwd: dir, env: { GATEHOUSE_HTTP_PORT: '0' } });
}

const until = (what: string, check: () => boolean, bot: Bot, timeoutMs = 60_000) => waitForProcess(bot, what, check, timeoutMs);

/** What the running service keeps in its data folder, with each file's content and change time. */
function serviceFiles(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['gatehouse.pid', 'gatehouse.sock', 'gatehouse.token', 'gatehouse.sqlite.holder']) {
    const file = join(dir, 'data', name);
    if (!existsSync(file)) continue;
    const st = statSync(file);
    out[name] = `${st.isSocket() ? 'socket' : readFileSync(file, 'utf8')} @${st.ctimeMs}`;
  }
  return out;
}

test('a second serve on the same store exits 1 and touches nothing; after a kill -9 the next one takes over', async () => {
  const first = serve();
  try {
    await until('the first to start', () => first.output().includes('Gatehouse started'), first);
    const before = serviceFiles();
    expect(Object.keys(before).sort()).toEqual(['gatehouse.pid', 'gatehouse.sock', 'gatehouse.sqlite.holder', 'gatehouse.token']);

    const second = serve();
    expect(await second.exited).toEqual({ code: 1, signal: null });
    expect(second.output()).toMatch(new RegExp(`already running \\(pid ${first.child.pid}, since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\)`));
    expect(second.output()).toContain(join(dir, 'data', 'gatehouse.sqlite'));
    expect(serviceFiles()).toEqual(before);
    expect(first.child.exitCode).toBeNull();

    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
  } finally {
    first.child.kill('SIGKILL');
  }
  // The killed one's lock file and holder file are still there; the kernel dropped the lock itself.
  expect(existsSync(join(dir, 'data', 'gatehouse.sqlite.lock'))).toBe(true);
  const third = serve();
  try {
    await until('the third to start', () => third.output().includes('Gatehouse started'), third);
    expect(third.output()).not.toMatch(/already running/);
    expect(JSON.parse(readFileSync(join(dir, 'data', 'gatehouse.sqlite.holder'), 'utf8'))).toMatchObject({ pid: third.child.pid });
    third.child.kill('SIGTERM');
    expect(await third.exited).toEqual({ code: 0, signal: null });
    // A clean stop leaves no holder file.
    expect(existsSync(join(dir, 'data', 'gatehouse.sqlite.holder'))).toBe(false);
  } finally {
    third.child.kill('SIGKILL');
  }
}, 120_000);
