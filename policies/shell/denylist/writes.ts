/**
 * What a command writes, and the rules on writes: files written through arguments (`writeTargets`:
 * tee, cp, sed -i, dd of=, curl -o ...) and redirections (`judgeRedirect`) are judged by `judgeWrite`
 * (history files, authorized_keys, /proc and /sys, devices, persistence paths); `recordWrites` keeps the
 * known content of what this command wrote, for scripts it then runs. A shell start-up file that only
 * gains plain settings (`echo 'export PATH=$PATH:~/bin' >> ~/.bashrc`) is approvable, not persistence.
 */
import { unwrapCommand, basename } from '../wrappers.js';
import { analyzeScript, displayField, isStatic, type CommandSite, type RedirectSite, type ScriptFacts } from '../parse.js';
import { deny, type DenyVerdict } from './rules.js';
import { operands } from './program-rules.js';
import { assignmentEmbedded } from './embedded.js';
import {
  HARMLESS_DEV,
  HISTORY_FILE,
  PERSISTENCE_PATHS,
  RAW_DEVICE,
  normalizePath,
  normalizePaths,
  pathMatches,
  resolveLinks,
  secretPath,
  type LinkMap,
} from './paths.js';
import { historyAssignment } from './system.js';

/** files written so far in this command: path -> possible contents (null: unknown) */
export type Written = Map<string, (string | null)[]>;

/** Files a command writes through its arguments (not redirections). */
export function writeTargets(name: string, args: string[]): string[] {
  const ops = operands(args);
  switch (name) {
    case 'tee':
      return ops;
    case 'cp':
    case 'mv':
    case 'install':
    case 'ln':
    case 'rsync':
    case 'scp': {
      const t = args.find((a) => a.startsWith('--target-directory='))?.split('=')[1] ?? (args.indexOf('-t') >= 0 ? args[args.indexOf('-t') + 1] : undefined);
      return t !== undefined ? [t] : ops.length >= 2 ? [ops[ops.length - 1]!] : [];
    }
    case 'sed':
    case 'gsed':
    case 'perl': {
      if (!args.some((a) => /^-[a-zA-Z]*i/.test(a) || a.startsWith('--in-place'))) return [];
      // sed's first operand is the script unless -e/-f gave it
      const scriptGiven = name === 'perl' || args.some((a) => /^-[a-zA-Z]*[ef]/.test(a) || /^--(expression|file)/.test(a));
      return scriptGiven ? ops.filter((o, i) => i > 0 || !args.includes('-e') || args[args.indexOf('-e') + 1] !== o) : ops.slice(1);
    }
    case 'dd':
      return args.filter((a) => a.startsWith('of=')).map((a) => a.slice(3));
    case 'curl':
    case 'wget':
      return args.flatMap((a, i) => (a === '-o' || a === '-O' || a === '--output' || a === '--output-document' ? [args[i + 1] ?? ''] : []));
    default:
      return [];
  }
}

/** The user's own shell start-up files: appending plain settings to them is approvable (see `plainSettings`). */
const STARTUP_FILE = /^~\/\.(bashrc|bash_profile|bash_login|profile|zshrc|zprofile|zshenv|kshrc|mkshrc)$/;

/**
 * `appended`: the text appended to the file when it is known (echo/printf/heredoc >> f, tee -a). A
 * start-up file that only gains plain settings (`export PATH=$PATH:~/bin`) is not persistence of code.
 */
export function judgeWrite(target: string, cwds: string[], links: LinkMap, how: string, appended?: string | null): DenyVerdict | null {
  // both the path as named and where an earlier link points (`ln -s x ~/.bashrc` writes the link itself)
  for (const p of cwds.flatMap((cwd) => normalizePaths(target, cwd).flatMap((n) => [n, resolveLinks(n, links)]))) {
    if (HISTORY_FILE.test(p)) return deny('history-tamper', `${how} ${displayField(p)}`);
    if (/(^|\/)authorized_keys2?$/.test(p)) return deny('authorized-keys-write', `${how} ${displayField(p)}`);
    if (p === '/proc/sysrq-trigger' || p.startsWith('/proc/sys/') || p.startsWith('/sys/')) return deny('proc-write', `${how} ${displayField(p)}`);
    if (p.startsWith('/dev/') && !HARMLESS_DEV.test(p)) return deny('device-write', `${how} ${displayField(p)}`);
    const hit = pathMatches(p, [''], new Map(), PERSISTENCE_PATHS, ['~/.bashrc', '~/.profile', '~/.zshrc', '/etc/crontab', '/etc/cron.d/x', '/etc/profile']);
    if (hit && !(STARTUP_FILE.test(p) && typeof appended === 'string' && plainSettings(appended))) return deny('persistence', `${how} ${hit}`);
  }
  return null;
}

const WRITE_OPS = new Set(['>', '>>', '>|', '&>', '&>>', '<>']);

