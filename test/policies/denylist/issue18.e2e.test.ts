/**
 * Issue 18's bypass classes RUN through the whole stack (router -> runner -> executor -> gate -> sandboxed
 * /bin/sh) with an agent whose tier lets every command run without asking. Each attack is a spelling that
 * passed the denylist before: dash (/bin/sh here) expands an alias on a later line, a function runs with
 * the arguments it is called with, `bash +O ... -c` and `bash +x -c` hid the inline code. Afterwards the
 * victim and canary show nothing ran, and a control command shows the same set-up runs what the gate lets
 * through. The defence-off control runs every attack with plain /bin/sh in a scratch folder: there each one
 * really deletes the victim or makes the canary, so the gated run could have failed.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RecordedRequest } from '../../fakes/anthropic.js';
import { Harness, agentYaml, waitFor } from '../../helpers/harness.js';

const ATTACKS: ReadonlyArray<readonly [string, string, 'victim' | 'canary']> = [
  ['alias on a later line (dash expands it)', 'alias x=rm\nx -rf victim', 'victim'],
  ['alias of an alias', 'alias y=rm\nalias x=y\nx -rf victim', 'victim'],
  ['function called with the dangerous arguments', 'f() { rm "$@"; }; f -rf victim', 'victim'],
  ['function after shift', 'f() { shift; rm "$@"; }; f x -rf victim', 'victim'],
  ['+O option before -c', "bash +O extglob -c 'touch canary'", 'canary'],
  ['+x option before -c', "bash +x -c 'touch canary'", 'canary'],
];

type Block = { type: string; content?: unknown; is_error?: boolean };
function toolResults(req: RecordedRequest): string[] {
  const messages = (req.body as { messages: Array<{ content: Block[] | string }> }).messages;
  const last = messages.at(-1)!;
  const blocks = typeof last.content === 'string' ? [] : last.content;
  return blocks.filter((b) => b.type === 'tool_result').map((b) => (typeof b.content === 'string' ? b.content : JSON.stringify(b.content)));
}

function plant(dir: string): void {
  mkdirSync(join(dir, 'victim', 'sub'), { recursive: true });
  writeFileSync(join(dir, 'victim', 'sub', 'precious.txt'), 'keep me');
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

test('defence off: each spelling really deletes the victim or makes the canary under /bin/sh', () => {
  const parent = mkdtempSync(join(tmpdir(), 'i18-control-'));
  chmodSync(parent, 0o755);
  try {
    for (const [what, command, effect] of ATTACKS) {
      const dir = mkdtempSync(join(parent, 'c-'));
      plant(dir);
      spawnSync('/bin/sh', ['-c', command], { cwd: dir });
      const happened = effect === 'victim' ? !existsSync(join(dir, 'victim')) : existsSync(join(dir, 'canary'));
      expect({ what, happened }).toEqual({ what, happened: true });
    }
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});

test('through execute_command every spelling is refused before it runs: victim kept, no canary, the control runs', async () => {
  h = await Harness.start({ yaml: agentYaml('tools: [execute_command]', 'tier: high-risk', 'approvers: { console: [local] }') });
  plant(h.workspace);
  const control = 'touch control-ran';
  h.script(
    {
      toolUses: [...ATTACKS.map(([, command]) => ({ name: 'execute_command', input: { command } })), { name: 'execute_command', input: { command: control } }],
    },
    { text: 'done' },
  );

  await h.adapter.send('try them all');
  await waitFor('answer', () => h!.adapter.answers()[0]);

  expect(existsSync(join(h.workspace, 'victim', 'sub', 'precious.txt'))).toBe(true);
  expect(existsSync(join(h.workspace, 'canary'))).toBe(false);
  expect(existsSync(join(h.workspace, 'control-ran'))).toBe(true);
  const results = toolResults(h.modelRequests()[1]!);
  expect(results).toHaveLength(ATTACKS.length + 1);
  results.slice(0, ATTACKS.length).forEach((r, i) => {
    expect({ attack: ATTACKS[i]![0], blocked: r.startsWith('Blocked by the shell denylist') && /approval cannot override it/.test(r) }).toEqual({
      attack: ATTACKS[i]![0],
      blocked: true,
    });
  });
  expect(results.at(-1)!).toMatch(/^exit code: 0/);
});
