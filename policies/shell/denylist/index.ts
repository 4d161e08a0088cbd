/**
 * The shell denylist: absolute refusals that no approval overrides.
 *
 * Contract: `findDenial(facts)` judges what `Evaluator` (../parse.ts) found: every simple command with
 * its words expanded (all alternatives), unwrapped from wrappers (../wrappers.ts), with its stdin source
 * and the redirections of the whole command. It returns the first rule that matches, as
 * `{ rule, reason }` with a stable rule id (see RULES in ./rules.ts), or null.
 *
 * Each command is judged
 * - as written, and as the command its wrappers and package runners run (./runs.ts finds the levels,
 *   ./commands.ts judges each; `npx -y rimraf@5 /` is judged as `rimraf /`, which is judged like
 *   `rm -rf /`);
 * - by the system rules (./system.ts): recursive permission sweeps, history tampering, capabilities,
 *   container and namespace entry (judged after the command they run, so that command names its rule),
 *   fs destroyers, account databases;
 * - for every argument slice that starts with a known-dangerous command (`foo --bar rm -rf /`; the
 *   name lists are in ./slice-names.ts);
 * - for the command strings its options carry (./embedded.ts: tar --to-command, ssh -o ProxyCommand,
 *   git -c core.pager, awk system(), PAGER=..., ...), each judged as a command of its own;
 * - for the paths it names (./path-args.ts, with ./paths.ts: secrets, raw devices, /proc, persistence, history files), after
 *   normalising `~`, `..`, `.` and `//` (a `..` out of `~` is tried for /root and /home/<user>), through
 *   symlinks made earlier in the same command; writes in ./writes.ts (plain settings appended to the
 *   user's shell start-up file are approvable, any command there is 'persistence');
 * - for scripts it runs that the same command wrote (`echo ... > x.sh; sh x.sh`): their content is judged.
 *
 * Fail closed: a command name that cannot be known statically is 'dynamic-command'; constructs the
 * evaluator does not know are 'unsupported-syntax'; too many alternatives is 'too-complex'; a command a
 * tool would run that cannot be known is 'embedded-command'; a written script with unknown content is
 * 'written-script'. One carve-out: rm -r/-f whose every target is a directory this command created with
 * mktemp, or $TMPDIR, or something under them (no `..`), passes.
 */
import { PRIVILEGED_WRAPPERS, basename, unwrapCommand } from '../wrappers.js';
import { MARK, analyzeScript, displayField, type CommandSite, type ScriptFacts } from '../parse.js';
import { deny, type DenyVerdict } from './rules.js';
import { isKnownCommand, judgeArgv } from './commands.js';
import { isDownload, STDIN_PATHS } from './code-sources.js';
import { assignmentEmbedded, embeddedCommands, TOOLS, type Embedded } from './embedded.js';
import { DB_SHELLS, dbEscapes, makefileCommands } from './embedded-tools.js';
import { interpreterName, INTERPRETERS, scriptOperand } from './interpreters.js';
import { globRegex, hasGlob, normalizePath, resolveLinks, secretPath, type LinkMap } from './paths.js';
import { judgePaths } from './path-args.js';
import { levels, linksOf, stdinItems } from './runs.js';
import { DANGEROUS_BY_NAME, NON_EXEC, SUBCOMMAND_TOOLS } from './slice-names.js';
import { containerEntry, ENTRY_WRAPPERS, historyAssignment } from './system.js';
import { appendedTexts, judgeRedirect, recordWrites, type Written } from './writes.js';

export type { DenyVerdict } from './rules.js';

const MAX_DEPTH = 4;

interface Ctx {
  facts: ScriptFacts;
  links: LinkMap;
  /** files this command wrote so far: path -> possible contents (null: unknown) */
  written: Written;
  depth: number;
}

/** The first denylist rule that matches the evaluated command, or null. */
export function findDenial(facts: ScriptFacts): DenyVerdict | null {
  return findDenialAt(facts, 0);
}

function findDenialAt(facts: ScriptFacts, depth: number): DenyVerdict | null {
  if (facts.tooComplex) return deny('too-complex');
  if (facts.unsupported) return deny('unsupported-syntax', facts.unsupported);
  if (facts.forkBomb) return deny('fork-bomb', `function ${facts.forkBomb}`);
  const ctx: Ctx = { facts, links: linksOf(facts), written: new Map(), depth };
  for (const a of facts.envAssigns) {
    const v = judgeAssignment(a, ctx);
    if (v) return v;
  }
  for (const site of facts.sites) {
    const v = judgeSite(site, ctx) ?? recordWrites(site, ctx);
    if (v) return v;
  }
  const appended = appendedTexts(facts);
  for (const r of facts.redirects) {
    const v = judgeRedirect(r, ctx.links, appended.get(r));
    if (v) return v;
  }
  if (facts.infiniteLoop) return deny('infinite-loop');
  return chainedRemote(facts);
}

