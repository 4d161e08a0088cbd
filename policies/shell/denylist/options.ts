/**
 * Option reading for the denylist rules, the way GNU getopt reads them: short options may be clustered
 * (`-rf`, `-s9`), a short option that takes a value may have it glued (`-sKILL`) or in the next word, and
 * a long option may be abbreviated to any prefix (`--rec` = `--recursive`) and carry its value after `=`
 * or in the next word. The rules ask about the options they care about; an abbreviation is matched
 * fail-closed (a prefix of the option the rule looks at counts, even if another option shares it).
 */

export interface OptionSpec {
  /** short option letters that take a value (`-s SIG`, `-sSIG`) */
  shortValue?: string;
  /** long option names (without --) that take a value */
  longValue?: readonly string[];
}

export interface ReadOptions {
  /** every short letter seen, with its value when it takes one (last wins) */
  short: Map<string, string | true>;
  /** every long option as written (name without --, possibly abbreviated) with its value */
  long: { name: string; value: string | null }[];
  /** words that are not options */
  operands: string[];
}

export function readOptions(args: readonly string[], spec: OptionSpec = {}): ReadOptions {
  const out: ReadOptions = { short: new Map(), long: [], operands: [] };
  const shortValue = spec.shortValue ?? '';
  const longValue = spec.longValue ?? [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      out.operands.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      let value: string | null = eq > 0 ? a.slice(eq + 1) : null;
      // A value-taking long option (or an abbreviation of one) takes the next word.
      if (value === null && name !== '' && longValue.some((l) => l.startsWith(name))) value = args[++i] ?? '';
      out.long.push({ name, value });
      continue;
    }
    if (a.startsWith('-') && a.length > 1) {
      for (let k = 1; k < a.length; k++) {
        const c = a[k]!;
        if (shortValue.includes(c)) {
          const glued = a.slice(k + 1);
          out.short.set(c, glued !== '' ? glued : (args[++i] ?? ''));
          break;
        }
        out.short.set(c, true);
      }
      continue;
    }
    out.operands.push(a);
  }
  return out;
}

/** Is the long option `full` present, written in full or abbreviated (at least `min` letters)? */
export function hasLong(o: ReadOptions, full: string, min = 1): boolean {
  return o.long.some((l) => l.name.length >= min && full.startsWith(l.name));
}

/** The value of long option `full` (full or abbreviated), or undefined. */
export function longValue(o: ReadOptions, full: string, min = 1): string | undefined {
  const hit = o.long.filter((l) => l.name.length >= min && full.startsWith(l.name) && l.value !== null).pop();
  return hit?.value ?? undefined;
}

/** Is `word` a long option that abbreviates one of `names`? Returns the value part (after =) or null. */
export function matchLong(word: string, names: readonly string[], min = 1): { value: string | null } | null {
  if (!word.startsWith('--')) return null;
  const eq = word.indexOf('=');
  const name = eq > 0 ? word.slice(2, eq) : word.slice(2);
  if (name.length < min || !names.some((n) => n.startsWith(name))) return null;
  return { value: eq > 0 ? word.slice(eq + 1) : null };
}
