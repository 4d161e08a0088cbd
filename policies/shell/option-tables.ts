/**
 * The tables ./option-risk.ts reads: per program (PROGRAM_OPTIONS, one documented table each), per
 * wrapper (WRAPPER_OPTIONS) and for every program (GENERIC). Data only, with the shapes that describe
 * it; how a command's words are matched against it is in ./option-risk.ts.
 */
import { basename } from './wrappers.js';

export type RiskKind = 'runs other code' | 'writes files' | 'changes its directory or configuration';

export const CODE: RiskKind = 'runs other code';
export const WRITES: RiskKind = 'writes files';
const CONFIG: RiskKind = 'changes its directory or configuration';

export interface OptionTable {
  /** long options without the dashes */
  long?: Readonly<Record<string, RiskKind>>;
  /** single-letter options */
  short?: Readonly<Record<string, RiskKind>>;
  /** harmless letters that take a value (`make -j4`): a cluster ends at them, the rest is the value */
  shortValue?: string;
}

export interface ProgramRules {
  /** options before the subcommand; when set, the first operand is the subcommand */
  global?: OptionTable;
  /** options valid anywhere (after the subcommand, for programs with one) */
  options?: OptionTable;
  /** extra options per subcommand */
  sub?: Readonly<Record<string, OptionTable>>;
  /** one-dash long options, matched whole (find primaries, Go flags); no clusters, no abbreviation */
  oneDash?: Readonly<Record<string, RiskKind>>;
  /** operands that change what runs: returns the kind, or null */
  operand?(word: string, sub: string | undefined, operands: readonly string[]): RiskKind | null;
  /** words after `--` are handed to a script of the project (npm test -- ...): generic rules still apply */
  forwardsArgs?: boolean;
  /** node: the first operand is the script; the words after it are the script's, not node's */
  scriptAfterOperand?: boolean;
  /** tar: the first word may be a bundle of option letters without a dash (`tar xzf a.tgz`) */
  bundleFirst?: boolean;
}

/** Sections of git settings that name a program or command to run. */
const GIT_CODE_SETTING =
  /^(core|alias|filter|diff|difftool|merge|mergetool|credential|gpg|sequence|pager|interactive|include|includeif|protocol|uploadpack|receivepack|remote|url|ssh|submodule|http|sendemail|web|browser|man|instaweb|help|gc|hook|init|safe)\./i;

const PACKAGE_MANAGER: OptionTable = {
  long: {
    'script-shell': CODE,
    'node-options': CODE,
    'init-module': CODE,
    shell: CODE,
    call: CODE,
    editor: CODE,
    browser: CODE,
    viewer: CODE,
    git: CODE,
    'node-gyp': CODE,
    'onload-script': CODE,
    workspace: CODE,
    workspaces: CODE,
    ws: CODE,
    filter: CODE,
    recursive: CODE,
    'workspace-root': CODE,
    prefix: CONFIG,
    userconfig: CONFIG,
    globalconfig: CONFIG,
    registry: CONFIG,
    cwd: CONFIG,
    dir: CONFIG,
    'use-yarnrc': CONFIG,
    rcfile: CONFIG,
    location: CONFIG,
    global: WRITES,
    cache: WRITES,
    'modules-folder': WRITES,
    'global-folder': WRITES,
    'cache-folder': WRITES,
    'virtual-store-dir': WRITES,
    'store-dir': WRITES,
  },
};

/**
 * The program tables. Sources: git(1) and each git-<subcommand>(1), npm-config(7), pnpm and yarn CLI
 * docs, make(1), find(1), curl(1), wget(1), sort(1), tar(1), rsync(1), ssh(1), scp(1), sftp(1),
 * cargo(1), `go help build`/`go help testflag`, pytest --help, node(1), sed(1), docker(1), kubectl.
 */