/** A command string a tool will run, judged as a command of its own. */
function judgeText(text: string, where: string, ctx: Ctx): DenyVerdict | null {
  if (ctx.depth >= MAX_DEPTH) return deny('too-complex', `command strings nested too deep (${where})`);
  const res = analyzeScript(text);
  if (!res.ok) return deny('embedded-command', `${where} runs text that does not parse as shell`);
  const v = findDenialAt(res.facts, ctx.depth + 1);
  return v ? { rule: v.rule, reason: v.reason.replace(/\. This rule is absolute/, ` (inside ${where})$&`) } : null;
}

function judgeEmbedded(list: Embedded[], ctx: Ctx): DenyVerdict | null {
  for (const e of list) {
    if ('refuse' in e)
      return deny(e.where.endsWith('=') ? 'env-injection' : e.where.includes('docker') ? 'container-escape' : 'embedded-command', `${e.where}: ${e.refuse}`);
    const v = judgeText(e.text, e.where, ctx);
    if (v) return v;
  }
  return null;
}

function judgeAssignment(word: string, ctx: Ctx): DenyVerdict | null {
  const eq = word.indexOf('=');
  if (eq <= 0) return null;
  return historyAssignment(word.slice(0, eq), word.slice(eq + 1)) ?? judgeEmbedded(assignmentEmbedded(word.slice(0, eq), word.slice(eq + 1)), ctx);
}

function judgeSite(site: CommandSite, ctx: Ctx): DenyVerdict | null {
  const { facts, links } = ctx;
  for (const a of site.assignValues) {
    const v = judgeAssignment(a, ctx);
    if (v) return v;
  }
  for (const argv of site.argvs) {
    const u = unwrapCommand(argv, { deep: true });
    const priv = u.wrappers.find((w) => PRIVILEGED_WRAPPERS.has(w));
    if (priv) return deny('privilege-escalation', priv);
    for (const a of u.assignWords) {
      const v = judgeAssignment(a, ctx);
      if (v) return v;
    }
    for (const level of levels(argv, site)) {
      const v =
        judgeArgv(level, { site, facts, ownStdin: true, links }) ??
        judgeEmbedded(embeddedCommands(basename(level[0] ?? ''), level.slice(1)), ctx) ??
        judgeSlices(level, site, ctx) ??
        judgePaths(level, site, ctx.links) ??
        judgeWrittenRun(level, site, ctx);
      if (v) return v;
    }
    if (u.xargs && basename(u.words[0] ?? '') === 'rm' && stdinItems(site).includes(MARK.UNKNOWN)) return deny('recursive-delete', 'xargs rm');
    // Judged after the command they run, so a refusal of that command names its own rule.
    const entry = u.wrappers.find((w) => ENTRY_WRAPPERS.has(w));
    if (entry) return deny('container-entry', entry);
    for (const level of levels(argv, site)) {
      const v = containerEntry(level);
      if (v) return v;
    }
    if (site.stdin.kind === 'file') {
      for (const p of site.stdin.paths) {
        const secret = secretPath(p, site.cwd, links);
        if (secret) return deny('secret-file', `input redirection from ${secret}`);
      }
    }
    const runName = basename(u.words[0] ?? '');
    const makefileFromStdin =
      (runName === 'make' || runName === 'gmake') &&
      u.words.some((w, i) => (/^(-f|--file|--makefile)$/.test(w) && STDIN_PATHS.test(u.words[i + 1] ?? '')) || /^--(file|makefile)=(-|\/dev\/stdin)$/.test(w));
    if (makefileFromStdin && site.stdin.kind === 'here') {
      const v = judgeEmbedded(
        site.stdin.texts.flatMap((t) => makefileCommands(t, 'a makefile on stdin')),
        ctx,
      );
      if (v) return v;
    }
    if (site.stdin.kind === 'here' && DB_SHELLS.has(basename(u.words[0] ?? '')) && site.stdin.texts.some(dbEscapes)) {
      return deny('embedded-command', 'a database shell escape fed on stdin');
    }
  }
  return null;
}

/** `foo --bar rm -rf /`: an argument slice that starts with a known command is judged as that command. */
function judgeSlices(level: string[], site: CommandSite, ctx: Ctx): DenyVerdict | null {
  const name = basename(level[0] ?? '');
  if (NON_EXEC.has(name)) return null;
  const firstOperand = SUBCOMMAND_TOOLS.has(name) ? level.findIndex((w, i) => i > 0 && !w.startsWith('-')) : -1;
  for (let i = 1; i < level.length; i++) {
    const head = level[i]!;
    const tool = !head.startsWith('-') && TOOLS[basename(head)] !== undefined && basename(head) !== 'git';
    if (i === firstOperand || !(isKnownCommand(head) || tool)) continue;
    const j = { site, facts: ctx.facts, ownStdin: false, links: ctx.links };
    // `curl ... | anything bash`: whatever carries the interpreter, downloaded code reaches it
    if (interpreterName(basename(head)) && site.stdin.kind === 'pipe' && site.stdin.upstream.some((s) => s.argvs.some(isDownload))) {
      return deny('remote-code-exec', `download piped through ${name} into ${basename(head)}`);
    }
    const slice = level.slice(i);
    // Only where the arguments make it dangerous: a bare name (`grep pkill`, `stat /usr/bin/sudo`) is text.
    // Programs dangerous by name alone count when they are given arguments (`foo shutdown -h now`).
    const byName = judgeArgv(slice.slice(0, 1), j) !== null;
    if (!tool && byName && !(slice.length >= 2 && (DANGEROUS_BY_NAME.has(basename(head)) || basename(head).startsWith('mkfs')))) continue;
    const v = judgeArgv(slice, j) ?? judgeEmbedded(embeddedCommands(basename(slice[0]!), slice.slice(1)), ctx);
    if (v) return v;
  }
  return null;
}

