/**
 * The deploy files (deploy/Dockerfile, deploy/compose.yaml, deploy/compose.replicas.yaml,
 * deploy/gatehouse.service, .dockerignore), checked for what broke them before, and the image's start
 * command run as a real process outside Docker (no Docker daemon here): the CMD with the environment
 * compose gives it, no platform token, no terminal, as the image's user (uid 1000, `node` in the
 * official image) when the test runs as root; and a replica's healthcheck command run against a
 * replica on a real PostgreSQL.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { testPostgresUrl } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { assertParentsOpen } from '../helpers/open-parents.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const register = join(root, 'test', 'helpers', 'register-ts.mjs');
const dockerfile = readFileSync(join(root, 'deploy', 'Dockerfile'), 'utf8');
const compose = parse(readFileSync(join(root, 'deploy', 'compose.yaml'), 'utf8')) as {
  services: {
    gatehouse: { build: unknown; command: string[]; environment: Record<string, string>; volumes: string[]; security_opt: string[]; env_file: string };
  };
  volumes: Record<string, unknown>;
};
const service = compose.services.gatehouse;

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  security_opt?: string[];
  depends_on?: Record<string, { condition?: string }>;
  healthcheck?: { test: string[] | string; interval?: string; start_period?: string };
  stop_grace_period?: string;
  env_file?: string;
}
// Docker Compose resolves `<<: *anchor` merge keys; so does this parse.
const replicasCompose = parse(readFileSync(join(root, 'deploy', 'compose.replicas.yaml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
  volumes: Record<string, unknown>;
};
const replicaNames = Object.keys(replicasCompose.services).filter((n) => replicasCompose.services[n]!.environment?.['GATEHOUSE_STORE'] !== undefined);
const unitPath = join(root, 'deploy', 'gatehouse.service');
const unit = readFileSync(unitPath, 'utf8');

/** The runtime stage: everything after the last FROM. */
const runtimeStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
const jsonInstruction = (name: string): string[] => {
  const m = new RegExp(`^${name} (\\[.*\\])$`, 'm').exec(runtimeStage);
  if (!m) throw new Error(`no ${name} in the Dockerfile's runtime stage`);
  return JSON.parse(m[1]!) as string[];
};

describe('Dockerfile and compose', () => {
  test('the data folder is created and owned by the image user before USER, so a new volume is writable', () => {
    const user = /^USER (\S+)$/m.exec(runtimeStage)?.[1];
    expect(user).toBe('node');
    const mk = /^RUN mkdir -p ([^&\n]+)&& chown (\S+) ([^\n]+)$/m.exec(runtimeStage);
    expect(mk).not.toBeNull();
    expect(mk![1]).toContain('/app/data');
    expect(mk![2]).toBe('node:node');
    expect(mk![3]).toContain('/app/data');
    expect(mk![3]).toContain('/app/workspace');
    expect(runtimeStage.indexOf('chown node:node')).toBeLessThan(runtimeStage.indexOf('USER node'));
    expect(runtimeStage.indexOf('chown node:node')).toBeLessThan(runtimeStage.indexOf('VOLUME'));
  });

  test('the image has what the sandbox needs (bubblewrap, prlimit from util-linux) and tini', () => {
    for (const pkg of ['bubblewrap', 'util-linux', 'tini']) expect(runtimeStage).toMatch(new RegExp(`install -y --no-install-recommends[^\\n]*\\b${pkg}\\b`));
  });

  test('.dockerignore keeps the host node_modules, secrets, state and .git out of the image', () => {
    const ignore = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    for (const entry of ['node_modules', '.env', 'data', '.git', 'workspace', 'dist', 'coverage', '*.sqlite', 'gatehouse.yaml']) {
      expect(ignore).toContain(entry);
    }
  });

  test('the container runs `serve` (never the terminal chat); compose and the image agree', () => {
    expect(jsonInstruction('CMD')).toEqual(['node', 'dist/bot/main.js', 'serve']);
    expect(service.command).toEqual(jsonInstruction('CMD'));
    expect(jsonInstruction('ENTRYPOINT')).toEqual(['/usr/bin/tini', '--']);
  });

  test('compose binds no single config file (a missing one would become a directory); the config is in a mounted folder', () => {
    for (const v of service.volumes) expect(v.split(':')[0]).not.toMatch(/\.ya?ml$/);
    const configPath = service.environment['GATEHOUSE_CONFIG']!;
    const folder = service.volumes.map((v) => v.split(':')).find(([, target]) => target !== undefined && configPath.startsWith(`${target}/`));
    expect(folder).toBeDefined();
    expect(folder![0]).not.toMatch(/\.ya?ml$/);
    // The store and the workspace are named volumes the image pre-creates with the right owner.
    expect(service.volumes).toContain('gatehouse-data:/app/data');
    expect(service.volumes).toContain('gatehouse-workspace:/app/workspace');
    expect(service.environment['GATEHOUSE_STORE']).toBe('sqlite:///app/data/gatehouse.sqlite');
  });

  test("compose lets bubblewrap create user namespaces (Docker's default seccomp/AppArmor profiles block it)", () => {
    expect(service.security_opt).toEqual(expect.arrayContaining(['seccomp=unconfined', 'apparmor=unconfined']));
    expect(JSON.stringify(service)).not.toMatch(/privileged|cap_add|SYS_ADMIN/);
  });
});

