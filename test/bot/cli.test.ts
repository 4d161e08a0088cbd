/**
 * The `gatehouse` command itself: --version, --help / help, unknown commands (runCli in-process).
 * The bin launcher as a real process (it builds dist/ when needed): test/bot/launcher.e2e.test.ts.
 */
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { runCli } from '../../bot/cli/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string>; scripts: Record<string, string> };

async function cli(args: string[], env: Record<string, string> = {}, cwd = root): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await runCli(args, { env, cwd, stdout, stderr });
  return { code, stdout: out, stderr: err };
}

test('--version prints the package version', async () => {
  for (const flag of ['--version', '-v']) {
    expect(await cli([flag])).toEqual({ code: 0, stdout: `gatehouse ${pkg.version}\n`, stderr: '' });
  }
});

test('--help, -h and help list every command', async () => {
  for (const flag of ['--help', '-h', 'help']) {
    const r = await cli([flag]);
    expect(r.code).toBe(0);
    for (const c of ['[start]', 'serve', 'reload', 'run', 'approvals', 'conversations', 'policy check', '--version'])
      expect(r.stdout).toContain(`gatehouse ${c}`);
  }
});

test('an unknown command exits 2 with the usage', async () => {
  const r = await cli(['strat']);
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(/^Unknown command "strat"\.\nUsage:/);
});

test('npm wiring: the bin is the launcher, start does not build, install builds (prepare)', () => {
  expect(pkg.bin['gatehouse']).toBe('bin/gatehouse.js');
  expect(pkg.scripts['start']).toBe('node bin/gatehouse.js');
  expect(pkg.scripts['prepare']).toMatch(/tsc -p tsconfig\.build\.json/);
  expect(readFileSync(join(root, 'bin', 'gatehouse.js'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
});

test('an invalid Discord token (or an incomplete Slack set) stops the start (exit 1) instead of opening the terminal chat', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'gh-cli-'));
  try {
    writeFileSync(join(cwd, '.env'), 'DISCORD_TOKEN=abc.def.not-real\n');
    const r = await cli([], { ANTHROPIC_API_KEY: 'k' }, cwd);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/DISCORD_TOKEN: doesn't look like a Discord bot token/);
    expect(r.stderr).not.toContain('abc.def.not-real');
    expect(r.stdout).not.toMatch(/terminal chat/i);
    rmSync(join(cwd, '.env'));
    const serve = await cli(['serve'], { ANTHROPIC_API_KEY: 'k', SLACK_BOT_TOKEN: 'xoxb-1-2-not-real' }, cwd);
    expect(serve.code).toBe(1);
    expect(serve.stderr).toMatch(/SLACK_APP_TOKEN: is not set and neither is SLACK_SIGNING_SECRET/);
    expect(serve.stderr).not.toContain('xoxb-1-2-not-real');
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test('operator commands refuse arguments they do not know (exit 2 with their usage)', async () => {
  for (const [args, usage] of [
    [['approvals', '--all'], 'gatehouse approvals [--json]'],
    [['conversations', '--limit', '5', '--verbose'], 'gatehouse conversations [--limit N] [--json]'],
    [['reload', 'now'], 'gatehouse reload'],
  ] as const) {
    const r = await cli([...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`Usage: ${usage}`);
  }
  const limit = await cli(['conversations', '--limit', 'x']);
  expect(limit.code).toBe(2);
});

test('gatehouse policy check --help prints its usage', async () => {
  const r = await cli(['policy', 'check', '--help']);
  expect(r).toMatchObject({ code: 0, stderr: '' });
  expect(r.stdout).toMatch(/^Usage: gatehouse policy check/);
  // After --, -h is the checked command's own option.
  const grep = await cli(['policy', 'check', '--json', '--', 'grep -h foo .']);
  expect(JSON.parse(grep.stdout)).toMatchObject({ command: 'grep -h foo .' });
});
