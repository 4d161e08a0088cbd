/**
 * The audit file's chain against the edits someone covering their tracks would make: a chain written
 * by the real writer (bot/audit/chain.ts, rotating small files), then changed on disk, then checked by
 * `gatehouse audit verify` (bot/cli/index.ts runCli, as from a shell): exit 1 naming the first bad record.
 */
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../bot/cli/index.js';
import { ChainWriter, fileName } from '../../bot/audit/chain.js';
import { sinceOf } from '../../bot/audit/command.js';

let dir: string;
let audit: string;
let keyFile: string;
const KEY = 'k'.repeat(16) + 'e'.repeat(16) + 'y'.repeat(16);

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await runCli(args, { env: { PATH: process.env.PATH ?? '' }, cwd: dir, stdout, stderr });
  return { code, stdout: out, stderr: err };
}
const verify = () => cli(['audit', 'verify', '--dir', audit, '--key-file', keyFile]);

/** 30 records, files of at most 1 KiB: several files. A clock that ticks a second per record. */
function writeChain(n = 30): void {
  let t = Date.parse('2026-05-01T00:00:00Z');
  const w = new ChainWriter({ dir: audit, chain: 'audit', key: Buffer.from(KEY), maxBytes: 1024, now: () => new Date((t += 1000)) });
  for (let i = 1; i <= n; i++)
    w.append({ event: 'gate_decision', conversation: 'telegram:501', agent: 'default', runId: `r${i}`, tool: 'write_file', decision: 'ask', rule: 'tier' });
  w.close();
}
const files = () =>
  readdirSync(audit)
    .filter((f) => f.endsWith('.jsonl'))
    .sort();
const linesOf = (f: string) =>
  readFileSync(join(audit, f), 'utf8')
    .split('\n')
    .filter((l) => l !== '');
const writeLines = (f: string, lines: string[]) => writeFileSync(join(audit, f), lines.map((l) => l + '\n').join(''));
const seqOf = (line: string) => (JSON.parse(line) as { seq: number }).seq;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-auditchain-'));
  audit = join(dir, 'audit');
  keyFile = join(dir, 'audit.key');
  writeFileSync(keyFile, KEY + '\n', { mode: 0o600 });
  writeChain();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('an untouched chain verifies across rotated files; files 0600 in a 0700 folder', async () => {
  expect(files().length).toBeGreaterThan(2);
  // The first record of each later file carries the hash of the last record of the one before.
  const [first, second] = files();
  const last = linesOf(first!).at(-1)!;
  expect(JSON.parse(linesOf(second!)[0]!).prev).toBe(createHash('sha256').update(last).digest('hex'));
  const r = await verify();
  expect(r).toMatchObject({ code: 0 });
  expect(r.stdout).toMatch(/^OK: 30 record\(s\) in \d+ file\(s\)\n {2}audit: 30 record\(s\), last seq 30, last hash [0-9a-f]{64}\n$/);
  expect(statSync(audit).mode & 0o777).toBe(0o700);
  for (const f of files()) expect(statSync(join(audit, f)).mode & 0o777).toBe(0o600);
  // Each line is exactly the record's JSON, its mac last, over the JSON of the rest (the contract).
  for (const f of files())
    for (const line of linesOf(f)) {
      const { mac, ...rest } = JSON.parse(line) as { mac: string };
      expect(line).toBe(JSON.stringify({ ...rest, mac }));
      expect(mac).toBe(createHmac('sha256', KEY).update(JSON.stringify(rest)).digest('hex'));
    }
});

test('a writer opened again continues the chain where it stopped', async () => {
  writeChain(3);
  expect((await verify()).stdout).toMatch(/^OK: 33 record/);
});

test('an edited field: exit 1 naming that record', async () => {
  const f = files()[1]!;
  const lines = linesOf(f);
  const target = seqOf(lines[1]!);
  lines[1] = lines[1]!.replace('"decision":"ask"', '"decision":"allow"');
  writeLines(f, lines);
  const r = await verify();
  expect(r.code).toBe(1);
  expect(r.stdout).toContain(`FAILED: ${f} seq ${target} (line 2): its MAC does not match`);
});

test('a deleted line: exit 1 naming the record after the gap', async () => {
  const f = files()[0]!;
  const lines = linesOf(f);
  const after = seqOf(lines[2]!);
  lines.splice(1, 1);
  writeLines(f, lines);
  const r = await verify();
  expect(r.code).toBe(1);
  expect(r.stdout).toContain(`FAILED: ${f} seq ${after} (line 2): it follows seq ${after - 2}: record(s) before it were removed or reordered`);
});

test('two lines swapped: exit 1 at the first one out of place', async () => {
  const f = files()[0]!;
  const lines = linesOf(f);
  [lines[1], lines[2]] = [lines[2]!, lines[1]!];
  writeLines(f, lines);
  const r = await verify();
  expect(r.code).toBe(1);
  expect(r.stdout).toContain(`FAILED: ${f} seq 3 (line 2): it follows seq 1`);
});

