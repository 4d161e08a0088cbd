/**
 * Issue 9, section 1: the attacks RUN inside the sandbox (the real execute_command tool, real bwrap),
 * and each test asserts what did not happen outside. The tool is called directly, so the denylist (which
 * lives in the gate) does not stop anything first: the box alone must hold. Where a test could pass for a
 * reason other than the box, a control runs the same attack with `sandbox: none` and shows it works there.
 *
 * Layout: everything lives under /var/tmp (NOT /tmp: the box gets its own empty /tmp, which would hide
 * files for the wrong reason). Canary files are world-writable, so only the box protects them.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { executeCommandTool, type ExecuteCommandOptions } from '../../agent/tools/builtin/execute-command.js';
import { writeFileTool } from '../../agent/tools/builtin/files.js';
import { prepareWorkspace, SANDBOX_UID, type SandboxPolicy } from '../../agent/tools/sandbox/index.js';
import type { ToolContext } from '../../agent/tools/types.js';
import { waitFor } from '../helpers/wait.js';

const CANARY = `gh-canary-${process.pid}-${Date.now()}`;
const isRoot = process.getuid?.() === 0;

let base: string;
let home: string;
let outside: string;
let botDir: string;
let botFiles: string[];
/** A "bot" process holding the canary in its initial environment and in its memory. */
let bot: ChildProcess;

function canaryFile(file: string, text = `${CANARY}\n`): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o777 });
  writeFileSync(file, text, { mode: 0o666 });
  chmodSync(file, 0o666);
}

beforeAll(async () => {
  base = mkdtempSync('/var/tmp/gh-sandbox-');
  chmodSync(base, 0o755);
  home = path.join(base, 'home');
  outside = path.join(base, 'outside');
  botDir = path.join(base, 'bot');
  for (const d of [home, outside, botDir]) {
    mkdirSync(d, { recursive: true });
    chmodSync(d, 0o777);
  }
  canaryFile(path.join(outside, 'keep.txt'));
  canaryFile(path.join(home, 'notes.txt'));
  canaryFile(path.join(home, '.ssh', 'id_ed25519'));
  canaryFile(path.join(home, '.aws', 'credentials'));
  canaryFile(path.join(home, '.netrc'));
  canaryFile(path.join(home, '.config', 'gh', 'hosts.yml'));
  canaryFile(path.join(botDir, '.env'), `ANTHROPIC_API_KEY=${CANARY}\n`);
  canaryFile(path.join(botDir, 'gatehouse.yaml'), `# ${CANARY}\n`);
  canaryFile(path.join(botDir, 'data', 'gatehouse.sqlite'), `SQLite format 3 ${CANARY}`);
  botFiles = [path.join(botDir, 'gatehouse.yaml'), path.join(botDir, '.env'), path.join(botDir, 'data')];
  bot = spawn(process.execPath, ['-e', `globalThis.keep = process.env.GH_SECRET + '!'; setInterval(() => {}, 1000)`], {
    env: { GH_SECRET: CANARY, PATH: process.env.PATH ?? '' },
    stdio: 'ignore',
  });
  await new Promise((r) => setTimeout(r, 200));
});

afterAll(() => {
  bot?.kill('SIGKILL');
  rmSync(base, { recursive: true, force: true });
});

async function newWorkspace(name: string): Promise<string> {
  const ws = path.join(base, name);
  mkdirSync(ws, { recursive: true });
  await prepareWorkspace(ws);
  return ws;
}

function policy(over: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return { mode: 'bubblewrap', network: false, botFiles, homes: [home], ...over };
}

function ctx(workspace: string, signal = new AbortController().signal): ToolContext {
  const state = new Map<string, unknown>();
  return {
    workspace,
    signal,
    conversationKey: 'console:attack',
    agentName: 'attacked',
    envAllowlist: [],
    state: { get: <T>(n: string) => state.get(n) as T | undefined, set: (n, v) => state.set(n, v) },
  };
}

/** Runs `command` through the real tool, with the bot's environment carrying the canary under a plain name. */
async function run(
  workspace: string,
  command: string,
  opts: ExecuteCommandOptions & { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<{ content: string; isError: boolean; stdout: string; stderr: string }> {
  const tool = executeCommandTool({
    sandbox: policy(),
    baseEnv: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, ...opts.baseEnv },
    ...opts,
  });
  const input = { command, ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}) };
  const c = ctx(workspace, opts.signal);
  const proposal = await tool.propose!(input, c);
  const result = await tool.execute(input, c, { proposal });
  const content = String(result.content);
  const stdout = content.slice(content.indexOf('--- stdout ---\n') + 15, content.indexOf('\n--- stderr ---\n'));
  const stderr = content.slice(content.indexOf('--- stderr ---\n') + 15);
  return { content, isError: result.isError === true, stdout, stderr };
}

