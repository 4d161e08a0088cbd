/**
 * `gatehouse audit ...`: the audit file (bot/audit/chain.ts) for people.
 *   gatehouse audit verify [--dir D] [--key-file F]
 *       OK with the record count, or the first record that was changed, removed or reordered (file +
 *       seq + line) and exit 1.
 *   gatehouse audit export --since <ISO time | 90s | 30m | 24h | 7d> [--json] [--dir D]
 *       the records since then: one readable line each, or one JSON object a line with --json.
 *   gatehouse audit tail [-n N] [--follow] [--dir D]
 *       the last N records (default 20); --follow keeps printing new ones (across rotations) until
 *       interrupted.
 * The folder and key are found as the service finds them (bot/audit/trail.ts: GATEHOUSE_AUDIT_DIR,
 * GATEHOUSE_AUDIT_KEY, the data folder's audit.key); --dir and --key-file point elsewhere (a copy).
 * Exit 0 done; 1 verification failed or nothing to read; 2 bad usage.
 */
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { auditMessage, type AuditEvent } from '../../agent/audit.js';
import type { CliIO } from '../cli/io.js';
import { loadForCommand } from '../cli/operator.js';
import { chainFiles, readRecords, verifyChains, type AuditRecord } from './chain.js';
import { auditSettings, KEY_FILE, loadAuditKey } from './trail.js';
import { messageOf } from '../../agent/log.js';

const USAGE = `Usage:
  gatehouse audit verify [--dir D] [--key-file F]
  gatehouse audit export --since <ISO time | duration like 24h, 30m, 7d> [--json] [--dir D]
  gatehouse audit tail [-n N] [--follow] [--dir D]`;

interface Where {
  dir: string;
  keyFile: string | undefined;
  keyFromEnv: string | undefined;
}

function usage(io: CliIO, problem: string): number {
  io.stderr.write(`${problem}\n${USAGE}\n`);
  return 2;
}

/** The audit folder and key: --dir/--key-file, else what the service uses. */
function where(io: CliIO, opts: { dir?: string; 'key-file'?: string }): Where | number {
  const env = { ...io.env };
  if (opts.dir !== undefined) {
    const dir = resolve(io.cwd, opts.dir);
    const keyFile = opts['key-file'] !== undefined ? resolve(io.cwd, opts['key-file']) : undefined;
    if (keyFile || env.GATEHOUSE_AUDIT_KEY !== undefined) return { dir, keyFile, keyFromEnv: keyFile ? undefined : env.GATEHOUSE_AUDIT_KEY };
  }
  const config = loadForCommand(io, env);
  if (typeof config === 'number') return config;
  let s;
  try {
    s = auditSettings(env, io.cwd, config);
  } catch (err) {
    io.stderr.write(`${messageOf(err)}\n`);
    return 1;
  }
  const dir = opts.dir !== undefined ? resolve(io.cwd, opts.dir) : s.dir;
  if (!dir) {
    io.stderr.write(`There is no audit file: ${s.why ?? 'it is turned off'}. Give the folder with --dir.\n`);
    return 1;
  }
  const keyFile = opts['key-file'] !== undefined ? resolve(io.cwd, opts['key-file']) : (s.keyFile ?? join(dirname(dir), KEY_FILE));
  return { dir, keyFile, keyFromEnv: opts['key-file'] !== undefined ? undefined : s.keyFromEnv };
}

type Options = NonNullable<NonNullable<Parameters<typeof parseArgs>[0]>['options']>;

function parse(io: CliIO, args: string[], options: Options) {
  try {
    return parseArgs({ args, options: { dir: { type: 'string' }, ...options }, allowPositionals: false, strict: true }).values as Record<
      string,
      string | boolean | undefined
    >;
  } catch (err) {
    return usage(io, messageOf(err));
  }
}

export async function auditCommand(args: string[], io: CliIO): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'verify') {
    const o = parse(io, rest, { 'key-file': { type: 'string' } });
    if (typeof o === 'number') return o;
    return verify(io, o as { dir?: string; 'key-file'?: string });
  }
  if (sub === 'export') {
    const o = parse(io, rest, { since: { type: 'string' }, json: { type: 'boolean' } });
    if (typeof o === 'number') return o;
    if (typeof o.since !== 'string') return usage(io, 'export needs --since <ISO time or duration like 24h>.');
    const since = sinceOf(o.since, Date.now());
    if (since === undefined)
      return usage(io, `--since ${JSON.stringify(o.since)}: expected an ISO time (2026-05-01T12:00:00Z) or a duration like 90s, 30m, 24h, 7d.`);
    const w = where(io, o as { dir?: string });
    if (typeof w === 'number') return w;
    const records = readRecords(w.dir).filter((r) => Date.parse(r.time) >= since);
    warnIfBroken(io, w);
    for (const r of records) io.stdout.write((o.json ? JSON.stringify({ chain: r.chain, seq: r.seq, time: r.time, event: r.event }) : line(r)) + '\n');
    return 0;
  }
  if (sub === 'tail') {
    const o = parse(io, rest, { n: { type: 'string', short: 'n' }, follow: { type: 'boolean', short: 'f' } });
    if (typeof o === 'number') return o;
    const n = o.n === undefined ? 20 : Number(o.n);
    if (!Number.isInteger(n) || n < 0) return usage(io, `-n ${JSON.stringify(o.n)}: expected a whole number.`);
    const w = where(io, o as { dir?: string });
    if (typeof w === 'number') return w;
    const all = readRecords(w.dir).sort((a, b) => a.time.localeCompare(b.time));
    for (const r of n === 0 ? [] : all.slice(-n)) io.stdout.write(line(r) + '\n');
    if (o.follow) await follow(io, w.dir);
    return 0;
  }
  return usage(io, sub === undefined ? 'gatehouse audit needs a subcommand.' : `Unknown audit subcommand ${JSON.stringify(sub)}.`);
}

