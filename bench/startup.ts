/**
 * Benchmark (not a test): what a start costs, this tree against a baseline (by default `main`, built
 * in a temp folder from `git archive`), measured in the same run, rows interleaved so both see the
 * same machine. Per row: module files opened (unique files, from test/helpers/module-recorder.mjs,
 * one recorded run) and the median wall time of unrecorded runs, spawn to exit (or to ready):
 *
 *   --version / --help   `node bin/gatehouse.js --version` (the launcher, as `npx gatehouse` runs it)
 *   run (attached)       `gatehouse run --json hello` through a running `gatehouse serve` (fake model)
 *   bare-socket floor    a tiny Node script that reads the token and sends the same request to the socket
 *   serve (telegram)     `gatehouse serve` with Telegram (the fake Bot API) until its "Gatehouse started"
 *                        line (the bot is polling, /readyz is 200)
 *
 * Targets (issue 21): --version under 150 ms; attached run within 1.3x of the floor; serve ready in
 * under 60% of the baseline's time.
 *
 * Run: npm run bench:startup   (or: npm run build && node dist/bench/startup.js [--runs 10]
 *      [--baseline-ref main | --baseline DIR-with-a-built-tree])
 */
import { fork, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startFakeTelegram } from '../test/fakes/telegram.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const recorder = join(root, 'test', 'helpers', 'module-recorder.mjs');
const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const RUNS = Number(arg('--runs') ?? 10);
const TOKEN = '123456:BENCH-token_abcdefghijklmnopqrstuv';

interface Tree {
  name: string;
  root: string;
}

/** The baseline: a given built tree, or REF exported to a temp folder and built there. */
function baselineTree(temp: string): Tree {
  const given = arg('--baseline');
  if (given) return { name: 'baseline', root: given };
  const ref = arg('--baseline-ref') ?? 'main';
  const dir = join(temp, 'baseline');
  const archive = spawnSync('git', ['-C', root, 'archive', '--format=tar', '--prefix=baseline/', ref], { maxBuffer: 1 << 30 });
  if (archive.status !== 0) throw new Error(`git archive ${ref} failed: ${archive.stderr.toString()}`);
  const untar = spawnSync('tar', ['-x', '-C', temp], { input: archive.stdout });
  if (untar.status !== 0) throw new Error(`tar failed: ${untar.stderr.toString()}`);
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  process.stderr.write(`building ${ref} in ${dir}...\n`);
  const tsc = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.build.json')], {
    stdio: 'inherit',
  });
  if (tsc.status !== 0) throw new Error(`building ${ref} failed`);
  return { name: ref, root: dir };
}

function median(ms: number[]): number {
  const s = [...ms].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Unique module files a run opened, from the recorder's log. */
function countModules(log: string): number {
  if (!existsSync(log)) return 0;
  const files = new Set<string>();
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    if (line.startsWith('esm file://')) files.add(fileURLToPath(line.slice(4)));
    else if (line.startsWith('cjs ')) files.add(line.slice(4));
  }
  return files.size;
}

interface Row {
  label: string;
  /** One run: wall ms; `modules` set when recording to that log file. */
  once(tree: Tree, record?: string): Promise<number>;
}

function spawnOnce(tree: Tree, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; record?: string | undefined }): number {
  const pre = opts.record ? ['--import', recorder] : [];
  const env = opts.record ? { ...opts.env, MODULE_RECORDER_LOG: opts.record } : opts.env;
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [...pre, join(tree.root, 'bin', 'gatehouse.js'), ...args], { cwd: opts.cwd, env, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`gatehouse ${args.join(' ')} (${tree.name}) failed (${r.status}): ${r.stdout} ${r.stderr}`);
  if (r.stderr.includes('Building Gatehouse')) throw new Error(`${tree.name}: the launcher rebuilt during the bench`);
  return ms;
}