const NONE: Partial<ExecuteCommandOptions> = { sandbox: { mode: 'none', network: false, botFiles: [] } };

describe('the filesystem', () => {
  test('`rm -rf /` and `rm -rf ~` really run and change nothing outside the workspace', async () => {
    const ws = await newWorkspace('ws-rm');
    writeFileSync(path.join(ws, 'inside.txt'), 'x');
    const r = await run(ws, 'rm -rf --no-preserve-root / 2>/dev/null; rm -rf ~ ~/.ssh ~/.aws /var/tmp/* 2>&1 | tail -3; echo ran-to-the-end', {
      timeoutMs: 120_000,
    });
    expect(r.stdout).toContain('ran-to-the-end');
    expect(r.stdout).toMatch(/Read-only file system|Permission denied/);
    for (const f of [
      path.join(outside, 'keep.txt'),
      path.join(home, 'notes.txt'),
      path.join(home, '.ssh', 'id_ed25519'),
      path.join(home, '.aws', 'credentials'),
    ]) {
      expect(readFileSync(f, 'utf8')).toBe(`${CANARY}\n`);
    }
    expect(existsSync(path.join(botDir, 'data', 'gatehouse.sqlite'))).toBe(true);
    expect(existsSync('/etc/passwd')).toBe(true);
    // The workspace is the one place it could delete: it did.
    expect(existsSync(path.join(ws, 'inside.txt'))).toBe(false);
  }, 150_000);

  test("writing to /etc fails; the workspace is writable and its files are the bot's to read", async () => {
    const ws = await newWorkspace('ws-write');
    const marker = `/etc/gh-sandbox-${process.pid}`;
    const r = await run(ws, `touch ${marker}; echo made-inside > made.txt; mkdir -p sub/dir && echo deep > sub/dir/f.txt; ls -ln made.txt`);
    expect(r.stderr).toMatch(/Read-only file system/);
    expect(existsSync(marker)).toBe(false);
    expect(readFileSync(path.join(ws, 'made.txt'), 'utf8')).toBe('made-inside\n');
    expect(readFileSync(path.join(ws, 'sub', 'dir', 'f.txt'), 'utf8')).toBe('deep\n');
    if (isRoot) expect(statSync(path.join(ws, 'made.txt')).uid).toBe(SANDBOX_UID);
  });

  test('files the file tools write (new directories included) stay changeable by commands in the box', async () => {
    const ws = await newWorkspace('ws-handover');
    const tool = writeFileTool();
    const input = { path: 'deep/new/file.txt', content: 'from write_file\n' };
    const c = ctx(ws);
    await tool.execute(input, c, { proposal: await tool.propose!(input, c) });
    const r = await run(ws, 'echo from-the-box >> deep/new/file.txt && mkdir deep/new/more && touch deep/more.txt && echo ok');
    expect(r.stdout).toBe('ok\n');
    expect(readFileSync(path.join(ws, 'deep', 'new', 'file.txt'), 'utf8')).toBe('from write_file\nfrom-the-box\n');
  });

  test('/tmp is private: a file written there does not appear in the host /tmp, nor in the next box', async () => {
    const ws = await newWorkspace('ws-tmp');
    const name = `gh-private-${process.pid}-${Date.now()}`;
    const first = await run(ws, `echo secret > /tmp/${name} && cat /tmp/${name}`);
    expect(first.stdout).toBe('secret\n');
    expect(existsSync(`/tmp/${name}`)).toBe(false);
    const second = await run(ws, `cat /tmp/${name} 2>&1 || echo gone`);
    expect(second.stdout).toMatch(/gone/);
  });

  test("the bot's .env, config and store and the credential dotfiles read as nothing", async () => {
    const ws = await newWorkspace('ws-secrets');
    const files = [
      path.join(botDir, '.env'),
      path.join(botDir, 'gatehouse.yaml'),
      path.join(botDir, 'data', 'gatehouse.sqlite'),
      path.join(home, '.ssh', 'id_ed25519'),
      path.join(home, '.aws', 'credentials'),
      path.join(home, '.netrc'),
      path.join(home, '.config', 'gh', 'hosts.yml'),
    ];
    const attack = `for f in ${files.join(' ')}; do cat "$f"; done; grep -r --exclude=notes.txt ${CANARY} ${botDir} ${home} 2>/dev/null; echo done`;
    const r = await run(ws, attack);
    expect(r.stdout).toContain('done');
    expect(r.content).not.toContain(CANARY);
    // Control: the same command outside the sandbox finds them, so the box is what hid them.
    const control = await run(ws, attack, NONE);
    expect(control.stdout).toContain(CANARY);
    // The home is not in the box at all by default; made readable (sandboxReadPaths), its ordinary files
    // are there and its credential files still read as nothing.
    const absent = await run(ws, `cat ${path.join(home, 'notes.txt')}`);
    expect(absent.stdout).toBe('(empty)');
    expect(absent.stderr).toMatch(/No such file or directory/);
    const readable = await run(ws, `cat ${path.join(home, 'notes.txt')}; ${attack}`, { sandbox: policy({ readPaths: [home, botDir] }) });
    expect(readable.stdout).toContain(`${CANARY}\n`);
    expect(readable.stdout.split(CANARY)).toHaveLength(2);
    // Named through symlinks (bound at the path as written, where the masks' real paths do not
    // appear), the same files still read as nothing: the masks follow the read path.
    const links = path.join(base, 'links');
    mkdirSync(links, { recursive: true });
    if (!existsSync(path.join(links, 'home'))) symlinkSync(home, path.join(links, 'home'));
    if (!existsSync(path.join(links, 'bot'))) symlinkSync(botDir, path.join(links, 'bot'));
    const viaLinks = attack.replaceAll(home, path.join(links, 'home')).replaceAll(botDir, path.join(links, 'bot'));
    const linked = await run(ws, `cat ${path.join(links, 'home', 'notes.txt')}; ${viaLinks}`, {
      sandbox: policy({ readPaths: [path.join(links, 'home'), path.join(links, 'bot')] }),
    });
    expect(linked.stdout).toContain(`${CANARY}\n`); // the ordinary file: the links are bound (control)
    expect(linked.stdout.split(CANARY)).toHaveLength(2);
  });
});

