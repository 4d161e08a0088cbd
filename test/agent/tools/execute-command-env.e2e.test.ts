// Issue 9, section 4: what `env` inside a real execute_command run shows. The command really runs
// (execa, a real shell); the assertions are on what it printed.
import { chmod, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { executeCommandTool } from '../../../agent/tools/builtin/execute-command.js';
import type { ToolContext } from '../../../agent/tools/types.js';

let workspace: string;

beforeAll(async () => {
  workspace = await realpath(await mkdtemp(path.join(tmpdir(), 'gh-exec-env-')));
  await chmod(workspace, 0o711); // the sandbox user (a root bot's commands run as 65534) must enter it
});

afterAll(async () => {
  await rm(workspace, { recursive: true, force: true });
});

function context(envAllowlist: string[]): ToolContext {
  const state = new Map<string, unknown>();
  return {
    workspace,
    signal: new AbortController().signal,
    conversationKey: 'telegram:1',
    agentName: 'test',
    envAllowlist,
    state: { get: <T>(name: string) => state.get(name) as T | undefined, set: (name, value) => state.set(name, value) },
  };
}

async function printedEnv(baseEnv: Record<string, string | undefined>, allowlist: string[]): Promise<string> {
  const tool = executeCommandTool({ baseEnv });
  const ctx = context(allowlist);
  const parsed = tool.input.parse({ command: 'env' });
  const proposal = await tool.propose!(parsed, ctx);
  const result = await tool.execute(parsed, ctx, { proposal });
  if (typeof result.content !== 'string') throw new Error('execute_command returns text');
  return result.content;
}

describe('execute_command: `env` never shows a password, a PAT, a credential URL or GATEHOUSE_*', () => {
  const leaking = {
    PASSWD: 'LEAK-passwd',
    DB_PASSWORD: 'LEAK-dbpassword',
    MYSQL_PWD: 'LEAK-mysqlpwd',
    GITHUB_PAT: 'LEAK-pat',
    GH_PAT: 'LEAK-ghpat',
    OAUTH_CLIENT_SECRET_B: 'LEAK-clientsecret',
    GCP_CREDENTIALS: 'LEAK-credentials',
    SIGNING_PRIVATE_KEY: 'LEAK-privkey',
    COOKIE: 'LEAK-cookie',
    SESSION_TOKEN: 'LEAK-session',
    DATABASE_URL: 'postgres://app:LEAK-dburl@db:5432/app',
    REDIS_URL: 'redis://:LEAK-redis@cache:6379',
    http_proxy: 'http://me:LEAK-proxy@proxy:3128',
    GATEHOUSE_STORE: 'postgres://u:LEAK-store@h/db',
    GATEHOUSE_CONFIG: '/etc/LEAK-config.yaml',
    ANTHROPIC_BASE_URL: 'http://127.0.0.1/LEAK-base',
    TELEGRAM_WEBHOOK_SECRET: 'LEAK-webhook',
  };
  const harmless = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: '/home/gatehouse',
    LANG: 'C.UTF-8',
    TZ: 'UTC',
    NODE_ENV: 'production',
    EDITOR: 'vi',
    HTTPS_PROXY: 'http://proxy.corp:3128',
    REPLICA_URL: 'postgres://reader@db:5432/app',
  };

  it('drops every one of them and keeps the ordinary names with their values', async () => {
    const out = await printedEnv({ ...leaking, ...harmless }, []);
    expect(out).not.toMatch(/LEAK/);
    for (const name of Object.keys(leaking)) expect(out).not.toMatch(new RegExp(`^${name}=`, 'm'));
    for (const [name, value] of Object.entries(harmless)) expect(out).toContain(`${name}=${value}\n`);
  });

  it("an allowlist naming Gatehouse's own variables still shows none of them", async () => {
    const out = await printedEnv({ ...leaking, ...harmless }, [
      'GATEHOUSE_STORE',
      'GATEHOUSE_CONFIG',
      'ANTHROPIC_BASE_URL',
      'TELEGRAM_WEBHOOK_SECRET',
      'GITHUB_PAT',
    ]);
    expect(out).toContain('GITHUB_PAT=LEAK-pat'); // a non-own name the operator chose to pass on
    expect(out.replace('GITHUB_PAT=LEAK-pat', '')).not.toMatch(/LEAK/);
  });
});