/** Scripts this command wrote and now runs: judge their content (unknown content fails closed). */
function judgeWrittenRun(level: string[], site: CommandSite, ctx: Ctx): DenyVerdict | null {
  if (ctx.written.size === 0) return null;
  const name = basename(level[0] ?? '');
  const cwd = site.cwd[0] ?? '';
  let path: string | null = null;
  let shell = true;
  if ((level[0] ?? '').includes('/')) path = level[0]!;
  else if (name === 'source' || name === '.') path = level[1] ?? null;
  else if (interpreterName(name)) {
    const op = scriptOperand(name, level.slice(1));
    if (op !== null && op !== 'module' && !STDIN_PATHS.test(op)) path = op;
    shell = INTERPRETERS[interpreterName(name)!]!.code === 'c' && INTERPRETERS[interpreterName(name)!]!.value === 'oO';
  }
  // build files written in this command and then used: their recipes / scripts run
  if ((name === 'make' || name === 'gmake') && path === null) {
    const f = level.find((w, i) => /^(-f|--file)$/.test(level[i - 1] ?? '')) ?? null;
    for (const file of f ? [f] : ['GNUmakefile', 'makefile', 'Makefile']) {
      const contents = ctx.written.get(resolveLinks(normalizePath(file, cwd), ctx.links));
      for (const c of contents ?? []) {
        if (c === null) return deny('written-script', `${file}, written by this command`);
        const v = judgeEmbedded(makefileCommands(c, file), ctx);
        if (v) return v;
      }
    }
    return null;
  }
  if (['npm', 'pnpm', 'yarn', 'bun'].includes(name) && ctx.written.has(resolveLinks(normalizePath('package.json', cwd), ctx.links))) {
    return deny('written-script', `${name} runs scripts from a package.json written by this command`);
  }
  if (path === null && interpreterName(name) && site.stdin.kind === 'file') path = site.stdin.paths[0] ?? null;
  if (path === null) return null;
  // a path not known here (find -exec sh {}, sh "$f") may be the file just written
  if (path.includes(MARK.UNKNOWN)) return deny('written-script', `${name} runs a path not known here, after this command wrote files`);
  const target = resolveLinks(normalizePath(path, cwd), ctx.links);
  // a glob (`for f in *.sh; do bash "$f"; done`) runs every written file it matches
  const re = hasGlob(target) ? globRegex(target) : null;
  const contents = re ? [...ctx.written].filter(([p]) => re.test(p)).flatMap(([, c]) => c) : ctx.written.get(target);
  if (!contents || contents.length === 0) return null;
  if (!shell) return deny('inline-code', `${name} runs ${displayField(path)}, written by this same command`);
  for (const c of contents) {
    if (c === null) return deny('written-script', `${displayField(path)}`);
    if (c.startsWith('#!') && !/^#!\s*\S*\/(env\s+)?(ba|da|z|k)?sh\b/.test(c))
      return deny('inline-code', `${displayField(path)} is a script written by this same command`);
    const v = judgeText(c, `${displayField(path)}, written by this command`, ctx);
    if (v) return v;
  }
  return null;
}

/** Download, then an interpreter or a ./script later in the same command: remote content is run. */
function chainedRemote(facts: ScriptFacts): DenyVerdict | null {
  const firstDownload = facts.sites.findIndex((s) => s.argvs.some(isDownload));
  if (firstDownload < 0) return null;
  for (const s of facts.sites.slice(firstDownload + 1)) {
    for (const argv of s.argvs) {
      const words = unwrapCommand(argv, { deep: true }).words;
      const n = words[0] ?? '';
      const name = basename(n);
      const runsFile =
        (interpreterName(name) !== null &&
          (() => {
            const op = scriptOperand(name, words.slice(1));
            return op !== null && op !== 'module';
          })()) ||
        name === 'source' ||
        name === '.' ||
        (n.includes('/') && !n.startsWith('/usr/') && !n.startsWith('/bin/'));
      if (runsFile) return deny('remote-code-exec', `download followed by ${displayField(name)}`);
    }
  }
  return null;
}
