/**
 * Where a shell or interpreter gets its code when no script file is named: a process substitution,
 * its stdin (a heredoc, a pipe from a download or a decoder, another descriptor). Used by the rules for
 * interpreters and `source` (./commands.ts) and for argument slices (./index.ts).
 */
import { basename, unwrapCommand } from '../wrappers.js';
import { MARK, type CommandSite, type ScriptFacts } from '../parse.js';
import { deny, type DenyVerdict } from './rules.js';

const DOWNLOADERS = new Set(['curl', 'wget', 'aria2c', 'fetch', 'http', 'https', 'xh', 'lwp-download', 'lwp-request', 'GET']);
export function isDownload(argv: string[]): boolean {
  const { words } = unwrapCommand(argv, { deep: true });
  return DOWNLOADERS.has(basename(words[0] ?? ''));
}

function isDecoder(argv: string[]): boolean {
  const { words } = unwrapCommand(argv, { deep: true });
  const name = basename(words[0] ?? '');
  const args = words.slice(1);
  const has = (re: RegExp): boolean => args.some((a) => re.test(a));
  switch (name) {
    case 'base64':
    case 'base32':
    case 'basenc':
      return has(/^(-[a-zA-Z]*[dD][a-zA-Z]*|--decode)$/);
    case 'xxd':
      return has(/^-[a-zA-Z]*r/);
    case 'openssl':
    case 'uudecode':
    case 'gunzip':
    case 'zcat':
    case 'bunzip2':
    case 'bzcat':
    case 'unxz':
    case 'xzcat':
    case 'zstdcat':
    case 'rev':
    case 'tr':
    case 'iconv':
      return true;
    case 'gzip':
    case 'bzip2':
    case 'xz':
    case 'zstd':
      return has(/^(-[a-zA-Z]*d|--decompress)$/);
    case 'printf':
      return args.some((a) => a.includes('\\'));
    case 'echo':
      return has(/^-[a-zA-Z]*e/) || args.some((a) => a.includes('\\'));
    default:
      return false;
  }
}

/** echo/printf/cat-of-a-here-text: the content is written in the command itself. */
function isLiteralProducer(site: CommandSite, argv: string[]): boolean {
  const name = basename(unwrapCommand(argv, { deep: true }).words[0] ?? '');
  if (name === 'echo' || name === 'printf') return true;
  return name === 'cat' && argv.length === 1 && site.stdin.kind === 'here';
}

/** Words that mean "the program's stdin" when given as a script path. */
export const STDIN_PATHS = /^(-|\/dev\/stdin|\/dev\/fd\/0|\/proc\/self\/fd\/0)$/;
/** Another open descriptor as a script path: its content is not known here. */
export const FD_PATH = /^(\/dev\/fd\/[1-9]\d*|\/proc\/(self|thread-self|\d+)\/fd\/\d+)$/;

/** `sh <(curl ...)`, `source <(...)`: code from a process substitution. */
export function procSubstCode(arg: string, facts: ScriptFacts): DenyVerdict {
  const ps = facts.procSubsts[arg.charCodeAt(1) - 0xe100];
  if (ps && ps.sites.some((s) => s.argvs.some(isDownload))) return deny('remote-code-exec', 'process substitution of a download');
  return deny('inline-code', 'code from a process substitution');
}

/** An interpreter with no script operand reads its code from stdin: judge where stdin comes from. */
export function stdinCode(site: CommandSite, facts: ScriptFacts, name: string): DenyVerdict | null {
  const stdin = site.stdin;
  if (stdin.kind === 'here') return deny('inline-code', `${stdin.heredoc ? 'heredoc' : 'here-string'} fed to ${name}`);
  if (stdin.kind === 'file') {
    // bash < <(curl ...): the "file" is a process substitution
    const ps = stdin.paths.find((p) => p.startsWith(MARK.PSUB));
    if (ps) return procSubstCode(ps, facts);
    const fd = stdin.paths.find((p) => /^(&|\/dev\/fd\/[1-9]|\/proc\/self\/fd\/[1-9])/.test(p));
    return fd ? deny('pipe-to-interpreter', `${name} reads code from descriptor ${fd.replace(/^&/, '')}`) : null;
  }
  if (stdin.kind !== 'pipe') return null;
  const up = stdin.upstream;
  if (up.some((s) => s.argvs.some(isDownload))) return deny('remote-code-exec', `download piped into ${name}`);
  if (up.some((s) => s.argvs.some(isDecoder))) return deny('decoded-exec', `decoded content piped into ${name}`);
  if (up.length > 0 && up.every((s) => s.argvs.every((a) => isLiteralProducer(s, a)))) return deny('inline-code', `literal code piped into ${name}`);
  return deny('pipe-to-interpreter', `piped into ${name}`);
}
