// The floors check (.dependency-cruiser.cjs, run by `npm test` as `npm run check:layers`) must catch
// what it is there for: each rule is shown a small tree that breaks it, and the real tree must pass.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const depcruise = join(repo, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

function cruise(cwd: string): Violation[] {
  const out = execFileSync(
    process.execPath,
    [depcruise, 'bot', 'adapters', 'agent', 'policies', '--config', join(repo, '.dependency-cruiser.cjs'), '--output-type', 'json'],
    {
      cwd,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return (JSON.parse(out) as { summary: { violations: Violation[] } }).summary.violations;
}

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-layers-'));
  symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }));
  for (const folder of ['bot', 'adapters', 'agent', 'policies']) mkdirSync(join(dir, folder), { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function rulesBroken(files: Record<string, string>): string[] {
  const dir = tree(files);
  dirs.push(dir);
  return [...new Set(cruise(dir).map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`))].sort();
}

test('the real tree has no cycle, no upward import and no platform library outside its adapter', () => {
  expect(cruise(repo).map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual([]);
}, 120_000);

test('an import cycle fails the check, type-only imports included', () => {
  const broken = rulesBroken({
    'agent/a.ts': "import type { B } from './b.js';\nexport type A = B | 1;\n",
    'agent/b.ts': "import type { A } from './a.js';\nexport type B = A | 2;\n",
  });
  expect(broken.some((r) => r.startsWith('no-cycles: agent/a.ts'))).toBe(true);
}, 60_000);

test('an import up the floors fails the check', () => {
  const broken = rulesBroken({
    'policies/p.ts': "import { a } from '../agent/a.js';\nexport const p = a;\n",
    'agent/a.ts': "import { b } from '../bot/b.js';\nexport const a = b;\n",
    'adapters/x.ts': "import { b } from '../bot/b.js';\nexport const x = b;\n",
    'bot/b.ts': 'export const b = 1;\n',
  });
  expect(broken).toEqual([
    'adapters-do-not-know-bot: adapters/x.ts -> bot/b.ts',
    'agent-does-not-know-adapters-or-bot: agent/a.ts -> bot/b.ts',
    'policies-is-the-ground-floor: policies/p.ts -> agent/a.ts',
  ]);
}, 60_000);

test('a platform library outside its adapter folder fails the check', () => {
  const broken = rulesBroken({
    'agent/t.ts': "import { Bot } from 'grammy';\nexport const t = Bot;\n",
    'adapters/slack/s.ts': "import { Client } from 'discord.js';\nexport const s = Client;\n",
    'adapters/telegram/ok.ts': "import { Bot } from 'grammy';\nexport const ok = Bot;\n",
  });
  expect(broken.map((r) => r.split(' -> ')[0])).toEqual([
    'discord-library-only-in-its-adapter: adapters/slack/s.ts',
    'telegram-library-only-in-its-adapter: agent/t.ts',
  ]);
}, 60_000);
