/**
 * The sandbox on the real start path: createGatehouse (probe, workspace hand-over) -> router -> runner ->
 * gate -> execute_command, the real Anthropic SDK against the fake model. Commands here are ALLOWLISTED
 * (autoApprovedCommands), the path with no human in it: they must still run in the box.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { SANDBOX_UID } from '../../agent/tools/sandbox/index.js';
import type { RecordedRequest } from '../fakes/anthropic.js';
import { Harness, agentYaml, waitFor } from '../helpers/harness.js';

let h: Harness;
let storeDir: string;
afterEach(async () => {
  await h?.close();
  rmSync(storeDir, { recursive: true, force: true });
});

function toolResults(req: RecordedRequest): string[] {
  const last = (req.body as { messages: Array<{ content: unknown }> }).messages.at(-1)!;
  return (last.content as Array<{ type: string; content?: unknown }>)
    .filter((b) => b.type === 'tool_result')
    .map((b) => (typeof b.content === 'string' ? b.content : JSON.stringify(b.content)));
}

test('allowlisted commands run in the box: the store is unreadable, the user is not root, workspace writes reach the bot', async () => {
  // The store outside /tmp, so the box's private /tmp is not what hides it.
  storeDir = mkdtempSync('/var/tmp/gh-runner-store-');
  chmodSync(storeDir, 0o755);
  mkdirSync(path.join(storeDir, 'data'));
  chmodSync(path.join(storeDir, 'data'), 0o755);
  const store = path.join(storeDir, 'data', 'state.db'); // a name the denylist's store pattern does not know: the box alone must hide it
  h = await Harness.start({
    yaml: agentYaml('tools: [execute_command]', 'tier: read-only', 'autoApprovedCommands: ["cat", "id", "touch"]'),
    env: { GATEHOUSE_STORE: `sqlite://${store}` },
  });
  // The real store is in use and world-readable on the host: only the box keeps it from the command.
  chmodSync(store, 0o644);
  expect(readFileSync(store).subarray(0, 15).toString()).toBe('SQLite format 3');
  h.script(
    {
      toolUses: [
        { name: 'execute_command', input: { command: `cat ${store}` } },
        { name: 'execute_command', input: { command: 'id -u' } },
        { name: 'execute_command', input: { command: 'touch made-by-the-model.txt' } },
      ],
    },
    { text: 'done' },
  );
  await h.adapter.send('go');
  await waitFor('answer', () => h.adapter.answers()[0]);
  expect(h.adapter.cards).toHaveLength(0);
  const [cat, id, touch] = toolResults(h.modelRequests()[1]!);
  expect(cat).not.toContain('SQLite format 3');
  expect(cat).toMatch(/No such file or directory|Permission denied/);
  const uid = Number(/--- stdout ---\n(\d+)/.exec(id!)?.[1]);
  expect(Number.isInteger(uid)).toBe(true);
  if (process.getuid?.() === 0) expect(uid).toBe(SANDBOX_UID);
  else expect(uid).toBe(process.getuid?.());
  expect(touch).toMatch(/^exit code: 0/);
  const made = path.join(h.config.agents['default']!.workspace, 'made-by-the-model.txt');
  expect(statSync(made).isFile()).toBe(true);
}, 30_000);
