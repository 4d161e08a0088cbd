/**
 * What the command-string extractors return, and the option reading they share.
 * `{ where, text }`: a command string the tool will run (judged as a command of its own);
 * `{ where, refuse }`: a construct refused because the command it runs cannot be known.
 */
import { matchLong } from './options.js';

export type Embedded = { where: string; text: string } | { where: string; refuse: string };

export type Extractor = (args: readonly string[]) => Embedded[];

/** Text the evaluator could not know (an outside variable, a substitution's output). */
export const UNKNOWN_TEXT = /[\uE000\uE005]/;

export const cmd = (where: string, text: string): Embedded => ({ where, text });
export const refuse = (where: string, why: string): Embedded => ({ where, refuse: why });

/** Values of long options (abbreviations allowed, at least `min` letters) and short options. */
export function optionValues(args: readonly string[], long: readonly string[], short: string, min = 3): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') break;
    const m = matchLong(a, long, min);
    if (m) {
      out.push(m.value ?? args[++i] ?? '');
      continue;
    }
    if (short && /^-[A-Za-z]/.test(a) && !a.startsWith('--')) {
      for (let k = 1; k < a.length; k++) {
        if (short.includes(a[k]!)) {
          const glued = a.slice(k + 1);
          out.push(glued !== '' ? glued : (args[++i] ?? ''));
          break;
        }
      }
    }
  }
  return out;
}
