/**
 * A chat platform's setup lives in its descriptor (adapters/<platform>/descriptor.ts `setup`,
 * `reachability`): `gatehouse init` offers a flag for each and writes its .env lines, and `gatehouse
 * doctor` checks each enabled one's API host and names each token when none is set. Adding a platform
 * is its descriptor; these checks fail when one of the two commands names platforms by hand again.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { descriptorOf } from '../../adapters/descriptors.js';
import { PLATFORMS } from '../../adapters/types.js';
import { platformChecks } from '../../bot/cli/doctor-checks.js';
import { runCli } from '../../bot/cli/index.js';
import type { CliIO } from '../../bot/cli/io.js';
import { Writable } from 'node:stream';
import { readEnv } from '../../bot/config/env.js';

const chat = PLATFORMS.filter((p) => descriptorOf(p).parseEnv !== undefined);

function io(cwd: string): CliIO {
  const sink = () => new Writable({ write: (_c, _e, done) => done() });
  return { env: {}, cwd, stdout: sink(), stderr: sink() };
}

test('every platform that reads the environment says how init sets it up and how doctor reaches it', () => {
  expect(chat).toEqual(['telegram', 'slack', 'discord']);
  for (const p of chat) {
    expect(descriptorOf(p).setup?.envLines.length).toBeGreaterThan(0);
    expect(descriptorOf(p).reachability).toBeDefined();
  }
});

test('doctor: each enabled platform is checked at its API host; with none, every token is named', async () => {
  const asked: string[] = [];
  const lookup = async (host: string) => void asked.push(host);
  const all = readEnv(
    {
      ANTHROPIC_API_KEY: 'k',
      TELEGRAM_BOT_TOKEN: '1:abc',
      SLACK_BOT_TOKEN: 'xoxb-1',
      SLACK_APP_TOKEN: 'xapp-1',
      DISCORD_TOKEN: 'MTIzNDU2Nzg5MA.abcdef.abcdefghijklmnop',
    },
    tmpdir(),
  );
  const checks = await platformChecks(all.settings, 1000, lookup);
  expect(checks.map((c) => c.name)).toEqual(['model API', 'telegram', 'slack', 'discord']);
  expect(asked).toEqual(['api.anthropic.com', 'api.telegram.org', 'slack.com', 'discord.com']);
  expect(checks.find((c) => c.name === 'slack')?.detail).toContain('Socket Mode: SLACK_APP_TOKEN');
  const none = await platformChecks(readEnv({ ANTHROPIC_API_KEY: 'k' }, tmpdir()).settings, 1000, lookup);
  expect(none.at(-1)?.detail).toContain('no platform token set (TELEGRAM_BOT_TOKEN, SLACK_BOT_TOKEN, DISCORD_TOKEN)');
});

test('init: a flag per platform, and its .env lines from the descriptor', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gh-init-'));
  expect(await runCli(['init', ...chat.map((p) => `--${p}`)], io(dir))).toBe(0);
  const env = readFileSync(join(dir, '.env'), 'utf8');
  for (const p of chat) for (const line of descriptorOf(p).setup!.envLines) expect(env).toContain(line);
});
