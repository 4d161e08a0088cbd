/**
 * Benchmark (not a test): what one turn costs the transcript store as a conversation grows: load
 * (a cached conversation: its revision only), two messages appended, one checkpoint, on SQLite.
 * Prints turns/s and store round trips per turn around turn 3 and turn 3,000.
 *
 * Run: node --import ./test/helpers/register-ts.mjs bench/transcript-turns.ts [--turns 3000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConversationStore } from '../agent/context/conversation-store.js';
import type { Message } from '../agent/context/messages.js';
import { openSqliteStore } from '../agent/store/sqlite/index.js';
import type { TranscriptRepo } from '../agent/store/types.js';

const args = process.argv.slice(2);
const turns = Number(args[args.indexOf('--turns') + 1] ?? 3000) || 3000;
const dir = mkdtempSync(join(tmpdir(), 'gh-bench-transcript-'));
const store = await openSqliteStore({ path: join(dir, 'store.sqlite'), log: () => undefined });
let trips = 0;
const t = store.transcripts;
const counted: TranscriptRepo = { ...t, revision: (c) => (trips++, t.revision(c)), load: (c) => (trips++, t.load(c)), write: (w) => (trips++, t.write(w)) };
const cs = new ConversationStore({ transcripts: counted, checkpoint: (c) => (trips++, store.checkpoint(c)) });
const text = 'a reply of a typical length, with a sentence or two of content in it. '.repeat(4);
const user = (i: number): Message => ({ role: 'user', content: [{ type: 'text', text: `question ${i}` }] });
const asst = (i: number): Message => ({ role: 'assistant', content: [{ type: 'text', text: `${i} ${text}` }] });

async function turn(i: number): Promise<void> {
  const conv = (await cs.load('bench')) ?? { agent: 'a', messages: [], state: {}, updatedAt: 0 };
  conv.messages.push(user(i), asst(i));
  await cs.checkpoint('bench', conv, {});
}

const windows: Array<{ at: number; perSec: number; trips: number; cpuMs: number }> = [];
const window = 50;
for (let i = 1; i <= turns; ) {
  const measure = i === 1 || i + window > turns;
  const start = performance.now();
  const cpu = process.cpuUsage();
  const before = trips;
  const n = measure ? window : Math.min(500, turns - window - i + 1);
  for (let k = 0; k < n; k++) await turn(i + k);
  if (measure) {
    const ms = performance.now() - start;
    const c = process.cpuUsage(cpu);
    windows.push({ at: i, perSec: Math.round((n / ms) * 1000), trips: (trips - before) / n, cpuMs: (c.user + c.system) / 1000 / n });
  }
  i += n;
}
for (const w of windows)
  console.log(
    `turns ${w.at}-${w.at + window - 1}: ${w.perSec} turns/s, ${w.trips} store round trips per turn, ${w.cpuMs.toFixed(3)} ms CPU per turn (main thread)`,
  );
const [first, last] = [windows[0]!, windows[windows.length - 1]!];
console.log(`ratio turn ~${last.at} / turn ~${first.at}: ${(first.perSec / last.perSec).toFixed(2)}x time per turn`);
await store.close();
rmSync(dir, { recursive: true, force: true });
