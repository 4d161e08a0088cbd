/**
 * MCP through the real start path: `gatehouse` with no platform token (the terminal chat), a config with
 * a working and a broken MCP server. Start-up neither waits on nor fails because of them; the call is
 * approved by typing the card's number; Ctrl-D stops the bot and no server process is left. The server
 * runs boxed (the default), seeing its folder and node_modules through `readPaths` as an operator
 * would configure it.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { waitFor } from '../helpers/harness.js';
import { FIXTURE, FIXTURE_READ_PATHS, starts } from '../agent/mcp/helpers.js';

let model: FakeAnthropic;
let dir: string;
const queue: FakeReply[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-console-mcp-'));
  chmodSync(dir, 0o711); // the sandbox user (tests running as root) passes through to the server's folder
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
});
afterEach(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

test('terminal chat: start with a broken MCP server, approve an MCP call by number, exit leaves no server process', async () => {
  writeFileSync(
    join(dir, 'gatehouse.yaml'),
    `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file]
    workspace: ./ws
    approvers: { console: [local] }
    mcpServers:
      fx:
        command: ${JSON.stringify(process.execPath)}
        args: [${JSON.stringify(FIXTURE)}]
        env: { FIXTURE_STARTS_FILE: starts, GREETING: "\${MCP_GREETING}", FIXTURE_TAG: ${JSON.stringify(dir)} }
        readPaths: ${JSON.stringify(FIXTURE_READ_PATHS)}
      broken: { command: ${JSON.stringify(join(dir, 'not-installed'))} }
`,
  );
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  let screen = '';
  stdout.on('data', (d: Buffer) => (screen += d.toString()));
  const exit = runCli([], {
    env: { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: model.url, GATEHOUSE_STORE: `sqlite://${join(dir, 'store.sqlite')}`, MCP_GREETING: 'hi' },
    cwd: dir,
    stdin,
    stdout,
    stderr: stdout,
  });
  await waitFor('banner', () => screen.includes('Gatehouse terminal chat'));
  // Relative: in the server's own folder (its working directory), the one place the box may write.
  const startsFile = join(dir, 'mcp', 'default', 'fx', 'starts');
  expect(starts(startsFile)).toEqual([]);

  queue.push({ toolUses: [{ name: 'mcp_fx_echo', input: { text: 'from the terminal' } }] }, { text: 'The server echoed it.' });
  stdin.write('echo via mcp\n');
  await waitFor('card', () => screen.includes('[1] Approve once'));
  expect(screen).toContain('Approve mcp_fx_echo?');
  expect(screen).toContain('MCP server "fx", tool "echo"');
  expect(screen).toContain('"text": "from the terminal"');
  stdin.write('1\n');
  await waitFor('answer', () => screen.includes('The server echoed it.'));
  expect(JSON.stringify(model.requests[1]!.body)).toContain('{\\"text\\":\\"from the terminal\\"}');

  // Started once (its pid is the box's own); on the host, its box's processes run the fixture.
  expect(starts(startsFile)).toHaveLength(1);
  expect(fixtureProcesses().length).toBeGreaterThan(0);
  stdin.end();
  expect(await exit).toBe(0);
  expect(fixtureProcesses()).toEqual([]);
});

/** Host pids running the fixture for THIS test (tagged by its folder: other suites run the same fixture at once). */
function fixtureProcesses(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const environ = readFileSync(`/proc/${name}/environ`, 'utf8');
      if (cmd.includes(FIXTURE) && environ.includes(`FIXTURE_TAG=${dir}\0`) && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z')
        out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