const PROGRAM_OPTIONS: Readonly<Record<string, ProgramRules>> = {
  git: {
    global: {
      short: { c: CONFIG, C: CONFIG },
      long: {
        'config-env': CONFIG,
        'git-dir': CONFIG,
        'work-tree': CONFIG,
        'exec-path': CODE,
        namespace: CONFIG,
        'super-prefix': CONFIG,
        'attr-source': CONFIG,
      },
    },
    options: {
      long: {
        'upload-pack': CODE,
        'receive-pack': CODE,
        exec: CODE,
        extcmd: CODE,
        'open-files-in-pager': CODE,
        'output-directory': WRITES,
        config: CONFIG,
        'separate-git-dir': WRITES,
        'env-filter': CODE,
        'tree-filter': CODE,
        'index-filter': CODE,
        'parent-filter': CODE,
        'msg-filter': CODE,
        'commit-filter': CODE,
        'tag-name-filter': CODE,
      },
    },
    sub: {
      // clone/init --template copies hooks, which git then runs.
      clone: { short: { c: CONFIG, u: CODE }, long: { template: CODE } },
      init: { long: { template: CODE } },
      'ls-remote': { short: { u: CODE } },
      fetch: {},
      rebase: { short: { x: CODE } },
      difftool: { short: { x: CODE } },
      grep: { short: { O: CODE } },
      'format-patch': { short: { o: WRITES } },
      // --global/--system write outside the repository (~/.gitconfig, /etc/gitconfig).
      config: { short: { e: CODE, f: CONFIG }, long: { edit: CODE, file: CONFIG, blob: CONFIG, global: WRITES, system: WRITES } },
      submodule: {},
      bisect: {},
    },
    operand(word, sub, operands) {
      // `git submodule foreach CMD`, `git bisect run CMD`: the rest is a command.
      if (sub === 'submodule' && word === 'foreach') return CODE;
      if (sub === 'bisect' && word === 'run') return CODE;
      // `git config core.pager 'sh x'` / `git config set alias.x '!sh'`: writes a setting that runs code.
      if (sub === 'config' && GIT_CODE_SETTING.test(word)) {
        const rest = operands.slice(operands.indexOf(word) + 1);
        const setting = operands[0] === 'set' || operands[0] === 'unset' || rest.length > 0;
        if (setting) return CONFIG;
      }
      return null;
    },
  },
  npm: { options: { ...PACKAGE_MANAGER, short: { c: CODE, C: CONFIG, g: WRITES, w: CODE } }, forwardsArgs: true },
  pnpm: { options: { ...PACKAGE_MANAGER, short: { C: CONFIG, F: CODE, r: CODE, w: CODE, g: WRITES } }, forwardsArgs: true },
  yarn: { options: { ...PACKAGE_MANAGER, short: { g: WRITES } }, forwardsArgs: true },
  bun: {
    options: { ...PACKAGE_MANAGER, short: { r: CODE, e: CODE, g: WRITES }, long: { ...PACKAGE_MANAGER.long, preload: CODE, eval: CODE, print: CODE } },
    forwardsArgs: true,
  },
  make: {
    options: {
      long: { eval: CODE, file: CODE, makefile: CODE, directory: CONFIG, 'include-dir': CODE },
      short: { E: CODE, f: CODE, C: CONFIG, I: CODE },
      shortValue: 'jlWoO',
    },
    // `make test CC='sh x'`: a variable given on the command line overrides the Makefile's, and any
    // variable may be part of a recipe (SHELL, CC, MAKE, or a `$(V)` prefix). All of them count.
    operand: (word) => (/^[A-Za-z_.][A-Za-z0-9_.-]*[:+?!]?=/.test(word) ? CODE : null),
  },
  find: {
    oneDash: {
      exec: CODE,
      execdir: CODE,
      ok: CODE,
      okdir: CODE,
      delete: WRITES,
      fprint: WRITES,
      fprint0: WRITES,
      fprintf: WRITES,
      fls: WRITES,
    },
  },
  curl: {
    options: {
      long: {
        output: WRITES,
        'remote-name': WRITES,
        'remote-name-all': WRITES,
        'output-dir': WRITES,
        'dump-header': WRITES,
        'cookie-jar': WRITES,
        config: CONFIG,
        trace: WRITES,
        'trace-ascii': WRITES,
        stderr: WRITES,
        libcurl: WRITES,
        'etag-save': WRITES,
        hsts: WRITES,
        'alt-svc': WRITES,
        'create-dirs': WRITES,
      },
      short: { o: WRITES, O: WRITES, D: WRITES, c: WRITES, K: CONFIG },
      shortValue: 'dHXuAebrxEFTwyYzUQCtPm',
    },
  },
  wget: {
    options: {
      long: {
        'output-document': WRITES,
        'output-file': WRITES,
        'append-output': WRITES,
        'directory-prefix': WRITES,
        execute: CONFIG,
        config: CONFIG,
        'use-askpass': CODE,
        'save-cookies': WRITES,
        'warc-file': WRITES,
      },
      short: { O: WRITES, o: WRITES, a: WRITES, P: WRITES, e: CONFIG },
      shortValue: 'tTwQUBiDIXAR',
    },
  },
  sort: { options: { long: { output: WRITES, 'temporary-directory': WRITES, 'compress-program': CODE }, short: { o: WRITES, T: WRITES }, shortValue: 'ktS' } },
  tar: {
    options: {
      long: {
        directory: CONFIG,
        'absolute-names': WRITES,
        'to-command': CODE,
        'use-compress-program': CODE,
        'checkpoint-action': CODE,
        'info-script': CODE,
        'new-volume-script': CODE,
        'rsh-command': CODE,
        'rmt-command': CODE,
        'remove-files': WRITES,
        'index-file': WRITES,
      },
      short: { C: CONFIG, P: WRITES, I: CODE, F: CODE },
      shortValue: 'fbgHKLNVXT',
    },
    bundleFirst: true,
  },
  rsync: {
    options: {
      long: { rsh: CODE, 'rsync-path': CODE, 'write-batch': WRITES, 'only-write-batch': WRITES, 'log-file': WRITES, 'remote-option': CODE },
      short: { e: CODE, M: CODE },
      shortValue: 'fTB',
    },
  },
  ssh: { options: { short: { o: CODE, F: CONFIG, E: WRITES }, shortValue: 'BbcDeIiJLlmOpQRSWw' } },
  scp: { options: { short: { o: CODE, F: CONFIG, S: CODE }, shortValue: 'cDiJlPX' } },
  sftp: { options: { short: { o: CODE, F: CONFIG, S: CODE, b: CODE }, shortValue: 'BcDiJlPRsX' } },
  cargo: {
    options: {
      long: { config: CONFIG, 'manifest-path': CONFIG, 'target-dir': WRITES, 'out-dir': WRITES, 'artifact-dir': WRITES },
      short: { C: CONFIG, Z: CONFIG },
      shortValue: 'pjF',
    },
  },
  go: { oneDash: { exec: CODE, toolexec: CODE, o: WRITES, C: CONFIG, modfile: CONFIG, overlay: CONFIG, pkgdir: WRITES, w: CONFIG, u: CONFIG } },
  pytest: {
    options: {
      long: {
        rootdir: CONFIG,
        basetemp: WRITES,
        junitxml: WRITES,
        'junit-xml': WRITES,
        pdbcls: CODE,
        'override-ini': CONFIG,
        'config-file': CONFIG,
        confcutdir: CONFIG,
        'log-file': WRITES,
        'result-log': WRITES,
        debug: WRITES,
      },
      short: { p: CODE, c: CONFIG, o: CONFIG },
      shortValue: 'km',
    },
  },
  node: {
    options: {
      long: {
        require: CODE,
        import: CODE,
        loader: CODE,
        'experimental-loader': CODE,
        eval: CODE,
        print: CODE,
        inspect: CODE,
        'inspect-brk': CODE,
        'env-file': CONFIG,
      },
      short: { r: CODE, e: CODE, p: CODE },
    },
    scriptAfterOperand: true,
  },
  sed: { options: { long: { 'in-place': WRITES }, short: { i: WRITES }, shortValue: 'eflE' } },
  docker: { global: { long: { host: CONFIG, context: CONFIG }, short: { H: CONFIG, c: CONFIG } } },
  kubectl: { options: { long: { kubeconfig: CONFIG, server: CONFIG, context: CONFIG, cluster: CONFIG, user: CONFIG, token: CONFIG }, short: { s: CONFIG } } },
};