describe('processes', () => {
  test("the bot's /proc/<pid>/environ and memory are out of reach; no visible process holds the canary", async () => {
    const ws = await newWorkspace('ws-proc');
    const pids = [bot.pid!, process.pid, process.ppid];
    const direct = await run(ws, pids.map((p) => `cat /proc/${p}/environ; tr '\\0' '\\n' < /proc/${p}/environ`).join('; ') + '; echo done');
    expect(direct.stdout).toContain('done');
    expect(direct.content).not.toContain(CANARY);
    // Every process the box can see: its environ and its whole readable memory.
    const scan = `
const fs = require('fs');
const needle = Buffer.from(process.argv[2] + process.argv[3]);
let seen = 0, hits = [];
for (const p of fs.readdirSync('/proc').filter((n) => /^\\d+$/.test(n))) {
  if (p === String(process.pid)) continue;
  seen++;
  try { if (fs.readFileSync('/proc/' + p + '/environ').includes(needle)) hits.push('environ ' + p); } catch {}
  try {
    const fd = fs.openSync('/proc/' + p + '/mem', 'r');
    for (const line of fs.readFileSync('/proc/' + p + '/maps', 'utf8').split('\\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) r/.exec(line);
      if (!m) continue;
      const start = parseInt(m[1], 16), len = Math.min(parseInt(m[2], 16) - start, 64 << 20);
      const buf = Buffer.alloc(len);
      try { fs.readSync(fd, buf, 0, len, start); if (buf.includes(needle)) hits.push('mem ' + p); } catch {}
    }
  } catch {}
}
console.log('processes seen: ' + seen + '; hits: ' + JSON.stringify(hits));
`;
    writeFileSync(path.join(ws, 'scan.cjs'), scan);
    // The needle goes in two halves, joined by the scanner (skipped itself): no process the command
    // starts holds it whole, so a hit can only be a process that had the canary before.
    const halves = [CANARY.slice(0, CANARY.length >> 1), CANARY.slice(CANARY.length >> 1)];
    const cmd = `node scan.cjs '${halves[0]}' '${halves[1]}'`;
    const r = await run(ws, cmd);
    expect(r.stdout).toMatch(/processes seen: \d+; hits: \[\]/);
    // Control: the same scan, run by this test's own user outside any box, finds the bot's canary
    // in its environ. (An unboxed command would not do: a root bot runs commands as another user,
    // which cannot read the bot's /proc entries, and it found the canary only by chance.)
    const control = execFileSync(process.execPath, ['scan.cjs', ...halves], { cwd: ws, encoding: 'utf8' });
    expect(control).toContain(`environ ${bot.pid}`);
  }, 60_000);

  test('inside, the command is not root, even when the bot is', async () => {
    const ws = await newWorkspace('ws-id');
    const r = await run(ws, 'id -u; ps -e -o pid= 2>/dev/null | wc -l');
    const [uid] = r.stdout.trim().split('\n');
    expect(Number(uid)).not.toBe(0);
    if (isRoot) expect(Number(uid)).toBe(SANDBOX_UID);
  });

  test('an infinite loop ends at the timeout: the bot is unharmed and nothing is left behind', async () => {
    const ws = await newWorkspace('ws-loop');
    const marker = `gh-loop-${process.pid}`;
    const r = await run(ws, `: ${marker}; (while :; do :; done) & while :; do :; done`, { timeoutMs: 500, killGraceMs: 200 });
    expect(r.isError).toBe(true);
    expect(r.content).toMatch(/^killed: it ran longer than its timeout of 500 ms/);
    const left = readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .filter((n) => {
        try {
          const state = readFileSync(`/proc/${n}/stat`, 'utf8').split(') ')[1]?.[0];
          return state !== 'Z' && readFileSync(`/proc/${n}/cmdline`, 'utf8').includes(marker);
        } catch {
          return false;
        }
      });
    expect(left).toEqual([]);
    const after = await run(ws, 'echo still-here');
    expect(after.stdout).toBe('still-here\n');
  });

  test('when the bot itself dies (SIGKILL), its running box dies with it', async () => {
    const ws = await newWorkspace('ws-orphan');
    const sleep = `3600.${process.pid}7`;
    const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
    const script = path.join(base, 'bot-that-dies.mjs');
    writeFileSync(
      script,
      `import { executeCommandTool } from ${JSON.stringify(path.join(root, 'agent/tools/builtin/execute-command.js'))};
const tool = executeCommandTool({ baseEnv: { PATH: '/usr/bin:/bin' } });
const ctx = { workspace: ${JSON.stringify(ws)}, signal: new AbortController().signal, conversationKey: 'c', agentName: 'a', envAllowlist: [], state: { get() {}, set() {} } };
const input = { command: 'sleep ${sleep}' };
await tool.execute(input, ctx, { proposal: await tool.propose(input, ctx) });`,
    );
    const child = spawn(process.execPath, ['--import', path.join(root, 'test', 'helpers', 'register-ts.mjs'), script], { stdio: 'ignore' });
    const sleeping = (): string[] =>
      readdirSync('/proc').filter((n) => {
        try {
          const state = readFileSync(`/proc/${n}/stat`, 'utf8').split(') ')[1]?.[0];
          return /^\d+$/.test(n) && state !== 'Z' && readFileSync(`/proc/${n}/cmdline`, 'utf8') === `sleep\0${sleep}\0`;
        } catch {
          return false;
        }
      });
    await waitFor('the boxed sleep to run', () => sleeping().length > 0, { intervalMs: 20 });
    expect(sleeping()).toHaveLength(1);
    child.kill('SIGKILL');
    await waitFor('the boxed sleep to be gone', () => sleeping().length === 0, { intervalMs: 20 }).catch(() => undefined);
    expect(sleeping()).toEqual([]);
  }, 30_000);

  test('a bounded fork loop hits the process limit', async () => {
    const ws = await newWorkspace('ws-fork');
    const r = await run(ws, 'i=0; while [ $i -lt 300 ]; do sleep 30 & i=$((i+1)); done; echo "started loop"', {
      sandbox: policy({ limits: { processes: 40, openFiles: 256 } }),
    });
    expect(r.stderr).toMatch(/Cannot fork|Resource temporarily unavailable/);
    // And the open-file limit is in place.
    const files = await run(ws, 'ulimit -n', { sandbox: policy({ limits: { processes: 40, openFiles: 256 } }) });
    expect(files.stdout).toBe('256\n');
  });
});

describe('the network', () => {
  let server: Server;
  let port: number;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits++;
      res.end('hello-from-host');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const fetchCmd = (p: number) =>
    `node -e "fetch('http://127.0.0.1:${p}/').then(r => r.text()).then(t => console.log('got ' + t), e => { console.log('failed ' + (e.cause?.code ?? e.message)); })"`;

  test('off by default: a call to a server on 127.0.0.1 fails and never arrives', async () => {
    const ws = await newWorkspace('ws-net-off');
    const before = hits;
    const r = await run(ws, fetchCmd(port));
    expect(r.stdout).toMatch(/^failed /);
    expect(hits).toBe(before);
  });

  test('sandboxNetwork: true lets the same call through', async () => {
    const ws = await newWorkspace('ws-net-on');
    const before = hits;
    const r = await run(ws, fetchCmd(port), { sandbox: policy({ network: true }) });
    expect(r.stdout).toBe('got hello-from-host\n');
    expect(hits).toBe(before + 1);
  });
});