test('the middle cut out (a whole file, or lines across it): exit 1', async () => {
  const [, middle] = files();
  rmSync(join(audit, middle!));
  const r = await verify();
  expect(r.code).toBe(1);
  expect(r.stdout).toContain(`FAILED: ${middle} seq`);
  expect(r.stdout).toContain('this file of the chain is missing');
});

test('an edit across a rotation boundary: the last record of a file removed, the next file names it', async () => {
  const [first, second] = files();
  const lines = linesOf(first!);
  const removed = seqOf(lines.at(-1)!);
  writeLines(first!, lines.slice(0, -1));
  const r = await verify();
  expect(r.code).toBe(1);
  expect(r.stdout).toContain(`FAILED: ${second} seq ${removed + 1} (line 1): it follows seq ${removed - 1}`);
  // And an edit of the first record of a later file is its own MAC failure.
  rmSync(audit, { recursive: true });
  writeChain();
  const f2 = files()[1]!;
  const l2 = linesOf(f2);
  l2[0] = l2[0]!.replace('"tool":"write_file"', '"tool":"read_file"');
  writeLines(f2, l2);
  expect((await verify()).stdout).toContain(`FAILED: ${f2} seq ${seqOf(l2[0]!)} (line 1): its MAC does not match`);
});

test('a record rewritten with its hashes recomputed but without the key: exit 1 at that record', async () => {
  const f = files()[0]!;
  const lines = linesOf(f);
  // The forger changes record 2 and redoes every hash after it; the MAC needs the key, so they guess one.
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  const recs = lines.map((l) => JSON.parse(l) as { seq: number; time: string; prev: string; event: Record<string, unknown>; mac: string });
  recs[1]!.event.decision = 'allow';
  for (let i = 1; i < recs.length; i++) {
    const r = recs[i]!;
    r.prev = sha(JSON.stringify(recs[i - 1]));
    r.mac = createHmac('sha256', 'not-the-key')
      .update(JSON.stringify({ seq: r.seq, time: r.time, prev: r.prev, event: r.event }))
      .digest('hex');
  }
  writeLines(
    f,
    recs.map((r) => JSON.stringify(r)),
  );
  const r = await verify();
  expect(r.code).toBe(1);
  expect(r.stdout).toContain(`FAILED: ${f} seq 2 (line 2): its MAC does not match`);
});

test('a line rewritten with the same content reformatted is named, not the one after it', async () => {
  const f = files()[0]!;
  const lines = linesOf(f);
  lines[0] = JSON.stringify(JSON.parse(lines[0]!), null, 1).replace(/\n/g, '');
  writeLines(f, lines);
  const r = await verify();
  expect(r.code).toBe(1);
  expect(r.stdout).toContain(`FAILED: ${f} seq 1 (line 1): the line was rewritten`);
});

test('the wrong key: exit 1 at the first record; a missing key says where it looked', async () => {
  writeFileSync(keyFile, 'x'.repeat(64));
  expect((await verify()).stdout).toContain(`FAILED: ${fileName('audit', 1)} seq 1 (line 1): its MAC does not match`);
  rmSync(keyFile);
  const r = await verify();
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`no audit key at ${keyFile}`);
});

test('export --since and tail -n read the records; bad arguments exit 2', async () => {
  const all = await cli(['audit', 'export', '--since', '2026-05-01T00:00:25Z', '--json', '--dir', audit]);
  expect(all.code).toBe(0);
  const rows = all.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { seq: number; event: { event: string } });
  expect(rows.map((r) => r.seq)).toEqual([25, 26, 27, 28, 29, 30]);
  expect(rows[0]!.event.event).toBe('gate_decision');
  const tail = await cli(['audit', 'tail', '-n', '2', '--dir', audit]);
  expect(tail.stdout).toBe(
    '2026-05-01T00:00:29.000Z audit#29 gate_decision: gate: ask write_file in telegram:501: tier\n2026-05-01T00:00:30.000Z audit#30 gate_decision: gate: ask write_file in telegram:501: tier\n',
  );
  expect((await cli(['audit', 'export', '--dir', audit])).code).toBe(2);
  expect((await cli(['audit', 'export', '--since', 'yesterday', '--dir', audit])).stderr).toMatch(/expected an ISO time .* or a duration like 90s/);
  expect((await cli(['audit', 'frobnicate'])).code).toBe(2);
  expect(sinceOf('24h', 100 * 3600_000)).toBe(76 * 3600_000);
});

test('bad audit settings are refused naming the variable', async () => {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let err = '';
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  writeFileSync(join(dir, 'gatehouse.yaml'), 'agents:\n  default:\n    model: claude-sonnet-5-5\n');
  const code = await runCli(['audit', 'verify'], {
    env: { PATH: '', GATEHOUSE_AUDIT_MAX_BYTES: 'lots', GATEHOUSE_AUDIT_KEY: 'short' },
    cwd: dir,
    stdout,
    stderr,
  });
  expect(code).toBe(1);
  expect(err).toContain('GATEHOUSE_AUDIT_MAX_BYTES: expected a size of at least 1k');
  expect(err).toContain('GATEHOUSE_AUDIT_KEY: must be at least 32 characters');
});
