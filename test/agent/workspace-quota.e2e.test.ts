/**
 * Issue 18, disk: a workspace that fills up must not take the store down. The attack runs for real:
 * the agent's command (real execute_command, real bubblewrap box when root) writes 20 MB into a
 * workspace limited to 5 MB, through the whole stack (fake model -> runner -> executor), on a real
 * SQLite store. Asserted: the command's result says it is over the limit, the next write_file is
 * refused (nothing written), reads and rm still work, after rm writing works again, and the store
 * still takes writes. Control: the same run with `workspaceMaxBytes: 0` writes on unhindered.
 */
import { existsSync, linkSync, mkdirSync, mkdtempSync, chmodSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordedRequest } from '../fakes/anthropic.js';
import { Harness, agentYaml, waitFor } from '../helpers/harness.js';
import { measureWorkspace, parseByteSize, resetWorkspaceQuotaState, workspaceQuota } from '../../agent/tools/workspace-quota.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  resetWorkspaceQuotaState();
});

type Block = { type: string; content?: unknown; is_error?: boolean };

/** The tool results of the request's last (user) message. */
function toolResults(req: RecordedRequest): Array<{ content: string; is_error?: boolean }> {
  const last = (req.body as { messages: Array<{ content: Block[] | string }> }).messages.at(-1)!;
  const blocks = typeof last.content === 'string' ? [] : last.content;
  return blocks
    .filter((b) => b.type === 'tool_result')
    .map((b) => ({ content: typeof b.content === 'string' ? b.content : JSON.stringify(b.content), ...(b.is_error ? { is_error: true } : {}) }));
}

async function start(limit: string): Promise<Harness> {
  const harness = await Harness.start({
    yaml: agentYaml('tools: [execute_command, write_file, read_file, rm]', 'tier: high-risk', `workspaceMaxBytes: ${limit}`),
  });
  mkdirSync(harness.workspace, { recursive: true });
  return harness;
}

const FILL = { name: 'execute_command', input: { command: 'head -c 20000000 /dev/zero > big.bin; echo wrote' } };
const WRITE = (path: string) => ({ name: 'write_file', input: { path, content: 'after the fill\n' } });

test('20 MB into a 5 MB workspace: the result says so, later writes are refused, rm frees it, the store keeps working', async () => {
  h = await start('5MiB');
  h.script(
    { toolUses: [FILL] },
    { toolUses: [WRITE('next.txt')] },
    // A command that writes is refused too; one that only looks or removes runs.
    { toolUses: [{ name: 'execute_command', input: { command: 'echo more > more.txt' } }] },
    {
      toolUses: [
        { name: 'read_file', input: { path: 'big.bin', limit: 1 } },
        { name: 'execute_command', input: { command: 'ls -la' } },
      ],
    },
    { toolUses: [{ name: 'rm', input: { path: 'big.bin' } }] },
    { toolUses: [WRITE('after-rm.txt')] },
    { text: 'done' },
  );
  await h.adapter.send('fill the disk');
  await waitFor('answer', () => h!.adapter.answers()[0], 60_000);
  const reqs = h.modelRequests();
  const [fill] = toolResults(reqs[1]!);
  expect(fill!.content).toContain('wrote');
  expect(fill!.content).toMatch(/over the workspace limit: 19\.\d MiB of 5\.0 MiB used in .*workspace \(workspaceMaxBytes\)/);
  expect(fill!.content).toMatch(/Free space before writing more/);
  expect(fill!.is_error).toBe(true);

  const [write] = toolResults(reqs[2]!);
  expect(write!.is_error).toBe(true);
  expect(write!.content).toMatch(/^write_file did not run: the workspace is over the workspace limit: 19\.\d MiB of 5\.0 MiB/);
  expect(existsSync(join(h.workspace, 'next.txt'))).toBe(false);

  const [more] = toolResults(reqs[3]!);
  expect(more!.content).toMatch(/^execute_command did not run: the workspace is over the workspace limit/);
  expect(existsSync(join(h.workspace, 'more.txt'))).toBe(false);

  const [read, ls] = toolResults(reqs[4]!);
  expect(read!.content).not.toMatch(/did not run/);
  expect(ls!.content).toMatch(/^exit code: 0/);
  expect(ls!.content).toContain('big.bin');

  const [rm] = toolResults(reqs[5]!);
  expect(rm!.is_error).toBeUndefined();
  expect(existsSync(join(h.workspace, 'big.bin'))).toBe(false);

  const [after] = toolResults(reqs[6]!);
  expect(after!.is_error).toBeUndefined();
  expect(existsSync(join(h.workspace, 'after-rm.txt'))).toBe(true);

  // The store still takes writes (the run above saved its transcript; one more, directly).
  await h.store.cache.set('probe:after-fill', { ok: true });
  expect(await h.store.cache.get('probe:after-fill')).toEqual({ ok: true });
  expect(h.storeErrors).toEqual([]);
}, 120_000);

