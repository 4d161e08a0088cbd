/**
 * The audit file: every audit event appended as one JSON line to a hash-chained, keyed-MAC file that
 * nobody can quietly edit, and the check that says whether anybody did.
 *
 * Contract:
 * - A record is one line: `{"seq":N,"time":ISO,"prev":HEX,"event":{...},"mac":HEX}`.
 *   `seq` counts from 1 across the whole chain; `prev` is the SHA-256 (hex) of the previous record's
 *   line exactly as written (without its newline), 64 zeros for the first record of the chain;
 *   `mac` is HMAC-SHA256 with the audit key over `JSON.stringify({seq,time,prev,event})`.
 *   So a changed field breaks that record's MAC, a removed or reordered record breaks the next
 *   one's `prev` (and its seq), and recomputing the hashes needs the key.
 * - A chain is named (`audit`, or `audit-<replica>` when several replicas share a PostgreSQL store,
 *   one chain per writing process) and lives in files `<chain>-<n>.jsonl`, n = 000001, 000002, ...
 *   A file is rotated when the next line would take it over `maxBytes`; the first record of the new
 *   file carries the previous file's last hash in `prev`, so the chain is verified across files.
 * - Files are created 0600 in a folder made 0700. Appends are synchronous writes of whole lines from
 *   the one process that owns the chain: they are serialised and in the order of the calls.
 * - Re-opened at the next start, the writer continues the chain from the last record of the last file.
 * - Not detectable from the files alone: records removed from the END of a chain (nothing follows
 *   them). `verify` prints the last seq and hash so an operator can keep it elsewhere and compare.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { chmodSync, closeSync, existsSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const GENESIS = '0'.repeat(64);
const FILE_PATTERN = /^(.+)-(\d{6,})\.jsonl$/;

export interface AuditRecord {
  seq: number;
  time: string;
  prev: string;
  event: Record<string, unknown>;
  mac: string;
}

const sha256 = (line: string): string => createHash('sha256').update(line).digest('hex');

/** The MAC's input: the record without its mac, as JSON (also the start of the record's line). */
const macText = (r: Pick<AuditRecord, 'seq' | 'time' | 'prev' | 'event'>): string => JSON.stringify({ seq: r.seq, time: r.time, prev: r.prev, event: r.event });

const hmac = (key: Buffer, text: string): string => createHmac('sha256', key).update(text).digest('hex');

function macOf(key: Buffer, r: Pick<AuditRecord, 'seq' | 'time' | 'prev' | 'event'>): string {
  return hmac(key, macText(r));
}

export function fileName(chain: string, n: number): string {
  return `${chain}-${String(n).padStart(6, '0')}.jsonl`;
}

/** The chains in a folder, each with its files in order: chain name -> [{file, n}]. */
export function chainFiles(dir: string): Map<string, Array<{ file: string; n: number }>> {
  const out = new Map<string, Array<{ file: string; n: number }>>();
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const m = FILE_PATTERN.exec(name);
    if (!m) continue;
    const list = out.get(m[1]!) ?? [];
    list.push({ file: name, n: Number(m[2]) });
    out.set(m[1]!, list);
  }
  for (const list of out.values()) list.sort((a, b) => a.n - b.n);
  return out;
}

export interface ChainWriterOptions {
  dir: string;
  chain: string;
  key: Buffer;
  /** Rotate when a file would grow past this many bytes. */
  maxBytes: number;
  now?: () => Date;
}

export class ChainWriter {
  private fd: number | undefined;
  private n: number;
  private size = 0;
  private seq = 0;
  private prev = GENESIS;
  /** Set at open when the chain's last record does not check with this key (a changed key). */
  readonly warning: string | undefined;

  constructor(private readonly opts: ChainWriterOptions) {
    mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
    chmodSync(opts.dir, 0o700);
    const files = chainFiles(opts.dir).get(opts.chain) ?? [];
    const last = files.at(-1);
    this.n = last?.n ?? 1;
    if (last) {
      const lines = readFileSync(join(opts.dir, last.file), 'utf8')
        .split('\n')
        .filter((l) => l !== '');
      const tail = lines.at(-1);
      if (tail !== undefined) {
        try {
          const r = JSON.parse(tail) as AuditRecord;
          this.seq = r.seq;
          this.prev = sha256(tail);
          if (!safeEqualHex(r.mac, macOf(opts.key, r)))
            this.warning = `the last audit record (${last.file} seq ${r.seq}) does not check with this audit key: \`gatehouse audit verify\` will fail there (was the key changed?)`;
        } catch {
          this.warning = `the last line of ${last.file} is not an audit record (a write cut short?); the chain continues after it and \`gatehouse audit verify\` will name it`;
          this.prev = sha256(tail);
        }
      }
    }
    this.openFile();
  }

  private openFile(): void {
    const path = join(this.opts.dir, fileName(this.opts.chain, this.n));
    this.fd = openSync(path, 'a', 0o600);
    chmodSync(path, 0o600);
    this.size = fstatSync(this.fd).size;
  }

