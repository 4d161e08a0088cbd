/**
 * awk and sed programs: the commands they run (awk system(), print | "cmd", "cmd" | getline; sed's e
 * command and the e flag of s///) and the files sed reads and writes (r, w). Small readers, enough to
 * find these constructs; what they cannot read as a literal is refused (fail closed).
 */
import { cmd, optionValues, refuse, type Embedded } from './embedded-kit.js';
import { interpreterName } from './interpreters.js';
import { readOptions } from './options.js';

// ---- awk: system(), print | "cmd", "cmd" | getline

function awkProgram(args: readonly string[]): string[] {
  const programs: string[] = [];
  let fromFile = false;
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      i++;
      break;
    }
    if (a === '-f' || a === '--file') {
      fromFile = true;
      i++;
      continue;
    }
    if (a === '-e' || a === '--source') {
      programs.push(args[++i] ?? '');
      continue;
    }
    if (/^--(source|exec)=/.test(a)) {
      programs.push(a.slice(a.indexOf('=') + 1));
      continue;
    }
    if (a === '-F' || a === '-v' || a === '--assign' || a === '--field-separator') {
      i++;
      continue;
    }
    if (a.startsWith('-') && a !== '-') continue;
    break;
  }
  if (programs.length === 0 && !fromFile && i < args.length) programs.push(args[i]!);
  return programs;
}

const AWK_STRING = '"((?:[^"\\\\]|\\\\.)*)"';
export function awkCommands(args: readonly string[]): Embedded[] {
  const out: Embedded[] = [];
  for (const prog of awkProgram(args)) {
    const unq = (s: string): string => s.replace(/\\(.)/g, '$1');
    for (const m of prog.matchAll(/\bsystem\s*\(\s*([^)]*)\)/g)) {
      const lit = new RegExp(`^${AWK_STRING}\\s*$`).exec(m[1]!);
      out.push(lit ? cmd('awk system()', unq(lit[1]!)) : refuse('awk system()', 'awk runs a command built at run time'));
    }
    for (const m of prog.matchAll(new RegExp(`\\|&?\\s*${AWK_STRING}`, 'g'))) {
      const target = unq(m[1]!);
      // printing into a shell or interpreter runs what awk prints
      const first = (target.trim().split(/\s+/)[0] ?? '').replace(/^.*\//, '');
      out.push(interpreterName(first) ? refuse('awk print | "cmd"', `awk pipes its output into ${first}`) : cmd('awk print | "cmd"', target));
    }
    for (const m of prog.matchAll(new RegExp(`${AWK_STRING}\\s*\\|&?\\s*getline`, 'g'))) out.push(cmd('awk "cmd" | getline', unq(m[1]!)));
    if (/(^|[^"\s])\s*\|&?\s*getline/.test(prog.replace(new RegExp(`${AWK_STRING}\\s*\\|&?\\s*getline`, 'g'), ''))) {
      out.push(refuse('awk cmd | getline', 'awk reads from a command built at run time'));
    }
    if (/\bprintf?\b[^;}|]*\|&?\s*[A-Za-z_$(]/.test(prog)) out.push(refuse('awk print | cmd', 'awk pipes into a command built at run time'));
  }
  return out;
}

// ---- sed: the e command, the e flag of s///, w/r files

export interface SedScript {
  exec: boolean;
  writes: string[];
  reads: string[];
}

export function sedScripts(args: readonly string[]): string[] {
  const scripts = optionValues(args, ['expression'], 'e', 1);
  const hasFile = optionValues(args, ['file'], 'f', 1).length > 0;
  if (scripts.length > 0 || hasFile) return scripts;
  const o = readOptions(args, { shortValue: 'efl', longValue: ['expression', 'file', 'line-length'] });
  return o.operands.slice(0, 1);
}

/** A small reader of sed scripts: enough to find e, s///e, w and r. */
export function readSed(script: string): SedScript {
  const out: SedScript = { exec: false, writes: [], reads: [] };
  let i = 0;
  const n = script.length;
  const restOfLine = (): string => {
    const end = script.indexOf('\n', i);
    const s = script.slice(i, end < 0 ? n : end).trim();
    i = end < 0 ? n : end;
    return s;
  };
  const skipDelimited = (delim: string): void => {
    while (i < n && script[i] !== delim) i += script[i] === '\\' ? 2 : 1;
    i++;
  };
  while (i < n) {
    const c = script[i]!;
    if (/[\s;{}!]/.test(c)) {
      i++;
      continue;
    }
    // addresses
    if (/[0-9$,~+]/.test(c)) {
      i++;
      continue;
    }
    if (c === '/') {
      i++;
      skipDelimited('/');
      while (/[IM]/.test(script[i] ?? '')) i++;
      continue;
    }
    if (c === '\\') {
      const d = script[i + 1] ?? '';
      i += 2;
      skipDelimited(d);
      continue;
    }
    i++;
    switch (c) {
      case 's': {
        const d = script[i] ?? '';
        i++;
        skipDelimited(d);
        skipDelimited(d);
        while (i < n && /[gpeiImM0-9w]/.test(script[i]!)) {
          if (script[i] === 'e') out.exec = true;
          if (script[i] === 'w') {
            i++;
            out.writes.push(restOfLine());
            break;
          }
          i++;
        }
        break;
      }
      case 'y': {
        const d = script[i] ?? '';
        i++;
        skipDelimited(d);
        skipDelimited(d);
        break;
      }
      case 'e':
        out.exec = true;
        restOfLine();
        break;
      case 'w':
      case 'W':
        out.writes.push(restOfLine());
        break;
      case 'r':
      case 'R':
        out.reads.push(restOfLine());
        break;
      case 'a':
      case 'i':
      case 'c':
        restOfLine();
        break;
      case ':':
      case 'b':
      case 't':
      case 'T':
        while (i < n && script[i] !== ';' && script[i] !== '\n') i++;
        break;
      default:
        break;
    }
  }
  return out;
}

export function sedCommands(args: readonly string[]): Embedded[] {
  return sedScripts(args).some((s) => readSed(s).exec) ? [refuse('sed e', 'sed runs a command (the e command or the e flag of s///)')] : [];
}

/** Files an awk program names as literals: written by `print > "f"` / `>> "f"`, read by `getline < "f"`. */
export function awkFiles(args: readonly string[]): { writes: string[]; reads: string[] } {
  const out = { writes: [] as string[], reads: [] as string[] };
  for (const prog of awkProgram(args)) {
    for (const m of prog.matchAll(new RegExp(`>>?\\s*${AWK_STRING}`, 'g'))) out.writes.push(m[1]!.replace(/\\(.)/g, '$1'));
    for (const m of prog.matchAll(new RegExp(`<\\s*${AWK_STRING}`, 'g'))) out.reads.push(m[1]!.replace(/\\(.)/g, '$1'));
  }
  return out;
}