test('control: with workspaceMaxBytes 0 the same fill passes unremarked and the next write lands', async () => {
  h = await start('0');
  h.script({ toolUses: [FILL] }, { toolUses: [WRITE('next.txt')] }, { text: 'done' });
  await h.adapter.send('fill the disk');
  await waitFor('answer', () => h!.adapter.answers()[0], 60_000);
  const reqs = h.modelRequests();
  const [fill] = toolResults(reqs[1]!);
  expect(fill!.content).not.toMatch(/workspace limit/);
  expect(existsSync(join(h.workspace, 'next.txt'))).toBe(true);
}, 120_000);

describe('the walk', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync('/var/tmp/gh-quota-');
    chmodSync(dir, 0o755);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('a symlink to a big file outside, a symlink loop and a hard link do not inflate the count', async () => {
    const ws = join(dir, 'ws');
    mkdirSync(ws);
    writeFileSync(join(dir, 'outside.bin'), Buffer.alloc(8 * 1024 * 1024, 1));
    writeFileSync(join(ws, 'own.bin'), Buffer.alloc(1024 * 1024, 1));
    const base = (await measureWorkspace(ws)).bytes;
    symlinkSync(join(dir, 'outside.bin'), join(ws, 'link-out'));
    symlinkSync(ws, join(ws, 'loop'));
    symlinkSync(dir, join(ws, 'up'));
    linkSync(join(ws, 'own.bin'), join(ws, 'own-again.bin'));
    const u = await measureWorkspace(ws);
    expect(u.complete).toBe(true);
    expect(u.bytes).toBeGreaterThanOrEqual(1024 * 1024);
    expect(u.bytes).toBeLessThan(base + 64 * 1024); // the links themselves only
    // Control: the outside file is really there to be counted by a walk that follows links.
    expect((await measureWorkspace(dir)).bytes).toBeGreaterThan(8 * 1024 * 1024);
  });

  test('10,000 files: counted, with a cap that stops the walk early; the cost is printed', async () => {
    const ws = join(dir, 'many');
    for (let d = 0; d < 100; d++) {
      mkdirSync(join(ws, `d${d}`), { recursive: true });
      for (let f = 0; f < 100; f++) writeFileSync(join(ws, `d${d}`, `f${f}`), 'x');
    }
    const t0 = process.hrtime.bigint();
    const u = await measureWorkspace(ws);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    console.log(`workspace walk: ${u.entries} entries, ${u.bytes} bytes in ${ms.toFixed(1)} ms`);
    expect(u.entries).toBe(10_100);
    expect(u.complete).toBe(true);
    const capped = await measureWorkspace(ws, { maxEntries: 500 });
    expect(capped.complete).toBe(false);
    expect(capped.entries).toBe(500);
  });
});

test('a workspace too big to measure whole (many tiny files hiding a big one past the cap) counts as over', async () => {
  const dir = mkdtempSync('/var/tmp/gh-quota-cap-');
  try {
    for (let i = 0; i < 50; i++) writeFileSync(join(dir, `tiny${i}`), '');
    const q = workspaceQuota(dir, 1024 ** 3, { maxEntries: 20 })!;
    const after = await q.afterRun({ name: 'write_file' }, { content: 'wrote' });
    expect(after.isError).toBe(true);
    expect(JSON.stringify(after.content)).toMatch(/more than 20 files and folders: too many to measure/);
    expect(await q.refusal({ name: 'write_file' }, {})).toMatch(/^write_file did not run: the workspace is over the workspace limit/);
    // Reads and removals still run; a command that only removes runs, one that writes does not.
    expect(await q.refusal({ name: 'read_file' }, {})).toBeNull();
    expect(await q.refusal({ name: 'rm' }, {})).toBeNull();
    expect(await q.refusal({ name: 'execute_command' }, { command: 'rm tiny1 tiny2 && ls' })).toBeNull();
    expect(await q.refusal({ name: 'execute_command' }, { command: 'rm tiny1; touch x' })).not.toBeNull();
    expect(await q.refusal({ name: 'execute_command' }, { command: 'cat tiny1 > copy' })).not.toBeNull();
    // Control: with the cap above the file count, the same workspace is under the limit.
    resetWorkspaceQuotaState();
    expect(await workspaceQuota(dir, 1024 ** 3)!.refusal({ name: 'write_file' }, {})).toBeNull();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('sizes in the config', () => {
  expect(parseByteSize('5MiB')).toBe(5 * 1024 * 1024);
  expect(parseByteSize('500MB')).toBe(500_000_000);
  expect(parseByteSize('1G')).toBe(1024 ** 3);
  expect(parseByteSize(1234)).toBe(1234);
  expect(parseByteSize('none')).toBe(0);
  expect(parseByteSize(0)).toBe(0);
  expect(parseByteSize('lots')).toEqual({ error: expect.stringMatching(/expected a size like "500MB"/) });
  expect(parseByteSize(-1)).toEqual({ error: expect.stringMatching(/whole number of bytes/) });
});