function keyOf(io: CliIO, w: Where): Buffer | undefined {
  try {
    return loadAuditKey(w, { create: false });
  } catch (err) {
    io.stderr.write(`${messageOf(err)}\n`);
    return undefined;
  }
}

function verify(io: CliIO, opts: { dir?: string; 'key-file'?: string }): number {
  const w = where(io, opts);
  if (typeof w === 'number') return w;
  if (!existsSync(w.dir)) {
    io.stderr.write(`No audit folder at ${w.dir}.\n`);
    return 1;
  }
  const key = keyOf(io, w);
  if (!key) return 1;
  const r = verifyChains(w.dir, key);
  if (!r.ok) {
    io.stdout.write(`FAILED: ${r.file} seq ${r.seq ?? '?'} (line ${r.line}): ${r.problem}\n${r.checked} record(s) before it check out.\n`);
    return 1;
  }
  const total = r.chains.reduce((n, c) => n + c.records, 0);
  if (r.chains.length === 0) {
    io.stdout.write(`OK: no audit records in ${w.dir} yet\n`);
    return 0;
  }
  io.stdout.write(`OK: ${total} record(s) in ${r.chains.reduce((n, c) => n + c.files, 0)} file(s)\n`);
  // Removing records from the end leaves nothing to notice: keep these elsewhere to compare.
  for (const c of r.chains) io.stdout.write(`  ${c.chain}: ${c.records} record(s), last seq ${c.lastSeq}, last hash ${c.lastHash}\n`);
  return 0;
}

function warnIfBroken(io: CliIO, w: Where): void {
  let key: Buffer;
  try {
    key = loadAuditKey(w, { create: false });
  } catch {
    return;
  }
  const r = verifyChains(w.dir, key);
  if (!r.ok) io.stderr.write(`warning: the audit chain does not verify from ${r.file} seq ${r.seq ?? '?'}: ${r.problem} (gatehouse audit verify)\n`);
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** An ISO time, or a duration back from now (90s, 30m, 24h, 7d, 2w). */
export function sinceOf(s: string, now: number): number | undefined {
  const m = /^(\d+)([smhdw])$/.exec(s.trim());
  if (m) return now - Number(m[1]) * UNITS[m[2]!]!;
  if (!/^\d{4}-\d\d-\d\d/.test(s)) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
}

function line(r: AuditRecord & { chain: string }): string {
  let msg: string;
  try {
    msg = auditMessage(r.event as AuditEvent) ?? String(r.event.event);
  } catch {
    msg = String(r.event.event);
  }
  return `${r.time} ${r.chain}#${r.seq} ${String(r.event.event)}: ${msg}`;
}

/** Prints records as they are appended, following rotations, until SIGINT / SIGTERM. */
async function follow(io: CliIO, dir: string): Promise<void> {
  // Where each chain's reading stands: the file and the byte offset read up to.
  const at = new Map<string, { n: number; offset: number; rest: string }>();
  for (const [chain, files] of chainFiles(dir)) {
    const last = files.at(-1)!;
    at.set(chain, { n: last.n, offset: sizeOf(join(dir, last.file)), rest: '' });
  }
  const read = (chain: string, file: string, n: number, from: number): void => {
    const state = at.get(chain) ?? { n, offset: 0, rest: '' };
    const fd = openSync(join(dir, file), 'r');
    try {
      const size = fstatSync(fd).size;
      if (size <= from) return;
      const buf = Buffer.alloc(size - from);
      readSync(fd, buf, 0, buf.length, from);
      const text = state.rest + buf.toString('utf8');
      const lines = text.split('\n');
      state.rest = lines.pop() ?? '';
      for (const l of lines) {
        if (l === '') continue;
        try {
          io.stdout.write(line({ ...(JSON.parse(l) as AuditRecord), chain }) + '\n');
        } catch {
          // not a record: verify names it
        }
      }
      at.set(chain, { n, offset: size, rest: state.rest });
    } finally {
      closeSync(fd);
    }
  };
  await new Promise<void>((done) => {
    const timer = setInterval(() => {
      for (const [chain, files] of chainFiles(dir)) {
        for (const f of files) {
          const state = at.get(chain);
          if (state && f.n < state.n) continue;
          if (state && f.n > state.n) at.set(chain, { n: f.n, offset: 0, rest: '' });
          read(chain, f.file, f.n, at.get(chain)?.offset ?? 0);
        }
      }
    }, 200);
    const stop = () => {
      clearInterval(timer);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      done();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

function sizeOf(path: string): number {
  const fd = openSync(path, 'r');
  try {
    return fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
}
