/**
 * The bypass classes RUN through the whole stack (router -> runner -> executor -> gate -> tool) with an
 * agent whose tier lets every command run without asking: had the denylist missed one, it would have
 * deleted `victim/` in the temp workspace. Each attack is one spelling of a class; afterwards the victim
 * is still there, and a control command shows the same set-up really runs what the gate lets through.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordedRequest } from '../../fakes/anthropic.js';
import { Harness, agentYaml, waitFor } from '../../helpers/harness.js';

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const ATTACKS: ReadonlyArray<readonly [string, string]> = [
  ['wrappers', 'setsid rm -rf victim'],
  ['wrappers (argument slice)', 'nice -n 1 stdbuf -oL some-runner --flag rm -rf victim'],
  ['option spellings', "env -iS 'rm -rf victim'"],
  ['option spellings', 'rm --recur victim'],
  ['inline code', 'python3 -c\'import shutil; shutil.rmtree("victim")\''],
  ['command strings in tools', 'awk \'BEGIN{system("rm -rf victim")}\''],
  ['command strings in tools', "tar -cf /dev/null --checkpoint=1 --checkpoint-action=exec='rm -rf victim' victim"],
  ['functions', 'f(){ rm -rf victim; }; f'],
  ['written scripts', "echo 'rm -rf victim' > x.sh; sh x.sh"],
  ['recursive deletion', 'find victim -delete'],
  ['recursive deletion', 'find . -path ./victim -exec rm -r {} +'],
  ['process substitution', "bash < <(echo 'rm -rf victim')"],
  ['arithmetic evaluation', "x='a[$(rm -rf victim)]'; echo $(( x ))"],
  ['arithmetic evaluation', "y='a[`rm -rf victim`]'; x=y; [[ $x -eq 0 ]]"],
  ['arithmetic evaluation', "let 'n[$(rm -rf victim)]=1'"],
];

type Block = { type: string; content?: unknown; is_error?: boolean };

function toolResults(req: RecordedRequest): Array<{ content: string; is_error?: boolean }> {
  const messages = (req.body as { messages: Array<{ content: Block[] | string }> }).messages;
  const last = messages.at(-1)!;
  const blocks = typeof last.content === 'string' ? [] : last.content;
  return blocks
    .filter((b) => b.type === 'tool_result')
    .map((b) => ({ content: typeof b.content === 'string' ? b.content : JSON.stringify(b.content), ...(b.is_error ? { is_error: true } : {}) }));
}

test('every bypass spelling is refused before it runs: the victim directory survives, the control runs', async () => {
  h = await Harness.start({ yaml: agentYaml('tools: [execute_command]', 'tier: high-risk', 'approvers: { console: [local] }') });
  h.classifierReply = { text: 'high-risk' };
  const victim = join(h.workspace, 'victim');
  mkdirSync(join(victim, 'sub'), { recursive: true });
  writeFileSync(join(victim, 'sub', 'precious.txt'), 'keep me');
  const control = 'touch control-ran';
  h.script(
    {
      toolUses: [...ATTACKS.map(([, command]) => ({ name: 'execute_command', input: { command } })), { name: 'execute_command', input: { command: control } }],
    },
    { text: 'done' },
  );

  await h.adapter.send('try them all');
  await waitFor('answer', () => h.adapter.answers()[0]);

  expect(existsSync(join(victim, 'sub', 'precious.txt'))).toBe(true);
  expect(existsSync(join(h.workspace, 'x.sh'))).toBe(false);
  expect(existsSync(join(h.workspace, 'control-ran'))).toBe(true);
  const results = toolResults(h.modelRequests()[1]!);
  expect(results).toHaveLength(ATTACKS.length + 1);
  results.slice(0, ATTACKS.length).forEach((r, i) => {
    expect({ class: ATTACKS[i]![0], command: ATTACKS[i]![1], blocked: r.content.startsWith('Blocked by the shell denylist') }).toEqual({
      class: ATTACKS[i]![0],
      command: ATTACKS[i]![1],
      blocked: true,
    });
    expect(r.content).toMatch(/approval cannot override it/);
  });
  expect(results.at(-1)!.content).toMatch(/^exit code: 0/);
});