/** Other names of the same programs. */
const ALIASES: Readonly<Record<string, string>> = { gmake: 'make', 'py.test': 'pytest', nodejs: 'node' };

export function rulesFor(program: string): ProgramRules | undefined {
  const name = basename(program);
  return PROGRAM_OPTIONS[ALIASES[name] ?? name];
}

/** Options of the wrappers in front of a command (policies/shell/wrappers.ts skips them for keys). */
export const WRAPPER_OPTIONS: Readonly<Record<string, OptionTable>> = {
  env: { long: { chdir: CONFIG }, short: { C: CONFIG }, shortValue: 'uS' },
  time: { long: { output: WRITES }, short: { o: WRITES }, shortValue: 'f' },
  npx: { ...PACKAGE_MANAGER, long: { ...PACKAGE_MANAGER.long, package: CODE }, short: { p: CODE, c: CODE } },
  sudo: { long: { chdir: CONFIG }, short: { D: CONFIG }, shortValue: 'ugChprtUT' },
  doas: { short: { C: CONFIG }, shortValue: 'u' },
};

/** For every program: long option names that run code, write files or change config, by pattern. */
export const GENERIC: ReadonlyArray<[RegExp, RiskKind]> = [
  [/^exec/, CODE],
  [/^eval/, CODE],
  [/^output/, WRITES],
  [/^out-?(file|dir)/, WRITES],
  [/^log-?file/, WRITES],
  [/^config/, CONFIG],
  [/.-command$/, CODE],
  [/.-program$/, CODE],
  [/.-shell$/, CODE],
  [/.-script$/, CODE],
  [/.-cmd$/, CODE],
];
/** Abbreviations of the generic prefixes (`--ex`, `--outp`, `--conf`). */
export const GENERIC_STEMS: ReadonlyArray<[string, RiskKind]> = [
  ['exec', CODE],
  ['eval', CODE],
  ['output', WRITES],
  ['config', CONFIG],
];
