/**
 * Issue 18: the bot's own secrets, planted in its environment under innocent names (and encoded), do
 * not reach a command. The real execute_command tool runs `env` in the real box (bubblewrap); the
 * assertions are on what the box printed. Control: the same box, given the environment the old by-name
 * rule produced, prints every canary, so the value scrub is what keeps them out.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { executeCommandTool } from '../../agent/tools/builtin/execute-command.js';
import { boxCommand, execaOptions, prepareWorkspace, type SandboxPolicy } from '../../agent/tools/sandbox/index.js';
import type { ToolContext } from '../../agent/tools/types.js';
import { isOwnName, isSecretName } from '../../policies/env.js';
import { registerOwnSecret } from '../../policies/secrets.js';

const tag = randomBytes(6).toString('hex');
const MODEL_KEY = `sk-ant-api03-${randomBytes(60).toString('base64url')}AA`;
const TELEGRAM = `7${tag.replace(/\D/g, '1').padEnd(9, '3')}:AA${randomBytes(26).toString('base64url')}`;
const SLACK_SIGNING = randomBytes(16).toString('hex');
const STORE_PW = `St-${randomBytes(10).toString('hex')}`;
const ATTACH = randomBytes(32).toString('hex');
const OWN = [MODEL_KEY, TELEGRAM, SLACK_SIGNING, STORE_PW, ATTACH];

/** The bot's environment: its own variables, and copies of their values under names nobody would hide. */
const botEnv: Record<string, string> = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  LANG: 'C.UTF-8',
  ANTHROPIC_API_KEY: MODEL_KEY,
  TELEGRAM_BOT_TOKEN: TELEGRAM,
  SLACK_SIGNING_SECRET: SLACK_SIGNING,
  GATEHOUSE_STORE: `postgres://gatehouse:${STORE_PW}@db:5432/gatehouse`,
  CANARY_EXTRA: MODEL_KEY,
  BUILD_NOTES: `deploy with ${TELEGRAM} please`,
  CI_BLOB: Buffer.from(`slack=${SLACK_SIGNING}`).toString('base64'),
  MIRROR_DB: `mysql://root@mirror/${encodeURIComponent(STORE_PW).replace(/-/g, '%2D')}`,
  LAST_RUN: ATTACH.toUpperCase(),
  // Allowlisted below: an allowlist entry must not carry one of the bot's own secrets out either.
  DEPLOY_TOKEN: `prefix-${MODEL_KEY}`,
  HARMLESS: `value-${tag}`,
};
const planted = ['CANARY_EXTRA', 'BUILD_NOTES', 'CI_BLOB', 'MIRROR_DB', 'LAST_RUN', 'DEPLOY_TOKEN'];

let base: string;
let ws: string;
let forget: () => void;

beforeAll(async () => {
  base = mkdtempSync('/var/tmp/gh-envsecrets-');
  chmodSync(base, 0o755);
  ws = path.join(base, 'ws');
  mkdirSync(ws);
  await prepareWorkspace(ws);
  forget = registerOwnSecret(ATTACH); // as bot/headless/attach.ts does at start
});

afterAll(() => {
  forget();
  rmSync(base, { recursive: true, force: true });
});

const policy: SandboxPolicy = { mode: 'bubblewrap', network: false, botFiles: [] };

function ctx(envAllowlist: string[]): ToolContext {
  const state = new Map<string, unknown>();
  return {
    workspace: ws,
    signal: new AbortController().signal,
    conversationKey: 'console:env-attack',
    agentName: 'attacked',
    envAllowlist,
    state: { get: <T>(n: string) => state.get(n) as T | undefined, set: (n, v) => state.set(n, v) },
  };
}

/** Everything a leaked value could look like in `env` output. */
function leaks(out: string): string[] {
  const folded = out.toLowerCase();
  return OWN.filter(
    (s) =>
      folded.includes(s.toLowerCase()) ||
      out.includes(Buffer.from(`slack=${s}`).toString('base64')) ||
      folded.includes(encodeURIComponent(s).replace(/-/g, '%2d').toLowerCase()),
  );
}

test("`env` in the box shows none of the bot's secrets, under any name, encoded or allowlisted", async () => {
  const tool = executeCommandTool({ sandbox: policy, baseEnv: botEnv });
  const c = ctx(['DEPLOY_TOKEN', 'CANARY_EXTRA', 'HARMLESS']);
  const input = { command: 'env; echo; cat /proc/1/environ 2>/dev/null | tr "\\0" "\\n"; echo END' };
  const result = await tool.execute(input, c, { proposal: await tool.propose!(input, c) });
  const out = String(result.content);
  expect(out).toContain('END');
  expect(out).toContain(`HARMLESS=value-${tag}`);
  expect(leaks(out)).toEqual([]);
  for (const name of planted) expect(out).not.toMatch(new RegExp(`^${name}=`, 'm'));
});

test('control: the same box, given what the old by-name rule kept, prints every canary', async () => {
  const byName = Object.fromEntries(Object.entries(botEnv).filter(([name]) => !isOwnName(name) && (!isSecretName(name) || name === 'DEPLOY_TOKEN')));
  const boxed = boxCommand(policy, { workspace: await realWs(), cwd: await realWs(), env: byName, argv: ['/bin/sh', '-c', 'env'] });
  const r = await execa(boxed.file, boxed.args, execaOptions(boxed, { stdin: 'ignore' }));
  const out = String(r.stdout);
  expect(r.exitCode).toBe(0);
  expect(leaks(out).sort()).toEqual([...OWN].sort());
});

async function realWs(): Promise<string> {
  const { realpath } = await import('node:fs/promises');
  return realpath(ws);
}