describe('compose.replicas.yaml: PostgreSQL and two replicas', () => {
  const pg = replicasCompose.services['postgres']!;
  const replicas = replicaNames.map((n) => replicasCompose.services[n]!);
  const seconds = (d: string | undefined) => Number(/^(\d+)s$/.exec(d ?? '')?.[1] ?? NaN);

  test('PostgreSQL with a volume for its data and a pg_isready healthcheck over TCP; the password from the environment', () => {
    expect(pg.image).toMatch(/^postgres:(1[3-9]|[2-9]\d)/); // PostgreSQL 13 or newer
    expect(pg.volumes?.some((v) => v.endsWith(':/var/lib/postgresql/data'))).toBe(true);
    const test = [pg.healthcheck?.test ?? []].flat().join(' ');
    expect(test).toMatch(/pg_isready/);
    expect(test).toMatch(/-h 127\.0\.0\.1/);
    expect(pg.environment?.['POSTGRES_PASSWORD']).toMatch(/^\$\{POSTGRES_PASSWORD:\?/);
  });

  test('two replicas of the image on the same database, each waiting for a healthy PostgreSQL, each checked on /readyz', () => {
    expect(replicas.length).toBeGreaterThanOrEqual(2);
    const stores = new Set(replicas.map((r) => r.environment!['GATEHOUSE_STORE']));
    expect(stores.size).toBe(1);
    const store = [...stores][0]!;
    expect(store).toMatch(/^postgres:\/\/gatehouse:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432\/gatehouse$/);
    expect(store).toContain(pg.environment!['POSTGRES_DB']!);
    for (const r of replicas) {
      expect(r.command).toEqual(jsonInstruction('CMD'));
      expect(r.build).toEqual(service.build);
      expect(r.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
      expect([r.healthcheck?.test ?? []].flat().join(' ')).toMatch(/http:\/\/127\.0\.0\.1:8080\/readyz/);
      expect(r.environment!['GATEHOUSE_HTTP_PORT']).toBe('8080');
      expect(r.security_opt).toEqual(expect.arrayContaining(['seccomp=unconfined', 'apparmor=unconfined']));
      // Long enough for a drain; compose's default (10 s) is not.
      expect(seconds(r.stop_grace_period)).toBeGreaterThanOrEqual(20);
      expect(r.env_file).toBe(service.env_file);
      for (const v of r.volumes!) expect(v.split(':')[0]).not.toMatch(/\.ya?ml$/);
      expect(r.volumes).toContain('../config:/app/config:ro');
    }
  });

  test('each replica has its own data folder and published port; the workspace volume is shared; every volume is declared', () => {
    const data = replicas.map((r) => r.volumes!.find((v) => v.endsWith(':/app/data')));
    expect(data.every(Boolean)).toBe(true);
    expect(new Set(data).size).toBe(replicas.length);
    const ws = replicas.map((r) => r.volumes!.find((v) => v.endsWith(':/app/workspace')));
    expect(ws.every(Boolean)).toBe(true);
    expect(new Set(ws).size).toBe(1);
    const hostPorts = replicas.flatMap((r) => r.ports ?? []).map((p) => p.split(':').slice(0, -1).join(':'));
    expect(new Set(hostPorts).size).toBe(replicas.length);
    for (const p of hostPorts) expect(p.startsWith('127.0.0.1:')).toBe(true);
    const named = Object.values(replicasCompose.services)
      .flatMap((x) => x.volumes ?? [])
      .map((v) => v.split(':')[0]!)
      .filter((src) => !src.startsWith('.') && !src.startsWith('/'));
    for (const n of named) expect(Object.keys(replicasCompose.volumes)).toContain(n);
  });

  test('the image checks /readyz and drains on SIGTERM', () => {
    expect(runtimeStage).toMatch(/^HEALTHCHECK [^\n]*\\\n\s+CMD \[.*\/readyz/m);
    expect(runtimeStage).toMatch(/^STOPSIGNAL SIGTERM$/m);
  });
});

describe('systemd unit', () => {
  const directives = (key: string): string[] => [...unit.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!);

  test('systemd-analyze verify accepts it', () => {
    // systemd's own tools are on this machine kind (Debian 12); the check needs no running systemd.
    const which = spawnSync('sh', ['-c', 'command -v systemd-analyze'], { encoding: 'utf8' });
    expect(which.status).toBe(0);
    const r = spawnSync('systemd-analyze', ['verify', unitPath], { encoding: 'utf8' });
    const complaints = (r.stdout + r.stderr).split('\n').filter((l) => l.includes('gatehouse.service'));
    expect(complaints).toEqual([]);
    expect(r.status).toBe(0);
  });

  test('the user exists by sysusers.d, the writable paths are created by systemd, /tmp is private and writable', () => {
    const user = directives('User')[0];
    expect(user).toBe('gatehouse');
    const sysusers = readFileSync(join(root, 'deploy', 'gatehouse.sysusers'), 'utf8');
    expect(sysusers).toMatch(/^u gatehouse - /m);
    expect(directives('StateDirectory')).toEqual(['gatehouse']);
    expect(directives('WorkingDirectory')).toEqual(['/var/lib/gatehouse']);
    // Any ReadWritePaths must be created by systemd or optional ("-"), or start fails with 226/NAMESPACE.
    for (const p of directives('ReadWritePaths').flatMap((l) => l.split(/\s+/))) expect(p.startsWith('-')).toBe(true);
    expect(directives('PrivateTmp')).toEqual(['yes']);
    expect(directives('ExecStart')[0]).toMatch(/ serve$/);
    expect(directives('ExecReload')[0]).toMatch(/kill -HUP \$MAINPID/);
  });

  test("no hardening that stops bubblewrap (user namespaces, netlink for the sandbox's loopback)", () => {
    for (const key of ['RestrictNamespaces', 'PrivateUsers', 'SystemCallFilter', 'ProtectHostname', 'MemoryDenyWriteExecute'])
      expect(directives(key)).toEqual([]);
    const families = directives('RestrictAddressFamilies').join(' ');
    if (families !== '') expect(families).toContain('AF_NETLINK');
  });
});

describe("the image's start command as a real process", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gh-deploy-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const asRoot = process.getuid?.() === 0;
  /** The image's user is uid/gid 1000 (`node`); switch to it when the test runs as root. */
  const IMAGE_UID = 1000;

  // In the image the code is readable by `node`; here it is this checkout, which may sit in a folder
  // only root can enter (a clone in `mktemp -d`, mode 0700): globalSetup opens its parents for the
  // run (test/helpers/open-parents.mjs).
  beforeAll(() => assertParentsOpen());

  /** The container's filesystem mapped into `dir`: /app/<x> -> <dir>/app/<x>. */
  function containerEnv(composeEnv: Record<string, string> = service.environment): Record<string, string> {
    const fromImage: Record<string, string> = {};
    const envBlock = /^ENV ((?:.*\\\n)*.*)$/m.exec(runtimeStage)?.[1] ?? '';
    for (const m of envBlock.matchAll(/([A-Z_]+)=(\S+)/g)) fromImage[m[1]!] = m[2]!;
    const env: Record<string, string> = { ...fromImage, ...composeEnv };
    for (const [k, v] of Object.entries(env)) env[k] = v.replaceAll('/app/', `${dir}/app/`).replaceAll('/run/secrets/', `${dir}/run/secrets/`);
    // Docker secrets (compose `secrets:`) are files under /run/secrets: written here with test values.
    for (const [k, v] of Object.entries(env)) {
      if (!k.endsWith('_FILE') || !v.startsWith(`${dir}/run/secrets/`)) continue;
      mkdirSync(dirname(v), { recursive: true });
      writeFileSync(v, `${k === 'ANTHROPIC_API_KEY_FILE' ? 'sk-test' : 'secret-for-the-test'}\n`, { mode: 0o644 });
    }
    // The published port is fixed in compose; here any free port (printed at start) will do.
    env['GATEHOUSE_HTTP_PORT'] = '0';
    env['GATEHOUSE_HTTP_HOST'] = '127.0.0.1';
    return env;
  }

  function prepareImageTree(configYaml: string | undefined): void {
    for (const d of ['app/data', 'app/workspace', 'app/config']) mkdirSync(join(dir, d), { recursive: true });
    if (configYaml !== undefined) writeFileSync(join(dir, 'app', 'config', 'gatehouse.yaml'), configYaml);
    if (asRoot) {
      // As in the image: data and workspace owned by node, the config folder root-owned (mounted :ro).
      for (const d of ['', 'app', 'app/data', 'app/workspace']) chownSync(join(dir, d), IMAGE_UID, IMAGE_UID);
    }
  }

  function start(env: Record<string, string>) {
    const cmd = jsonInstruction('CMD');
    expect(cmd.slice(0, 2)).toEqual(['node', 'dist/bot/main.js']);
    // dist/bot/main.js is bot/main.ts compiled; the test runs the source through the same hooks as
    // the other process tests, with the image's arguments.
    const child = spawn(process.execPath, ['--import', register, join(root, 'bot', 'main.ts'), ...cmd.slice(2)], {
      cwd: join(dir, 'app'),
      env: { PATH: process.env.PATH ?? '', HOME: join(dir, 'app'), ...(env['ANTHROPIC_API_KEY_FILE'] ? {} : { ANTHROPIC_API_KEY: 'sk-test' }), ...env },
      // No terminal: stdin is /dev/null, as in a container started without -it.
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(asRoot ? { uid: IMAGE_UID, gid: IMAGE_UID } : {}),
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => setTimeout(() => resolve({ code, signal }), 50)),
    );
    return { child, output: () => output, exited };
  }

  const until = (what: string, check: () => boolean, output: () => string, ms = 60_000) =>
    waitFor(what, check, { timeoutMs: ms, intervalMs: 25, detail: () => `output:\n${output()}` });

  test('no platform token, no terminal: it keeps running, serves /healthz, and exits 0 on SIGTERM', async () => {
    prepareImageTree('agents:\n  ops:\n    model: claude-sonnet-5-5\n    workspace: /app/workspace\n'.replace('/app/', `${dir}/app/`));
    const p = start(containerEnv());
    let exitedEarly = false;
    void p.exited.then(() => (exitedEarly = true));
    await until('the HTTP server', () => /HTTP server on http:\/\/127\.0\.0\.1:\d+/.test(p.output()) || exitedEarly, p.output);
    expect(exitedEarly).toBe(false);
    expect(p.output()).toMatch(/no chat platform is set up \(set TELEGRAM_BOT_TOKEN/);
    const port = /HTTP server on http:\/\/127\.0\.0\.1:(\d+)/.exec(p.output())![1];
    await until('Gatehouse started', () => /Gatehouse started/.test(p.output()), p.output);
    const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ ok: true, mode: 'service', platforms: [] });
    // Still there (end of input on stdin did not stop it), and the store is where compose put it.
    expect(p.child.exitCode).toBeNull();
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect(existsSync(join(dir, 'app', 'data', 'gatehouse.sqlite'))).toBe(true);
    expect(p.output()).not.toMatch(/terminal chat/i);
    p.child.kill('SIGTERM');
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(p.output()).not.toMatch(/FATAL|napi/);
  }, 60_000);

  test('a replica of compose.replicas.yaml on a real PostgreSQL: its healthcheck command passes once it is ready', async () => {
    prepareImageTree('agents:\n  ops:\n    model: claude-sonnet-5-5\n    workspace: /app/workspace\n'.replace('/app/', `${dir}/app/`));
    const replica = replicasCompose.services[replicaNames[0]!]!;
    // The database compose would give it (postgres://...@postgres:5432/gatehouse), on the test server.
    const env = { ...containerEnv(replica.environment), GATEHOUSE_STORE: await testPostgresUrl() };
    const p = start(env);
    try {
      await until('Gatehouse started', () => /Gatehouse started/.test(p.output()) || p.child.exitCode !== null, p.output, 60_000);
      expect(p.child.exitCode).toBeNull();
      const port = /HTTP server on http:\/\/127\.0\.0\.1:(\d+)/.exec(p.output())![1]!;
      // The healthcheck exactly as compose runs it in the container, on this replica's port.
      const [kind, ...argv] = [replica.healthcheck!.test].flat();
      expect(kind).toBe('CMD');
      expect(argv[0]).toBe('node');
      const args = argv.slice(1).map((a) => a.replace('127.0.0.1:8080', `127.0.0.1:${port}`));
      // Started means ready here (the store answered at start); a few tries allow for a slow first answer.
      let status: number | null = null;
      for (let i = 0; i < 5 && status !== 0; i++) {
        status = await new Promise<number | null>((resolve) => spawn(process.execPath, args, { stdio: 'ignore' }).once('exit', resolve));
      }
      const readyz = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
      expect({ status, readyz }).toEqual({ status: 0, readyz: 200 });
      p.child.kill('SIGTERM');
      expect(await p.exited).toEqual({ code: 0, signal: null });
    } finally {
      p.child.kill('SIGKILL');
    }
  }, 90_000);

  test('a missing config file stops the start with a clear error (not an empty directory, not a restart loop of terminal chats)', async () => {
    prepareImageTree(undefined);
    const p = start(containerEnv());
    expect(await p.exited).toEqual({ code: 1, signal: null });
    expect(p.output()).toContain(`GATEHOUSE_CONFIG: file not found: ${dir}/app/config/gatehouse.yaml`);
  }, 30_000);

  test('a workspace the service user cannot create is a config error naming the key', async () => {
    prepareImageTree('agents:\n  ops:\n    model: claude-sonnet-5-5\n');
    // The default workspace is next to the config file: in the image, inside the read-only config mount.
    if (asRoot) chownSync(join(dir, 'app', 'config'), 0, 0);
    else spawnSync('chmod', ['a-w', join(dir, 'app', 'config')]);
    const p = start(containerEnv());
    expect(await p.exited).toEqual({ code: 1, signal: null });
    expect(p.output()).toMatch(/agents\.ops\.workspace: cannot create or open .*config\/workspace \(permission denied\)/);
    spawnSync('chmod', ['u+w', join(dir, 'app', 'config')]);
  }, 30_000);
});
