/**
 * Issue 18, the box itself: the attacks RUN in real boxes (the real execute_command tool, real bwrap), and
 * each test asserts what did not happen on the host; where the test could pass for another reason, a
 * control runs the same attack with the defence off (or `sandbox: none`) and shows it works there.
 *
 * Layout: under /var/tmp (not /tmp: the box has its own /tmp, which would hide files for the wrong reason).
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { executeCommandTool, type ExecuteCommandOptions } from '../../agent/tools/builtin/execute-command.js';
import { findExecutable, prepareWorkspace, SANDBOX_UID, type SandboxPolicy } from '../../agent/tools/sandbox/index.js';
import type { ToolContext } from '../../agent/tools/types.js';

const CANARY = `gh-canary18-${process.pid}-${Date.now()}`;
const isRoot = process.getuid?.() === 0;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MiB = 1024 * 1024;

let base: string;
let botDir: string;

beforeAll(() => {
  base = mkdtempSync('/var/tmp/gh-sandbox18-');
  chmodSync(base, 0o755);
  botDir = path.join(base, 'bot');
  mkdirSync(botDir, { mode: 0o755 });
  chmodSync(botDir, 0o755);
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

async function newWorkspace(name: string): Promise<string> {
  const ws = path.join(base, name);
  mkdirSync(ws, { recursive: true });
  await prepareWorkspace(ws);
  return ws;
}

function policy(over: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return { mode: 'bubblewrap', network: false, botFiles: [path.join(botDir, 'gatehouse.yaml'), path.join(botDir, '.env')], homes: [], ...over };
}

function ctx(workspace: string): ToolContext {
  const state = new Map<string, unknown>();
  return {
    workspace,
    signal: new AbortController().signal,
    conversationKey: 'console:attack18',
    agentName: 'attacked',
    envAllowlist: [],
    state: { get: <T>(n: string) => state.get(n) as T | undefined, set: (n, v) => state.set(n, v) },
  };
}

async function run(
  workspace: string,
  command: string,
  opts: ExecuteCommandOptions & { timeoutMs?: number } = {},
): Promise<{ content: string; isError: boolean; stdout: string; stderr: string }> {
  const tool = executeCommandTool({ sandbox: policy(), baseEnv: { PATH: '/usr/local/bin:/usr/bin:/bin' }, ...opts });
  const input = { command, ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}) };
  const c = ctx(workspace);
  const result = await tool.execute(input, c, { proposal: await tool.propose!(input, c) });
  const content = String(result.content);
  const stdout = content.slice(content.indexOf('--- stdout ---\n') + 15, content.indexOf('\n--- stderr ---\n'));
  const stderr = content.slice(content.indexOf('--- stderr ---\n') + 15);
  return { content, isError: result.isError === true, stdout, stderr };
}

const NONE: Partial<ExecuteCommandOptions> = { sandbox: { mode: 'none', network: false, botFiles: [] } };
const has = (name: string): boolean => findExecutable(name) !== undefined;

describe('limits: a box that runs out fails alone, the bot carries on', () => {
  test('filling /tmp with 1500 MB (the attack that got the bot OOM-killed) ends in ENOSPC at the default size', async () => {
    const ws = await newWorkspace('ws-tmpfill');
    const neighbour = await newWorkspace('ws-tmpfill-neighbour');
    // Another conversation's command runs at the same time and is unaffected.
    const [r, other0] = await Promise.all([
      run(ws, 'head -c 1500M /dev/zero > /tmp/fill; echo "rc=$?"; du -sm /tmp/fill | cut -f1', { timeoutMs: 120_000 }),
      run(neighbour, 'head -c 100M /dev/zero > /tmp/mine && echo neighbour-ok'),
    ]);
    expect(other0.stdout).toBe('neighbour-ok\n');
    expect(r.stderr).toMatch(/No space left on device/);
    expect(r.stdout).toMatch(/rc=1\n(\d+)\n/);
    expect(Number(/rc=1\n(\d+)/.exec(r.stdout)?.[1])).toBeLessThanOrEqual(512);
    expect(r.content).toMatch(/\ntmp full: /);
    // /dev/shm is bounded too, and the root of the box (where /var's mount points live) takes nothing.
    const other = await run(
      ws,
      'head -c 300M /dev/zero > /dev/shm/fill; echo "shm=$?"; head -c 1M /dev/zero > /var/fill; echo "root=$?"; head -c 1M /dev/zero > /dev/fill; echo "dev=$?"',
    );
    expect(other.stdout).toMatch(/shm=1\nroot=[12]\ndev=[12]\n/);
    expect(other.stderr).toMatch(/No space left on device/);
    // The bot (this process) is fine and the next box works.
    expect((await run(ws, 'echo alive')).stdout).toBe('alive\n');
  }, 150_000);

  test('a memory hog (`head -c 1500M /dev/zero | tail`) fails at the memory limit', async () => {
    const ws = await newWorkspace('ws-hog');
    const r = await run(ws, 'head -c 1500M /dev/zero | tail; echo "rc=$?"', { timeoutMs: 120_000 });
    expect(r.stderr).toMatch(/memory exhausted/);
    expect(r.content).toMatch(/\nmemory limit: /);
    const small = { sandbox: policy({ limits: { memoryBytes: 256 * MiB } }) };
    const node = await run(
      ws,
      `node -e "const a = []; try { for (;;) a.push(Buffer.alloc(32 << 20, 1)); } catch (e) { console.log('failed after ' + a.length * 32 + ' MB') }"`,
      small,
    );
    expect(node.stdout).toMatch(/^failed after \d+ MB/);
    expect(Number(/after (\d+)/.exec(node.stdout)?.[1])).toBeLessThanOrEqual(256);
    if (has('python3')) {
      const py = await run(ws, 'python3 -c "x = bytearray(1500 * 1024 * 1024)"', small);
      expect(py.stderr).toMatch(/MemoryError/);
      expect(py.content).toMatch(/\nmemory limit: /);
    }
    // Memory no rlimit counts (memfd pages, SysV shm) is refused outright; control: without the filter a
    // memfd takes 300 MB past the 256 MB limit.
    const memfd = `python3 -c "import os\ntry:\n  fd = os.memfd_create('x')\n  [os.write(fd, bytes(1 << 20)) for _ in range(300)]\n  print('memfd', os.fstat(fd).st_size >> 20)\nexcept OSError as e: print('refused', e.errno)"`;
    if (has('python3')) {
      expect((await run(ws, memfd, small)).stdout).toBe('refused 38\n');
      expect((await run(ws, memfd, { sandbox: policy({ limits: { memoryBytes: 256 * MiB }, seccomp: false }) })).stdout).toBe('memfd 300\n');
    }
    // Control: the same allocation with the limit far away succeeds, so the limit is what stopped it.
    const roomy = await run(ws, 'head -c 300M /dev/zero | tail -c 1 | wc -c', { sandbox: policy({ limits: { memoryBytes: 4096 * MiB } }) });
    expect(roomy.stdout).toBe('1\n');
  }, 150_000);

  test('a CPU spin is killed by the CPU limit (not by the timeout), and the result says so', async () => {
    const ws = await newWorkspace('ws-spin');
    const r = await run(ws, 'while :; do :; done', { sandbox: policy({ limits: { cpuSeconds: 1 } }), timeoutMs: 120_000 });
    expect(r.content).toMatch(/^exit code: 152\nkilled: CPU limit/);
    expect(r.content).not.toMatch(/timeout/);
  }, 150_000);
});

describe('setuid, setgid and devices', () => {
  const attack = 'cp /bin/sh .x; chmod 4755 .x; echo "chmod=$?"; cp /bin/sh .g; chmod g+s .g; echo "chmodg=$?"';

  test('chmod 4755 in the box: refused, and the file on the host carries no setuid bit (control: both defences off, it does)', async () => {
    const ws = await newWorkspace('ws-suid');
    const r = await run(ws, `${attack}; ls -l .x .g`);
    expect(r.stdout).toMatch(/chmod=1\nchmodg=1\n/);
    expect(r.stderr).toMatch(/Operation not permitted/);
    expect(statSync(path.join(ws, '.x')).mode & 0o6000).toBe(0);
    expect(statSync(path.join(ws, '.g')).mode & 0o6000).toBe(0);
    const off = await newWorkspace('ws-suid-off');
    const control = await run(off, attack, { sandbox: policy({ seccomp: false, stripAfter: false }) });
    expect(control.stdout).toMatch(/chmod=0\nchmodg=0\n/);
    expect(statSync(path.join(off, '.x')).mode & 0o4000).toBe(0o4000);
  });

  test('every way to the bit is covered: open(O_CREAT, 04755), cp -p of a setuid file, fchmod; the strip walk alone also removes it', async () => {
    const ws = await newWorkspace('ws-suid-ways');
    const perl = has('perl');
    const cmd = [
      perl
        ? `perl -e 'sysopen(my $f, "made", 0101, 04755) or print "open: $!\\n"; open(my $g, ">", "f2") or die; chmod(02755, $g) or print "fchmod: $!\\n"'`
        : 'echo no-perl',
      // a setuid file the box can read: the host's su, or a copy made setuid outside
      'cp -p /usr/bin/su ./su-copy 2>&1 | head -1; echo "cp=$?"',
    ].join('; ');
    const r = await run(ws, cmd);
    if (perl) expect(r.stdout).toMatch(/open: Operation not permitted\nfchmod: Operation not permitted/);
    for (const f of ['made', 'f2', 'su-copy']) {
      if (existsSync(path.join(ws, f))) expect(statSync(path.join(ws, f)).mode & 0o6000).toBe(0);
    }
    // The walk on its own (seccomp off): the bit set in the box is gone on the host, and the model is told.
    const walkOnly = await newWorkspace('ws-suid-walk');
    mkdirSync(path.join(walkOnly, 'deep', 'er'), { recursive: true });
    if (isRoot) chmodSync(path.join(walkOnly, 'deep'), 0o777), chmodSync(path.join(walkOnly, 'deep', 'er'), 0o777);
    const w = await run(walkOnly, 'cp /bin/sh deep/er/.x && chmod 4755 deep/er/.x && echo set', { sandbox: policy({ seccomp: false }) });
    expect(w.stdout).toBe('set\n');
    expect(statSync(path.join(walkOnly, 'deep', 'er', '.x')).mode & 0o6000).toBe(0);
    expect(w.content).toMatch(/setuid\/setgid bits removed from deep\/er\/\.x/);
  });

  test('mknod of a device is refused and leaves nothing on the host; a FIFO is still allowed', async () => {
    const ws = await newWorkspace('ws-mknod');
    const r = await run(ws, 'mknod null c 1 3; echo "c=$?"; mknod blk b 7 0; echo "b=$?"; mkfifo fifo; echo "p=$?"');
    expect(r.stdout).toBe('c=1\nb=1\np=0\n');
    expect(existsSync(path.join(ws, 'null'))).toBe(false);
    expect(existsSync(path.join(ws, 'blk'))).toBe(false);
    expect(statSync(path.join(ws, 'fifo')).isFIFO()).toBe(true);
  });

  test('the workspace is not enterable by other local users (0700, owned by the box user / bot user)', async () => {
    const ws = await newWorkspace('ws-mode');
    const st = statSync(ws);
    expect(st.mode & 0o777).toBe(0o700);
    expect(st.uid).toBe(isRoot ? SANDBOX_UID : process.getuid?.());
  });
});

describe('what the box can see: nothing of the host but the system, the workspace and sandboxReadPaths', () => {
  const made: string[] = [];
  let other: string;
  beforeAll(() => {
    other = path.join(base, 'ws-another-agent');
    mkdirSync(other, { recursive: true, mode: 0o755 });
    const put = (f: string): void => {
      try {
        writeFileSync(f, `${CANARY}\n`, { mode: 0o644 });
        chmodSync(f, 0o644);
        made.push(f);
      } catch {
        // not writable here (not root): that directory is not tested
      }
    };
    for (const d of ['/root', '/home', '/srv', '/var', '/opt', '/run']) if (existsSync(d)) put(path.join(d, `.${CANARY}`));
    put(path.join(other, 'secret.txt'));
    for (const f of ['.env.bak', 'gatehouse.yaml.bak', 'gatehouse.log']) put(path.join(botDir, f));
  });
  afterAll(() => {
    for (const f of made) rmSync(f, { force: true });
  });

  test('canaries in /root, /home, /srv, /var, /opt, /run, another workspace and the bot folder are not there', async () => {
    const ws = await newWorkspace('ws-view');
    expect(made.length).toBeGreaterThanOrEqual(4);
    const cmd = made.map((f) => `cat ${f} 2>&1`).join('; ') + '; ls /root /home /srv /opt 2>&1; echo done';
    const r = await run(ws, cmd);
    expect(r.stdout).toContain('done');
    expect(r.content).not.toContain(`${CANARY}\n`);
    expect(r.stdout.match(/No such file or directory/g)?.length ?? 0).toBeGreaterThanOrEqual(made.length);
    // Control: outside the box the same command reads them.
    const control = await run(ws, cmd, NONE);
    expect(control.stdout.split(`${CANARY}\n`).length - 1).toBe(made.length);
    // What commands need is there: the system, /etc's user database, node.
    const sys = await run(ws, 'id -un; ls /usr/bin/env; node -e "console.log(1+1)"; ls /etc | wc -l');
    expect(sys.stdout).toMatch(/^(nobody|\w+)\n\/usr\/bin\/env\n2\n\d+\n$/);
  });

  test('sandboxReadPaths brings one path in, read-only, and nothing next to it', async () => {
    const ws = await newWorkspace('ws-readpaths');
    const r = await run(ws, `cat ${path.join(other, 'secret.txt')}; touch ${path.join(other, 'x')} 2>&1; cat ${path.join(botDir, '.env.bak')} 2>&1`, {
      sandbox: policy({ readPaths: [other] }),
    });
    expect(r.stdout).toMatch(new RegExp(`^${CANARY}\\n.*Read-only file system\\n.*No such file or directory`, 's'));
  });

  test('a unix socket on the host is not reachable with the network off', async () => {
    const ws = await newWorkspace('ws-unix');
    const sock = path.join(base, 'host.sock');
    let connections = 0;
    const server: Server = createServer((c) => {
      connections++;
      c.end('hello');
    });
    await new Promise<void>((r) => server.listen(sock, r));
    chmodSync(sock, 0o777);
    try {
      const cmd = `node -e "require('net').connect('${sock}').on('data', d => console.log('got ' + d)).on('error', e => console.log('failed ' + e.code))"`;
      const r = await run(ws, cmd);
      expect(r.stdout).toMatch(/^failed (ENOENT|ECONNREFUSED|EACCES)/);
      expect(connections).toBe(0);
      const control = await run(ws, cmd, NONE);
      expect(control.stdout).toBe('got hello\n');
      expect(connections).toBe(1);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe('descriptors', () => {
  test('a descriptor the bot inherited (fd 9, fd 251) never reaches the box', async () => {
    const ws = await newWorkspace('ws-fds');
    const script = path.join(base, 'bot-with-fds.mjs');
    writeFileSync(
      script,
      `import { existsSync } from 'node:fs';
import { executeCommandTool } from ${JSON.stringify(path.join(root, 'agent/tools/builtin/execute-command.js'))};
const mode = process.argv[2];
const tool = executeCommandTool({ baseEnv: { PATH: '/usr/bin:/bin' }, ...(mode === 'none' ? { sandbox: { mode: 'none', network: false, botFiles: [] } } : {}) });
const ctx = { workspace: ${JSON.stringify(ws)}, signal: new AbortController().signal, conversationKey: 'c', agentName: 'a', envAllowlist: [], state: { get() {}, set() {} } };
const input = { command: 'ls /proc/self/fd | tr "\\\\n" " "; echo; readlink /proc/self/fd/251 || echo no-251' };
const r = await tool.execute(input, ctx, { proposal: await tool.propose(input, ctx) });
process.stdout.write(JSON.stringify({ parentHas251: existsSync('/proc/self/fd/251'), parentHas9: existsSync('/proc/self/fd/9'), content: r.content }));`,
    );
    const runBot = (mode: string): Promise<{ parentHas251: boolean; parentHas9: boolean; content: string }> => {
      const stdio: Array<'ignore' | 'pipe'> = ['ignore', 'pipe', 'inherit' as 'pipe'];
      for (let i = 3; i <= 251; i++) stdio.push(i === 9 || i === 251 ? 'pipe' : 'ignore');
      const child = spawn(process.execPath, ['--import', path.join(root, 'test', 'helpers', 'register-ts.mjs'), script, mode], { stdio });
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      return new Promise((resolve, reject) =>
        child.once('close', () => {
          try {
            resolve(JSON.parse(out) as { parentHas251: boolean; parentHas9: boolean; content: string });
          } catch (err) {
            reject(new Error(`bad output: ${out} (${String(err)})`));
          }
        }),
      );
    };
    const boxed = await runBot('bubblewrap');
    expect(boxed.parentHas251 && boxed.parentHas9).toBe(true);
    const listed = /--- stdout ---\n(.*)\n/.exec(boxed.content)?.[1]?.trim().split(/\s+/).map(Number);
    expect(listed).toBeDefined();
    expect(listed!.filter((fd) => fd > 2 && fd !== 3)).toEqual([]);
    expect(boxed.content).toContain('no-251');
    // Control: a command started without the box sees both.
    const control = await runBot('none');
    expect(control.content).toMatch(/--- stdout ---\n.*\b251\b/);
    expect(control.content).not.toContain('no-251');
  }, 60_000);
});