  /** Appends one event; returns the record written. */
  append(event: object): AuditRecord {
    if (this.fd === undefined) throw new Error('the audit file is closed');
    const body = {
      seq: this.seq + 1,
      time: (this.opts.now ?? (() => new Date()))().toISOString(),
      prev: this.prev,
      event: { ...event } as Record<string, unknown>,
    };
    // The line is the MAC's text with the mac added last: JSON.stringify(record), encoded once.
    const text = macText(body);
    const record: AuditRecord = { ...body, mac: hmac(this.opts.key, text) };
    const line = `${text.slice(0, -1)},"mac":${JSON.stringify(record.mac)}}`;
    const bytes = Buffer.byteLength(line) + 1;
    if (this.size > 0 && this.size + bytes > this.opts.maxBytes) {
      closeSync(this.fd);
      this.n++;
      this.openFile();
    }
    writeSync(this.fd, line + '\n');
    this.size += bytes;
    this.seq = record.seq;
    this.prev = sha256(line);
    return record;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

function safeEqualHex(a: unknown, b: string): boolean {
  if (typeof a !== 'string' || a.length !== b.length) return false;
  return timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

export type VerifyResult =
  | { ok: true; chains: Array<{ chain: string; records: number; files: number; lastSeq: number; lastHash: string }> }
  | { ok: false; chain: string; file: string; line: number; seq: number | undefined; problem: string; checked: number };

/**
 * Checks every chain in `dir` with `key`, file by file and record by record; stops at the first
 * record that was changed, removed or reordered (or a line that is not a record).
 */
export function verifyChains(dir: string, key: Buffer): VerifyResult {
  const chains: Extract<VerifyResult, { ok: true }>['chains'] = [];
  let checked = 0;
  for (const [chain, files] of chainFiles(dir)) {
    let prev = GENESIS;
    let seq = 0;
    let records = 0;
    for (let fi = 0; fi < files.length; fi++) {
      const f = files[fi]!;
      if (fi > 0 && f.n !== files[fi - 1]!.n + 1) {
        return { ok: false, chain, file: fileName(chain, files[fi - 1]!.n + 1), line: 0, seq: seq + 1, problem: 'this file of the chain is missing', checked };
      }
      const lines = readFileSync(join(dir, f.file), 'utf8').split('\n');
      if (lines.at(-1) === '') lines.pop();
      for (let li = 0; li < lines.length; li++) {
        const line = lines[li]!;
        const fail = (problem: string, at?: number): VerifyResult => ({ ok: false, chain, file: f.file, line: li + 1, seq: at, problem, checked });
        let r: AuditRecord;
        try {
          r = JSON.parse(line) as AuditRecord;
        } catch {
          return fail('not a JSON record (changed, or a write cut short)');
        }
        if (
          typeof r !== 'object' ||
          r === null ||
          typeof r.seq !== 'number' ||
          typeof r.time !== 'string' ||
          typeof r.prev !== 'string' ||
          typeof r.event !== 'object' ||
          r.event === null
        ) {
          return fail('not an audit record (fields missing or of the wrong type)', typeof r?.seq === 'number' ? r.seq : undefined);
        }
        if (!safeEqualHex(r.mac, macOf(key, r))) return fail('its MAC does not match: the record was changed (or written with another key)', r.seq);
        // The line as written, byte for byte: the next record's prev hashes exactly this.
        if (line !== JSON.stringify({ seq: r.seq, time: r.time, prev: r.prev, event: r.event, mac: r.mac }))
          return fail('the line was rewritten (not as the writer wrote it)', r.seq);
        if (r.prev !== prev) {
          return fail(
            r.seq === seq + 1
              ? 'its prev hash does not match the record before it: that record was changed'
              : `it follows seq ${seq}${seq === 0 ? ' (the start of the chain)' : ''}: record(s) before it were removed or reordered`,
            r.seq,
          );
        }
        if (r.seq !== seq + 1) return fail(`seq ${r.seq} where ${seq + 1} was expected: records were removed or reordered`, r.seq);
        seq = r.seq;
        prev = sha256(line);
        records++;
        checked++;
      }
    }
    chains.push({ chain, records, files: files.length, lastSeq: seq, lastHash: prev });
  }
  return { ok: true, chains };
}

/** Every record of every chain in `dir`, in file order (not checked: `verifyChains` does that). */
export function readRecords(dir: string): Array<AuditRecord & { chain: string; file: string }> {
  const out: Array<AuditRecord & { chain: string; file: string }> = [];
  for (const [chain, files] of chainFiles(dir)) {
    for (const f of files) {
      for (const line of readFileSync(join(dir, f.file), 'utf8').split('\n')) {
        if (line === '') continue;
        try {
          out.push({ ...(JSON.parse(line) as AuditRecord), chain, file: f.file });
        } catch {
          // `verify` names it; a reader skips it.
        }
      }
    }
  }
  return out;
}
