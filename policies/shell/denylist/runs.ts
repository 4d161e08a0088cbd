/**
 * What a command really runs and touches, before any rule looks at it: the symlinks it makes (`ln -s`,
 * `cp -s`), and the argv levels to judge (as written, and after its wrappers; xargs gets its stdin
 * items where they are known, MARK.UNKNOWN where not).
 */
import { basename, unwrapCommand } from '../wrappers.js';
import { MARK, type CommandSite, type ScriptFacts } from '../parse.js';
import { normalizePath, type LinkMap } from './paths.js';
import { operands } from './program-rules.js';

/** ln [-s] TARGET... LINK: links made in this command, for path rules. */
export function linksOf(facts: ScriptFacts): LinkMap {
  const links: LinkMap = new Map();
  for (const site of facts.sites) {
    for (const argv of site.argvs) {
      const words = unwrapCommand(argv, { deep: true }).words;
      const name = basename(words[0] ?? '');
      if (name !== 'ln' && name !== 'link' && !(name === 'cp' && words.some((w) => /^-[a-zA-Z]*s/.test(w) || w === '--symbolic-link'))) continue;
      const ops = operands(words.slice(1));
      if (ops.length === 0) continue;
      const cwd = site.cwd[0] ?? '';
      const targets = ops.length === 1 ? ops : ops.slice(0, -1);
      const dest = ops.length === 1 ? '.' : ops[ops.length - 1]!;
      for (const t of targets) {
        const target = normalizePath(t, cwd);
        const link = ops.length > 2 || dest === '.' ? normalizePath(`${dest}/${basename(t)}`, cwd) : normalizePath(dest, cwd);
        links.set(link, target);
        // ln -s TARGET DIR puts the link inside DIR; fail closed: resolve both
        if (ops.length === 2) links.set(normalizePath(`${dest}/${basename(t)}`, cwd), target);
      }
    }
  }
  return links;
}

/** The argv as written, and the command that really runs after wrappers (xargs gets its stdin items). */
export function levels(argv: string[], site: CommandSite): string[][] {
  const u = unwrapCommand(argv, { deep: true });
  if (u.wrappers.length === 0 && u.assigns.length === 0) return [argv];
  const inner = u.xargs ? xargsArgv(u.words, u.xargs.replace, site) : u.words;
  return inner.length > 0 ? [argv, inner] : [argv];
}

function xargsArgv(words: string[], replace: string | null, site: CommandSite): string[] {
  const cmd = words.length > 0 ? words : ['echo'];
  const items = stdinItems(site);
  if (replace !== null && replace !== '') return cmd.map((w) => w.split(replace).join(items.join(' ')));
  return [...cmd, ...items];
}

export function stdinItems(site: CommandSite): string[] {
  const s = site.stdin;
  if (s.kind === 'here') return s.texts.flatMap((t) => t.split(/\s+/).filter(Boolean));
  if (s.kind === 'pipe' && s.upstream.length === 1) {
    const up = s.upstream[0]!;
    const argv = up.argvs.length === 1 ? unwrapCommand(up.argvs[0]!, { deep: true }).words : [];
    const n = basename(argv[0] ?? '');
    if (n === 'echo' || n === 'printf')
      return argv
        .slice(1)
        .filter((a) => !/^-[neE]+$/.test(a))
        .flatMap((a) => a.split(/\\n|\s+/))
        .filter(Boolean);
  }
  return [MARK.UNKNOWN];
}
