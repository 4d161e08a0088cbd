/**
 * The sandbox's pieces on their own: the bwrap command line (mount order, namespaces, env off the
 * command line), which paths get masked, and the refusal of a workspace the sandbox user cannot reach.
 * What the box actually stops is shown by running attacks in test/agent/sandbox.e2e.test.ts.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bwrapArgs } from '../../../agent/tools/sandbox/bwrap.js';
import { boxCommand, hiddenPaths, SandboxUnavailableError, untraversableAncestor } from '../../../agent/tools/sandbox/index.js';

let base: string;
beforeAll(() => {
  base = mkdtempSync('/var/tmp/gh-sandbox-unit-');
  chmodSync(base, 0o755);
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const spec = {
  workspace: '/srv/ws',
  cwd: '/srv/ws/sub',
  network: false,
  env: { PATH: '/usr/bin', GITHUB_TOKEN: 'ghp_secretvalue' },
  limits: { processes: 50, openFiles: 100, memoryBytes: 1 << 30, cpuSeconds: 60, tmpBytes: 1 << 28 },
  system: [
    { kind: 'ro-bind' as const, path: '/usr' },
    { kind: 'symlink' as const, path: '/bin', target: 'usr/bin' },
  ],
  readPaths: ['/home/bot'],
  prlimit: '/usr/bin/prlimit',
  argv: ['/bin/sh', '-c', 'echo hi'],
};

describe('bwrapArgs', () => {
  test('namespaces, read-only root, private /tmp, the workspace bind, env and limits', () => {
    const { options, command } = bwrapArgs({ ...spec, masks: [] });
    for (const flag of [
      '--unshare-user',
      '--disable-userns',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-net',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
    ]) {
      expect(options).toContain(flag);
    }
    const joined = options.join(' ');
    expect(joined).not.toContain('--ro-bind / /');
    expect(joined).toContain(
      '--ro-bind /usr /usr --symlink usr/bin /bin --dev /dev --size 67108864 --tmpfs /dev/shm --remount-ro /dev --proc /proc --size 268435456 --tmpfs /tmp',
    );
    expect(joined).toMatch(/--remount-ro \/ (--seccomp \d+ )?--clearenv/);
    expect(joined).toContain('--bind /srv/ws /srv/ws');
    expect(joined).toContain('--chdir /srv/ws/sub');
    expect(joined).toContain('--setenv GITHUB_TOKEN ghp_secretvalue');
    // The variables' values travel in the options (bwrap reads them from a pipe), never on the command line.
    expect(command.join(' ')).not.toContain('ghp_secretvalue');
    expect(command).toEqual(['--', '/usr/bin/prlimit', '--nproc=50', '--nofile=100', `--data=${1 << 30}`, '--cpu=60:61', '--', '/bin/sh', '-c', 'echo hi']);
  });

  test('network on drops --unshare-net and nothing else', () => {
    const off = bwrapArgs({ ...spec, masks: [] }).options;
    const on = bwrapArgs({ ...spec, network: true, masks: [] }).options;
    expect(on).not.toContain('--unshare-net');
    expect(off.filter((a) => a !== '--unshare-net')).toEqual(on);
  });

  test('masks: a directory around the workspace goes before the bind (then read-only), others after it', () => {
    const { options } = bwrapArgs({
      ...spec,
      masks: [
        { path: '/srv', kind: 'dir' },
        { path: '/home/bot/.ssh', kind: 'dir' },
        { path: '/home/bot/.netrc', kind: 'file' },
        { path: '/srv/ws/.aws', kind: 'dir' },
        { path: '/elsewhere/.netrc', kind: 'file' },
      ],
    });
    const at = (...seq: string[]) => options.findIndex((_, i) => seq.every((s, j) => options[i + j] === s));
    const bind = at('--bind', '/srv/ws', '/srv/ws');
    expect(at('--tmpfs', '/srv')).toBeLessThan(bind);
    expect(at('--remount-ro', '/srv')).toBeGreaterThan(bind);
    expect(at('--tmpfs', '/home/bot/.ssh', '--remount-ro', '/home/bot/.ssh')).toBeGreaterThan(bind);
    expect(at('--ro-bind', '/dev/null', '/home/bot/.netrc')).toBeGreaterThan(bind);
    expect(at('--tmpfs', '/srv/ws/.aws', '--remount-ro', '/srv/ws/.aws')).toBeGreaterThan(bind);
    expect(at('--tmpfs', '/tmp')).toBeLessThan(bind);
    // A mask outside everything bound is not there to hide: dropped.
    expect(at('--ro-bind', '/dev/null', '/elsewhere/.netrc')).toBe(-1);
  });
});

describe('hiddenPaths', () => {
  test('only what exists, by real path, skipping what an outer mask hides and what lives in /tmp', () => {
    const home = path.join(base, 'home');
    mkdirSync(path.join(home, '.ssh'), { recursive: true });
    writeFileSync(path.join(home, '.ssh', 'id_rsa'), 'k');
    writeFileSync(path.join(home, '.pgpass'), 'p');
    mkdirSync(path.join(base, 'real-aws'));
    symlinkSync(path.join(base, 'real-aws'), path.join(home, '.aws'));
    const env = path.join(base, '.env');
    writeFileSync(env, 'X=1');
    const found = hiddenPaths({
      botFiles: [env, path.join(base, 'missing.yaml'), path.join(home, '.ssh', 'id_rsa'), '/tmp'],
      homes: [home],
      workspace: path.join(base, 'ws'),
      runtimeDir: path.join(base, 'no-runtime'),
    }).filter((h) => h.path.startsWith(base));
    expect(found).toEqual(
      [
        { path: env, kind: 'file' },
        { path: path.join(base, 'real-aws'), kind: 'dir' },
        { path: path.join(home, '.pgpass'), kind: 'file' },
        { path: path.join(home, '.ssh'), kind: 'dir' },
      ].sort((a, b) => a.path.localeCompare(b.path)),
    );
  });
});

describe('a workspace the sandbox user cannot reach', () => {
  test('untraversableAncestor names the first directory it cannot enter', () => {
    const locked = path.join(base, 'locked');
    mkdirSync(path.join(locked, 'ws'), { recursive: true });
    chmodSync(locked, 0o700);
    expect(untraversableAncestor(path.join(locked, 'ws'), 65534, 65534)).toBe(locked);
    chmodSync(locked, 0o711);
    expect(untraversableAncestor(path.join(locked, 'ws'), 65534, 65534)).toBeUndefined();
  });

  test('as root, boxCommand refuses it with the fix (as another user, the box runs as that user, who owns it)', () => {
    const locked = path.join(base, 'locked2');
    mkdirSync(path.join(locked, 'ws'), { recursive: true });
    chmodSync(locked, 0o700);
    const ws = path.join(locked, 'ws');
    const attempt = () => boxCommand({ mode: 'bubblewrap', network: false, botFiles: [] }, { workspace: ws, cwd: ws, env: {}, argv: ['true'] });
    if (process.getuid?.() !== 0) {
      expect(attempt().uid).toBeUndefined();
      return;
    }
    expect(attempt).toThrow(SandboxUnavailableError);
    expect(attempt).toThrow(/not reachable by the sandbox user .*chmod o\+x/);
  });
});
