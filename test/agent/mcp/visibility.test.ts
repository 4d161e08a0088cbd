/**
 * agent/mcp/visibility.ts on real files: what a boxed server is shown on its own (single files only,
 * never the bot's), and the hint for a start failure caused by something not visible.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { autoReadPaths, invisibleHint } from '../../../agent/mcp/visibility.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-mcp-view-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const base = { args: [] as string[], searchPath: '/usr/bin:/bin', visible: [] as string[], botFiles: [] as string[] };

test('the command and argv files are shown one file each; folders, flags, missing paths and system files are not', () => {
  const bot = join(dir, 'bot');
  mkdirSync(join(bot, 'lib'), { recursive: true });
  writeFileSync(join(bot, 'server.mjs'), '');
  writeFileSync(join(bot, '.env'), 'SECRET=1');
  writeFileSync(join(bot, 'gatehouse.yaml'), '');
  const got = autoReadPaths({
    ...base,
    command: join(bot, 'server.mjs'),
    args: ['--flag', 'lib', 'missing.txt', '.env', './gatehouse.yaml', '/usr/bin/env', join(bot, 'server.mjs')],
    cwd: bot,
    botFiles: [join(bot, '.env'), join(bot, 'gatehouse.yaml')],
  });
  expect(got).toEqual([join(bot, 'server.mjs')]); // not lib/ (a folder), not the bot's files, not /usr
});

test("a bare command is looked up on the server's PATH; what the box shows already is not bound again", () => {
  mkdirSync(join(dir, 'bin'));
  writeFileSync(join(dir, 'bin', 'tool'), '#!/bin/sh\n', { mode: 0o755 });
  writeFileSync(join(dir, 'arg.json'), '{}');
  expect(autoReadPaths({ ...base, command: 'tool', searchPath: join(dir, 'bin'), cwd: dir, args: ['arg.json'] })).toEqual([
    join(dir, 'bin', 'tool'),
    join(dir, 'arg.json'),
  ]);
  expect(autoReadPaths({ ...base, command: 'tool', searchPath: join(dir, 'bin'), cwd: dir, args: ['arg.json'], visible: [dir] })).toEqual([]);
  expect(autoReadPaths({ ...base, command: 'sh', cwd: dir })).toEqual([]); // in /usr or /bin
});

test("a symlink to the bot's file is not shown; a visible symlink to an invisible file shows the target", () => {
  writeFileSync(join(dir, '.env'), 'SECRET=1');
  symlinkSync(join(dir, '.env'), join(dir, 'innocent.txt'));
  expect(autoReadPaths({ ...base, command: '/usr/bin/node', args: [join(dir, 'innocent.txt')], cwd: dir, botFiles: [join(dir, '.env')] })).toEqual([]);
  mkdirSync(join(dir, 'shown'));
  writeFileSync(join(dir, 'real.mjs'), '');
  symlinkSync(join(dir, 'real.mjs'), join(dir, 'shown', 'link.mjs'));
  expect(autoReadPaths({ ...base, command: '/usr/bin/node', args: [join(dir, 'shown', 'link.mjs')], cwd: dir, visible: [join(dir, 'shown')] })).toEqual([
    join(dir, 'real.mjs'),
  ]);
});

test.each([
  ["Error: Cannot find module '/srv/x/index.js'", '/srv/x/index.js is not visible'],
  ["Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /srv/x/a.mjs", 'the package zod (imported from /srv/x/a.mjs) is not visible'],
  ["Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/srv/x/b.mjs' imported from /srv/x/c.mjs", '/srv/x/b.mjs (imported from /srv/x/c.mjs) is not visible'],
  ["python3: can't open file '/srv/x/main.py': [Errno 2] No such file or directory", '/srv/x/main.py is not visible'],
  ['prlimit: failed to execute /opt/bin/srv: No such file or directory', '/opt/bin/srv is not visible'],
  ["bwrap: Can't chdir to /srv/app: No such file or directory", '/srv/app is not visible'],
  ['sh: 1: /opt/run.sh: not found', '/opt/run.sh is not visible'],
  ["Error: ENOENT: no such file or directory, open '/srv/conf.json'", '/srv/conf.json is not visible'],
  ["bwrap: Can't find source path /root/tools: Permission denied", 'cannot reach /root/tools'],
])('hint for %s', (stderr, says) => {
  const hint = invisibleHint('agents.ops.mcpServers.fx', stderr)!;
  expect(hint).toContain(says);
  expect(hint).toContain('agents.ops.mcpServers.fx.readPaths');
  expect(hint).toContain('agents.ops.mcpServers.fx.sandbox: none');
});

test('no hint for a failure that is not about visibility', () => {
  expect(invisibleHint('agents.ops.mcpServers.fx', 'GITHUB_TOKEN rejected: bad credentials')).toBeUndefined();
});
