/**
 * Command strings inside ordinary tools: options and arguments that a tool hands to a shell (or runs as
 * a program). `embeddedCommands(name, args)` returns, per tool, every such string it can find
 * (`{ where, text }`: the denylist judges `text` as a shell command of its own, so `tar
 * --to-command='rm -rf ~'` is refused as `rm -rf ~` would be) and the constructs it refuses outright
 * because the command they run cannot be known (`{ where, refuse }`: sed's `e`, awk's `system(var)`,
 * `git -c core.hooksPath=dir`, a vim `:!` escape).
 *
 * Each tool family is one entry of `TOOLS`; long options are matched as GNU abbreviations. The
 * extractors live by family: ./embedded-remote.ts (ssh, transfers, archives, containers),
 * ./embedded-git.ts, ./embedded-tools.ts (editors, pagers, make, package managers, debuggers, database
 * shells, command runners), ./awk-sed.ts; this file keeps the table and the environment variables
 * that carry commands or code.
 */
import { awkCommands, sedCommands } from './awk-sed.js';
import { cmd, refuse, type Embedded, type Extractor } from './embedded-kit.js';
import { isGitCodeKey, gitCommands } from './embedded-git.js';
import { dockerCommands, rsyncCommands, scpCommands, sshCommands, tarCommands, zipCommands } from './embedded-remote.js';
import {
  dbShellCommands,
  gdbCommands,
  hyperfineCommands,
  KNOWN_SHELLS,
  lessCommands,
  makeCommands,
  manCommands,
  nixShellCommands,
  nodemonCommands,
  npmCommands,
  npxCommands,
  optionThenString,
  parallelCommands,
  tmuxCommands,
  vimCommands,
} from './embedded-tools.js';

export type { Embedded } from './embedded-kit.js';

/** Per tool: the command strings its arguments carry. */
export const TOOLS: Readonly<Record<string, Extractor>> = {
  awk: awkCommands,
  gawk: awkCommands,
  mawk: awkCommands,
  nawk: awkCommands,
  'busybox-awk': awkCommands,
  sed: sedCommands,
  gsed: sedCommands,
  ssh: sshCommands,
  scp: scpCommands,
  sftp: scpCommands,
  rsync: rsyncCommands,
  tar: tarCommands,
  gtar: tarCommands,
  bsdtar: tarCommands,
  zip: zipCommands,
  git: gitCommands,
  vim: vimCommands,
  vi: vimCommands,
  nvim: vimCommands,
  view: vimCommands,
  vimdiff: vimCommands,
  gvim: vimCommands,
  ex: vimCommands,
  evim: vimCommands,
  less: lessCommands,
  more: lessCommands,
  man: manCommands,
  make: makeCommands,
  gmake: makeCommands,
  npm: npmCommands,
  pnpm: npmCommands,
  yarn: npmCommands,
  bun: npmCommands,
  npx: npxCommands,
  'nix-shell': nixShellCommands,
  gdb: gdbCommands,
  sqlite3: dbShellCommands,
  sqlite: dbShellCommands,
  psql: dbShellCommands,
  mysql: dbShellCommands,
  mariadb: dbShellCommands,
  duckdb: dbShellCommands,
  docker: dockerCommands,
  podman: dockerCommands,
  nerdctl: dockerCommands,
  // programs that run a shell command string given as an option or their arguments
  flock: optionThenString('c', ['command']),
  script: optionThenString('c', ['command']),
  su: optionThenString('c', ['command']),
  runuser: optionThenString('c', ['command']),
  nodemon: nodemonCommands,
  tmux: tmuxCommands,
  parallel: parallelCommands,
  hyperfine: hyperfineCommands,
  entr: (args) => (args.includes('-s') ? [cmd('entr -s', args[args.indexOf('-s') + 1] ?? '')] : []),
  'xvfb-run': () => [],
};

export function embeddedCommands(name: string, args: readonly string[]): Embedded[] {
  const f = TOOLS[name];
  return f ? f(args) : [];
}

// ---- environment variables that carry commands or code

/** Variables whose value a program runs as a shell command (pagers, editors, ssh commands, ...). */
const COMMAND_VARS = new Set([
  'PAGER',
  'MANPAGER',
  'GIT_PAGER',
  'SYSTEMD_PAGER',
  'BAT_PAGER',
  'EDITOR',
  'VISUAL',
  'GIT_EDITOR',
  'SUDO_EDITOR',
  'FCEDIT',
  'GIT_SEQUENCE_EDITOR',
  'GIT_SSH_COMMAND',
  'GIT_SSH',
  'GIT_PROXY_COMMAND',
  'GIT_EXTERNAL_DIFF',
  'GIT_ASKPASS',
  'SSH_ASKPASS',
  'SUDO_ASKPASS',
  'BROWSER',
  'LESSOPEN',
  'LESSCLOSE',
  'RSYNC_RSH',
  'CVS_RSH',
  'RSYNC_CONNECT_PROG',
  'PROMPT_COMMAND',
  'FZF_DEFAULT_COMMAND',
  'TERMINAL',
  'DIFFPROG',
  'MERGE',
]);

/** Variables that make a program load or run other code whatever the value: refused when set. */
const CODE_VARS =
  /^(LD_PRELOAD|LD_AUDIT|DYLD_INSERT_LIBRARIES|BASH_ENV|ENV|PERL5OPT|PERL5DB|RUBYOPT|GCONV_PATH|GIT_EXEC_PATH|GIT_CONFIG_PARAMETERS|GIT_TEMPLATE_DIR|BASH_FUNC_.*|PYTHONSTARTUP|NPM_CONFIG_SCRIPT_SHELL|npm_config_script_shell|SHELLOPTS|BASHOPTS)$/;

/** What an assignment NAME=value carries: a command to judge, a refusal, or nothing. */
export function assignmentEmbedded(name: string, value: string): Embedded[] {
  if (value === '') return [];
  if (CODE_VARS.test(name)) {
    if (/script_shell$/i.test(name) && KNOWN_SHELLS.test(value)) return [];
    return [refuse(`${name}=`, `${name} makes programs load or run other code`)];
  }
  if (name === 'NODE_OPTIONS' && /(^|\s)(-r|--require|--import|--loader|--experimental-loader|-e|--eval|-p|--print)\b/.test(value)) {
    return [refuse('NODE_OPTIONS=', 'NODE_OPTIONS loads other code')];
  }
  if (/^GIT_CONFIG_KEY_\d+$/.test(name) && isGitCodeKey(value)) {
    return [refuse(`${name}=`, `git config ${value} from the environment`)];
  }
  // LESS / MORE hold options, and a +cmd option with ! or | runs a program
  if ((name === 'LESS' || name === 'MORE') && /(^|\s)\+\S*[!|]/.test(value)) return [refuse(`${name}=`, `${name} starts the pager with a shell escape`)];
  if (/^PS[0124]$/.test(name) && /\$\(|`/.test(value)) return [refuse(`${name}=`, `${name} runs a command substitution`)];
  if (COMMAND_VARS.has(name)) return [cmd(`${name}=`, value.replace(/^[|-]+/, '').replace(/%s/g, 'FILE'))];
  return [];
}
