/**
 * What `gatehouse run` reports beyond the answer, on real processes (bot/main.ts from source) against
 * the fake model: `--json` lists what was declined (`declined: [{tool, reason}]`: the gate's refusals
 * and an approver's denials), in-process and through a running service; and a run attached to a
 * service whose loaded gatehouse.yaml is not the file on disk says so on stderr, until a reload.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { unattendedEnv } from '../helpers/process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const main = join(root, 'bot', 'main.ts');

interface Done {
  code: number | null;
  stdout: string;
  stderr: string;
}
interface Declined {
  tool: string;
  reason: string;
}

let fake: FakeAnthropic;
let dir: string;
let script: FakeReply[];
const children = new Set<ChildProcess>();

const YAML = `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file, write_file, execute_command]
    tier: read-only
    workspace: ./workspace
    sandbox: none
`;

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  script = [];
  fake.setHandler(() => script.shift() ?? { text: 'done' });
  dir = mkdtempSync(join(tmpdir(), 'gh-run-report-'));
  chmodSync(dir, 0o711);
  writeFileSync(join(dir, 'gatehouse.yaml'), YAML);
});
afterEach(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children.clear();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

function start(args: string[], extraEnv: Record<string, string> = {}): { child: ChildProcess; done: Promise<Done>; output: () => string } {
  const env = unattendedEnv(dir, fake.url, extraEnv);
  const child = spawn(process.execPath, ['--import', register, main, ...args], { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<Done>((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done, output: () => stdout + stderr };
}

function run(args: string[], extraEnv: Record<string, string> = {}, stdin = ''): Promise<Done> {
  const p = start(args, extraEnv);
  p.child.stdin!.end(stdin);
  return p.done;
}

async function until(what: string, check: () => boolean): Promise<void> {
  const end = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const declinedOf = (r: Done): Declined[] => (JSON.parse(r.stdout) as { declined: Declined[] }).declined;

test('--json lists each declined call with its reason: above the tier unattended, the denylist, an approver saying no', async () => {
  script.push({
    toolUses: [
      { name: 'write_file', input: { path: 'a.txt', content: 'x' } },
      { name: 'execute_command', input: { command: 'rm -rf /' } },
    ],
  });
  const r = await run(['run', '--json', 'do two things']);
  expect(r.code).toBe(0);
  const declined = declinedOf(r);
  expect(declined).toHaveLength(2);
  expect(declined).toContainEqual({ tool: 'write_file', reason: expect.stringMatching(/needs approval.*--approval-policy/s) });
  expect(declined).toContainEqual({ tool: 'execute_command', reason: expect.stringMatching(/^Blocked by the shell denylist/) });
  expect(existsSync(join(dir, 'workspace', 'a.txt'))).toBe(false);

  // Interactive: the caller denies on stdin.
  script.push({ toolUses: [{ name: 'write_file', input: { path: 'b.txt', content: 'x' } }] });
  const p = start(['run', '--json', '--interactive-stdin', 'write b.txt']);
  let asked: { requestId?: string } = {};
  await until('approval_required', () => {
    const line = p
      .output()
      .split('\n')
      .find((l) => l.includes('"approval_required"'));
    if (line) asked = JSON.parse(line) as { requestId: string };
    return line !== undefined;
  });
  p.child.stdin!.end(JSON.stringify({ type: 'approval_response', requestId: asked.requestId, value: 'deny' }) + '\n');
  const denied = await p.done;
  expect(denied.code).toBe(0);
  expect(declinedOf(denied)).toEqual([{ tool: 'write_file', reason: 'denied by gatehouse run' }]);

  // Nothing declined: an empty list, so a script can test `.declined | length`.
  script.push({ text: 'hi' });
  expect(declinedOf(await run(['run', '--json', 'hello']))).toEqual([]);
}, 240_000);

test('attached: declined calls are reported through the service; an edited gatehouse.yaml is noted on stderr until reloaded', async () => {
  const service = start(['serve']);
  await until('the attach socket', () => existsSync(join(dir, 'data', 'gatehouse.sock')) && existsSync(join(dir, 'data', 'gatehouse.pid')));
  // The client cannot reach the model: only the service can have answered.
  const viaService = { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' };

  script.push({ toolUses: [{ name: 'write_file', input: { path: 'c.txt', content: 'x' } }] });
  const first = await run(['run', '--json', 'write c.txt'], viaService);
  expect(first.code).toBe(0);
  expect(declinedOf(first)).toEqual([{ tool: 'write_file', reason: expect.stringMatching(/needs approval/) }]);
  // The file is the one the service loaded: no note.
  expect(first.stderr).not.toContain('note:');

  appendFileSync(join(dir, 'gatehouse.yaml'), '    autoApprovedTools: [write_file]\n');
  const edited = await run(['run', '--json', 'hello'], viaService);
  expect(edited.code).toBe(0);
  expect(edited.stderr).toContain(
    `gatehouse run: note: ${join(dir, 'gatehouse.yaml')} changed since the running service loaded it; this run used the configuration the service loaded; \`gatehouse reload\` applies the file`,
  );
  // stdout is still the one JSON object.
  expect(JSON.parse(edited.stdout)).toMatchObject({ ok: true });

  const reload = await run(['reload']);
  expect(reload.code).toBe(0);
  script.push({ toolUses: [{ name: 'write_file', input: { path: 'd.txt', content: 'x' } }] });
  const reloaded = await run(['run', '--json', 'write d.txt'], viaService);
  expect(reloaded.stderr).not.toContain('note:');
  // The reloaded file is in force: the write is auto-approved now.
  expect(declinedOf(reloaded)).toEqual([]);
  expect(existsSync(join(dir, 'workspace', 'd.txt'))).toBe(true);

  rmSync(join(dir, 'gatehouse.yaml'));
  const removed = await run(['run', 'hello'], viaService);
  expect(removed.stderr).toContain(`${join(dir, 'gatehouse.yaml')}, which is gone now`);

  service.child.kill('SIGTERM');
  expect((await service.done).code).toBe(0);
}, 240_000);
