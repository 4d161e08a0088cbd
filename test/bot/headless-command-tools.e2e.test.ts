/**
 * Custom `command` tools headless: `gatehouse run --json` as a real process against the fake Anthropic
 * server. A read-only command tool runs in the bubblewrap box with shell syntax in a parameter kept as
 * one argv element (nothing else runs); unattended, one above the agent's tier is declined with the
 * gate's reason and runs nothing; with --interactive-stdin the caller gets its card and an approval
 * runs it, even when stdin is closed right after the answer (the answer used to lose that race to the
 * "no answer" given to requests still open when stdin ends).
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { jsonReport, runGatehouse, startGatehouse, unattendedEnv } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

type Body = { messages: Array<{ role: string; content: unknown }> };
type Report = { answer: string; declined: Array<{ tool: string; reason: string }> };

let fake: FakeAnthropic;
let dir: string;
const replies: FakeReply[] = [];

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: 'test-key' });
  replies.length = 0;
  fake.setHandler(() => replies.shift() ?? { text: '(no scripted reply)' });
  dir = mkdtempSync(join(tmpdir(), 'gh-run-cmdtools-'));
  chmodSync(dir, 0o711);
  mkdirSync(join(dir, 'ws'));
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file]
    tier: read-only
    workspace: "${join(dir, 'ws')}"
    commandTools:
      say:
        description: Print the words given.
        input: { type: object, properties: { words: { type: string } }, required: [words] }
        argv: [/usr/bin/printf, "%s\\\\n", "{words}"]
        tier: read-only
      make_file:
        description: Create an empty file in the workspace.
        input: { type: object, properties: { name: { type: string } }, required: [name] }
        argv: [/usr/bin/touch, "{name}"]
        tier: low-risk
`,
  );
});
afterEach(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const env = () => unattendedEnv(dir, fake.url);

async function run(args: string[]): Promise<{ code: number | null; report: Report; stderr: string }> {
  const r = await runGatehouse(args, dir, fake.url);
  return { code: r.code, report: jsonReport<Report>(r), stderr: r.stderr };
}

/** What the model was handed back for its tool call (the last message of the request after it). */
const toolResultSeen = (i: number): string => JSON.stringify((fake.requests[i]!.body as Body).messages.at(-1)!.content);

test('a read-only command tool runs in the box; shell syntax in its parameter is one argument and runs nothing', async () => {
  const words = '; touch pwned1 $(touch pwned2) `touch pwned3`';
  replies.push({ toolUses: [{ name: 'say', input: { words } }] }, { text: 'I said it.' });
  const r = await run(['run', '--json', '--', 'say it']);
  expect(r.code).toBe(0);
  expect(r.report.answer).toBe('I said it.');
  expect(r.report.declined).toEqual([]);
  const seen = toolResultSeen(1);
  expect(seen).toContain('exit code: 0');
  expect(seen).toContain('; touch pwned1 $(touch pwned2) `touch pwned3`');
  expect(readdirSync(join(dir, 'ws')).filter((f) => f.startsWith('pwned'))).toEqual([]);
}, 180_000);

test('unattended: a command tool above the tier is declined with the reason and runs nothing', async () => {
  replies.push({ toolUses: [{ name: 'make_file', input: { name: 'made' } }] }, { text: 'It needs an approval.' });
  const r = await run(['run', '--json', '--', 'make the file']);
  expect(r.code).toBe(0);
  expect(r.report.answer).toBe('It needs an approval.');
  expect(r.report.declined).toEqual([{ tool: 'make_file', reason: expect.stringMatching(/^Declined: make_file needs approval/) }]);
  expect(toolResultSeen(1)).toContain('Declined: make_file needs approval');
  expect(existsSync(join(dir, 'ws', 'made'))).toBe(false);
}, 180_000);

const events = (s: string): Array<Record<string, unknown>> =>
  s
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

test('--interactive-stdin: the card shows the exact argv; approved, the value becomes one file name', async () => {
  const name = '$(touch pwned); x';
  replies.push({ toolUses: [{ name: 'make_file', input: { name } }] }, { text: 'Made.' });
  const p = startGatehouse(['run', '--json', '--interactive-stdin', 'make the file'], { cwd: dir, env: env(), onlyEnv: true });
  const asked = await waitFor('approval_required', () => events(p.stderr()).find((e) => e['type'] === 'approval_required'), {
    timeoutMs: 60_000,
    intervalMs: 20,
  });
  expect(String(asked['title'])).toContain('make_file');
  expect(String(asked['body'])).toContain('/usr/bin/touch');
  expect(existsSync(join(dir, 'ws', name))).toBe(false);
  // Answer and close at once, as `printf '%s\n' "$answer" | ...` would.
  p.child.stdin.write(JSON.stringify({ type: 'approval_response', requestId: asked['requestId'], value: 'approve' }) + '\n');
  p.child.stdin.end();
  const { code } = await p.exited;
  expect(code).toBe(0);
  const out = JSON.parse(p.stdout()) as Report;
  expect(out.answer).toBe('Made.');
  expect(out.declined).toEqual([]);
  expect(readdirSync(join(dir, 'ws'))).toEqual([name]);
}, 180_000);
