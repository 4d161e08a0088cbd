/**
 * zod issues -> ConfigProblems an operator can act on: the key path as written in YAML, what was
 * expected, the keys allowed where an unknown one stood (with a did-you-mean).
 */
import type { z } from 'zod';
import { didYouMean } from './did-you-mean.js';

export { didYouMean };

/** One thing wrong with the configuration: where (a key path or variable name) and what to do. */
export interface ConfigProblem {
  path: string;
  message: string;
}

export type Env = Record<string, string | undefined>;

/** A value as a message quotes it: short strings quoted, lists and mappings named, never dumped. */
export function quoteValue(v: unknown): string {
  if (v === null) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
  if (typeof v === 'object') return 'a mapping';
  return String(v);
}

function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else {
      const s = String(seg);
      out += /^[A-Za-z0-9_-]+$/.test(s) ? (out === '' ? s : `.${s}`) : `[${JSON.stringify(s)}]`;
    }
  }
  return out === '' ? '(top level)' : out;
}

interface SchemaDef {
  type?: string;
  shape?: Record<string, unknown>;
  innerType?: unknown;
  valueType?: unknown;
  element?: unknown;
  in?: unknown;
  out?: unknown;
}
const defOf = (s: unknown): SchemaDef => (s as { _zod?: { def?: SchemaDef } })?._zod?.def ?? {};

/** The keys an object schema at `path` accepts (for "unknown key" messages). */
function knownKeysAt(schema: unknown, path: ReadonlyArray<PropertyKey>): string[] {
  let s = schema;
  let i = 0;
  for (let guard = 0; guard < 100; guard++) {
    const d = defOf(s);
    if (d.type === 'optional' || d.type === 'nullable' || d.type === 'default' || d.type === 'prefault') s = d.innerType;
    // A preprocess is (transform -> schema), a .transform() (schema -> transform): keys are on the schema side.
    else if (d.type === 'pipe') s = defOf(d.out).type === 'transform' ? d.in : d.out;
    else if (i >= path.length) return d.type === 'object' && d.shape ? Object.keys(d.shape) : [];
    else if (d.type === 'object' && d.shape) s = d.shape[String(path[i++])];
    else if (d.type === 'record') (s = d.valueType), i++;
    else if (d.type === 'array') (s = d.element), i++;
    else return [];
  }
  return [];
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  array: 'a list',
  object: 'a mapping (key: value)',
  record: 'a mapping (key: value)',
  boolean: 'true or false',
};

export function issueProblems(issue: z.core.$ZodIssue, schema: unknown): ConfigProblem[] {
  const path = issue.path;
  switch (issue.code) {
    case 'unrecognized_keys': {
      const known = knownKeysAt(schema, path);
      return issue.keys.map((k) => ({
        path: formatPath([...path, k]),
        message: `unknown key${didYouMean(k, known)}; allowed here: ${known.join(', ')}`,
      }));
    }
    case 'invalid_type': {
      const input = (issue as { input?: unknown }).input;
      if (input === undefined) return [{ path: formatPath(path), message: 'required' }];
      const want = EXPECTED[issue.expected] ?? issue.expected;
      const quoted = issue.expected === 'number' && typeof input === 'string' ? '; write it without quotes' : '';
      return [{ path: formatPath(path), message: `expected ${want}, got ${quoteValue(input)}${quoted}` }];
    }
    case 'invalid_value':
      return [
        {
          path: formatPath(path),
          message: `expected one of ${issue.values.map(String).join(' | ')}, got ${quoteValue((issue as { input?: unknown }).input)}`,
        },
      ];
    case 'invalid_key': {
      const inner = issue.issues[0];
      return [{ path: formatPath(path), message: inner?.message ?? 'invalid key' }];
    }
    default:
      return [{ path: formatPath(path), message: issue.message }];
  }
}