/** What a command writes with known content (echo > f, cat > f <<EOF, printf | tee f, cp a f). */
export function recordWrites(site: CommandSite, ctx: { links: LinkMap; written: Written }): null {
  const cwd = site.cwd[0] ?? '';
  const put = (path: string, content: string | null, append: boolean): void => {
    const p = resolveLinks(normalizePath(path, cwd), ctx.links);
    const before = append ? (ctx.written.get(p) ?? ['']) : [''];
    ctx.written.set(
      p,
      before.map((b) => (b === null || content === null ? null : b + content)),
    );
  };
  for (const argv of site.argvs) {
    const words = unwrapCommand(argv, { deep: true }).words;
    const name = basename(words[0] ?? '');
    const content = producedText(site, words);
    for (const r of site.redirs) {
      if (!WRITE_OPS.has(r.op) || (r.fd !== null && r.fd !== '1')) continue;
      for (const t of r.targets) put(t, content, r.op.endsWith('>>'));
    }
    if (name === 'tee') {
      const up = site.stdin.kind === 'pipe' && site.stdin.upstream.length === 1 ? site.stdin.upstream[0]! : null;
      const text =
        up && up.argvs.length === 1
          ? producedText(up, unwrapCommand(up.argvs[0]!, { deep: true }).words)
          : site.stdin.kind === 'here'
            ? site.stdin.texts.join('\n')
            : null;
      const append = words.some((w) => /^-[a-zA-Z]*a/.test(w) || w === '--append');
      for (const t of operands(words.slice(1))) put(t, text, append);
    } else if (name !== 'curl' && name !== 'wget') {
      // (a download run later is 'remote-code-exec', judged by chainedRemote)
      for (const t of writeTargets(name, words.slice(1))) {
        const src = operands(words.slice(1))[0];
        const copied = (name === 'cp' || name === 'mv') && src !== undefined ? ctx.written.get(normalizePath(src, cwd)) : undefined;
        put(t, copied && copied.length === 1 ? copied[0]! : null, false);
      }
    }
  }
  return null;
}

/**
 * Text that only sets variables (`export PATH=$PATH:~/bin`, `EDITOR=vim`): no command, substitution or
 * redirection, and no variable that programs run or load code from (PROMPT_COMMAND, LD_PRELOAD, ...).
 */
function plainSettings(text: string): boolean {
  const res = analyzeScript(text);
  if (!res.ok) return false;
  const f = res.facts;
  if (f.sites.length > 0 || f.redirects.length > 0 || f.hasSubstitution || f.unsupported || f.tooComplex) return false;
  return f.envAssigns.every((w) => {
    const [name, value] = [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)];
    if (historyAssignment(name, value) !== null || !isStatic(name)) return false;
    const carried = assignmentEmbedded(name, value);
    // EDITOR=vim names a program the user starts; PROMPT_COMMAND and code-loading variables run by themselves
    return carried.length === 0 || (name !== 'PROMPT_COMMAND' && carried.every((e) => 'text' in e && /^[\w./~-]+$/.test(e.text)));
  });
}

/** What `>> file` redirections of echo/printf/heredoc commands append, per redirection. */
export function appendedTexts(facts: ScriptFacts): Map<RedirectSite, string | null> {
  const out = new Map<RedirectSite, string | null>();
  for (const site of facts.sites) {
    const text = site.argvs.length === 1 ? producedText(site, unwrapCommand(site.argvs[0]!, { deep: true }).words) : null;
    for (const r of site.redirs) if (r.op === '>>' && (r.fd === null || r.fd === '1')) out.set(r, text);
  }
  return out;
}

/** What tee reads: the text of a single echo/printf upstream, or a here-text. */
export function teeInput(site: CommandSite): string | null {
  const up = site.stdin.kind === 'pipe' && site.stdin.upstream.length === 1 ? site.stdin.upstream[0]! : null;
  if (up) return up.argvs.length === 1 ? producedText(up, unwrapCommand(up.argvs[0]!, { deep: true }).words) : null;
  return site.stdin.kind === 'here' ? site.stdin.texts.join('\n') : null;
}

function producedText(site: CommandSite, words: string[]): string | null {
  const name = basename(words[0] ?? '');
  if (name === 'echo')
    return `${words
      .slice(1)
      .filter((w) => !/^-[neE]+$/.test(w))
      .join(' ')}\n`;
  if (name === 'printf') return words.slice(1).join(' ').replace(/\\n/g, '\n').replace(/\\t/g, '\t');
  if (name === 'cat' && words.length === 1 && site.stdin.kind === 'here') return site.stdin.texts.length === 1 ? site.stdin.texts[0]! : null;
  return null;
}

export function judgeRedirect(r: RedirectSite, links: LinkMap, appended: string | null | undefined): DenyVerdict | null {
  for (const t of r.targets) {
    if (/^\/dev\/(tcp|udp)\//.test(t)) return deny('reverse-shell', `redirection to ${t}`);
    const writes = WRITE_OPS.has(r.op) || r.op === '>&';
    if (/^\d+$|^-$/.test(t) && (r.op === '>&' || r.op === '<&')) continue;
    if (writes) {
      const v = judgeWrite(t, r.cwd, links, r.op, appended);
      if (v) return v;
    }
    if (r.op !== '<<' && r.op !== '<<-' && r.op !== '<<<') {
      const secret = secretPath(t, r.cwd, links);
      if (secret) return deny('secret-file', `redirection ${r.op} ${secret}`);
      for (const cwd of r.cwd) {
        const p = resolveLinks(normalizePath(t, cwd), links);
        if (RAW_DEVICE.test(p)) return deny(writes ? 'device-write' : 'raw-device', `${r.op} ${displayField(p)}`);
      }
    }
  }
  return null;
}
