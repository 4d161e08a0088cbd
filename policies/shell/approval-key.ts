/**
 * Approval keys (pure string logic over words after quote removal).
 *
 * `approvalKeyOf(words)` = the unwrapped binary (./wrappers.ts) + its first non-flag argument. Known
 * global options that take a value (`git -C dir`, `docker -H host`, `kubectl -n ns`, `npm --prefix dir`)
 * are skipped with their value. The binary is kept as written (`/usr/bin/git` stays `/usr/bin/git`): a
 * key never makes a local `./git` look like the system one.
 */
import { basename, unwrapCommand } from './wrappers.js';

/** Global options that take a value, per binary, skipped when looking for the subcommand. */
const GLOBAL_VALUE_OPTS: Readonly<Record<string, readonly string[]>> = {
  git: ['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--exec-path', '--config-env'],
  docker: ['-H', '--host', '-c', '--context', '--config', '-l', '--log-level'],
  'docker-compose': ['-f', '--file', '-p', '--project-name', '--env-file', '--profile'],
  kubectl: ['-n', '--namespace', '--context', '--kubeconfig', '--cluster', '--user', '-s', '--server'],
  npm: ['--prefix', '-w', '--workspace', '--loglevel'],
  pnpm: ['-C', '--dir', '--filter', '-F', '-w', '--workspace'],
  yarn: ['--cwd'],
  cargo: ['-C', '--manifest-path', '--config', '-Z'],
  make: ['-C', '--directory', '-f', '--file', '-j', '--jobs'],
  go: ['-C'],
  systemctl: ['-H', '--host', '-M', '--machine', '-t', '--type', '-p', '--property'],
  terraform: ['-chdir'],
};

/**
 * binary + first non-flag argument after skipping VAR=value and wrappers (env, nohup, nice, time, npx, ...):
 * `git push --force` -> `git push`, `NODE_ENV=production npm test` -> `npm test`, `ls -la` -> `ls`.
 * Empty string when there is no command at all.
 */
export function approvalKeyOf(words: string[]): string {
  // sudo/doas stay in the key: `sudo apt install` must never look like `apt install`.
  const { words: cmd } = unwrapCommand(words, { keepPrivileged: true });
  const bin = cmd[0];
  if (bin === undefined) return '';
  const valueOpts = GLOBAL_VALUE_OPTS[basename(bin)] ?? [];
  for (let i = 1; i < cmd.length; i++) {
    const w = cmd[i]!;
    if (w === '--') {
      const next = cmd[i + 1];
      return next === undefined ? bin : `${bin} ${next}`;
    }
    if (w.startsWith('-') && w !== '-') {
      if (valueOpts.includes(w)) i++;
      continue;
    }
    return `${bin} ${w}`;
  }
  return bin;
}