const temp = mkdtempSync(join(tmpdir(), 'gh-bench-startup-'));
const children: Array<{ kill(signal?: NodeJS.Signals): boolean }> = [];
try {
  const trees: Tree[] = [baselineTree(temp), { name: 'this tree', root }];
  const modelProc = fork(join(here, 'fake-model-process.js'), [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  children.push(modelProc);
  const modelUrl = await new Promise<string>((r) => modelProc.once('message', (m) => r(String(m))));
  const baseEnv = (dir: string): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH ?? '',
    HOME: dir,
    ANTHROPIC_API_KEY: 'bench',
    ANTHROPIC_BASE_URL: modelUrl,
    GATEHOUSE_HTTP_PORT: '0',
    GATEHOUSE_LOG_LEVEL: 'info',
  });

  // Attached runs: one service per tree, each in its own folder.
  const services = new Map<Tree, { dir: string; env: NodeJS.ProcessEnv }>();
  for (const tree of trees) {
    const dir = mkdtempSync(join(temp, 'svc-'));
    writeFileSync(
      join(dir, 'gatehouse.yaml'),
      `agents:\n  default:\n    model: claude-sonnet-5-5\n    tools: [read_file]\n    workspace: "${join(dir, 'ws')}"\n`,
    );
    const env = { ...baseEnv(dir), GATEHOUSE_LOG_LEVEL: 'warn' };
    const service = spawn(process.execPath, [join(tree.root, 'bin', 'gatehouse.js'), 'serve'], { cwd: dir, env, stdio: 'ignore' });
    children.push(service);
    const deadline = Date.now() + 60_000;
    while (!existsSync(join(dir, 'data', 'gatehouse.sock')) || !existsSync(join(dir, 'data', 'gatehouse.token'))) {
      if (Date.now() > deadline) throw new Error(`${tree.name}: the service did not open its socket`);
      await new Promise((r) => setTimeout(r, 50));
    }
    services.set(tree, { dir, env });
  }
  // The floor: a bare Node process (an ES module, as the CLI is) that sends one request to the socket.
  const floor = join(temp, 'floor.mjs');
  writeFileSync(
    floor,
    `import { readFileSync } from 'node:fs';
import { request } from 'node:http';
const [dir] = process.argv.slice(2);
const token = readFileSync(dir + '/gatehouse.token', 'utf8').trim();
const req = request({ socketPath: dir + '/gatehouse.sock', path: '/run', method: 'POST', headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' } }, (res) => {
  let body = '';
  res.on('data', (c) => (body += c));
  res.on('end', () => { if (!body.includes('"type":"result"')) process.exit(1); process.stdout.write(body.slice(body.lastIndexOf('{"type":"result"'))); });
});
req.end(JSON.stringify({ message: 'hello', interactive: false }));
`,
  );

  const serveTelegram = async (tree: Tree, record?: string): Promise<number> => {
    const fake = await startFakeTelegram({ token: TOKEN });
    const dir = mkdtempSync(join(temp, 'tg-'));
    try {
      const env: NodeJS.ProcessEnv = {
        ...baseEnv(dir),
        TELEGRAM_BOT_TOKEN: TOKEN,
        TELEGRAM_API_ROOT: fake.apiRoot,
        ...(record ? { MODULE_RECORDER_LOG: record } : {}),
      };
      const t0 = performance.now();
      const child = spawn(process.execPath, [...(record ? ['--import', recorder] : []), join(tree.root, 'bin', 'gatehouse.js'), 'serve'], {
        cwd: dir,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let out = '';
      const ms = await new Promise<number>((resolve, reject) => {
        const onData = (d: Buffer) => {
          out += d.toString();
          if (out.includes('Gatehouse started')) resolve(performance.now() - t0);
        };
        child.stdout.on('data', onData);
        child.stderr.on('data', onData);
        child.once('exit', (code) => reject(new Error(`${tree.name}: serve exited (${code}) before it was ready: ${out.slice(-2000)}`)));
      });
      // Counted at ready: what the start itself needed (the recorder appends as modules load).
      const count = record ? countModules(record) : 0;
      if (record) writeFileSync(record + '.count', String(count));
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      return ms;
    } finally {
      await fake.close();
      rmSync(dir, { recursive: true, force: true });
    }
  };

  const rows: Row[] = [
    { label: '--version', once: async (tree, record) => spawnOnce(tree, ['--version'], { cwd: temp, env: baseEnv(temp), record }) },
    { label: '--help', once: async (tree, record) => spawnOnce(tree, ['--help'], { cwd: temp, env: baseEnv(temp), record }) },
    {
      label: 'run (attached)',
      once: async (tree, record) => {
        const s = services.get(tree)!;
        return spawnOnce(tree, ['run', '--json', 'hello'], { cwd: s.dir, env: s.env, record });
      },
    },
    {
      label: 'bare-socket floor',
      once: async (tree) => {
        const s = services.get(tree)!;
        const t0 = performance.now();
        const r = spawnSync(process.execPath, [floor, join(s.dir, 'data')], { encoding: 'utf8' });
        const ms = performance.now() - t0;
        if (r.status !== 0) throw new Error(`the floor script failed: ${r.stderr}`);
        return ms;
      },
    },
    { label: 'serve (telegram) to ready', once: (tree, record) => serveTelegram(tree, record) },
  ];

  const results = new Map<string, { ms: number[]; modules?: number }>();
  for (const row of rows) {
    for (const tree of trees) {
      const key = `${row.label}\u0000${tree.name}`;
      const entry: { ms: number[]; modules?: number } = { ms: [] };
      results.set(key, entry);
      if (row.label !== 'bare-socket floor') {
        const log = join(temp, `modules-${results.size}.log`);
        await row.once(tree, log);
        entry.modules = existsSync(log + '.count') ? Number(readFileSync(log + '.count', 'utf8')) : countModules(log);
      }
      await row.once(tree); // warm the disk cache
    }
    const runs = row.label.startsWith('serve') ? Math.max(3, Math.ceil(RUNS / 2)) : RUNS;
    for (let i = 0; i < runs; i++) for (const tree of trees) results.get(`${row.label}\u0000${tree.name}`)!.ms.push(await row.once(tree));
  }

  const pad = (s: string, n: number) => s.padEnd(n);
  console.log(`gatehouse start-up (median wall ms; modules = unique module files opened), ${RUNS} runs per row (serve: ${Math.max(3, Math.ceil(RUNS / 2))})`);
  console.log(`${pad('', 28)}${trees.map((t) => pad(t.name, 26)).join('')}`);
  for (const row of rows) {
    const cells = trees.map((t) => {
      const r = results.get(`${row.label}\u0000${t.name}`)!;
      return pad(`${median(r.ms).toFixed(1)} ms${r.modules !== undefined ? `  ${r.modules} modules` : ''}`, 26);
    });
    console.log(`${pad(row.label, 28)}${cells.join('')}`);
  }
  const m = (label: string, tree: Tree) => median(results.get(`${label}\u0000${tree.name}`)!.ms);
  const [base, mine] = trees as [Tree, Tree];
  console.log('targets:');
  console.log(
    `  --version under 150 ms:                    ${m('--version', mine).toFixed(1)} ms (bare \`node -e 1\` here: ${median(
      Array.from({ length: RUNS }, () => {
        const t = performance.now();
        spawnSync(process.execPath, ['-e', '1']);
        return performance.now() - t;
      }),
    ).toFixed(1)} ms)`,
  );
  console.log(
    `  attached run within 1.3x of the floor:     ${(m('run (attached)', mine) / m('bare-socket floor', mine)).toFixed(2)}x (baseline ${(m('run (attached)', base) / m('bare-socket floor', base)).toFixed(2)}x)`,
  );
  console.log(
    `  serve ready under 60% of the baseline's:   ${((100 * m('serve (telegram) to ready', mine)) / m('serve (telegram) to ready', base)).toFixed(0)}%`,
  );
} finally {
  for (const c of children) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 300));
  rmSync(temp, { recursive: true, force: true });
}
