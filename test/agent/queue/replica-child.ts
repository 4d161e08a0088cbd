/**
 * A replica of the shared turn queue tests (./pgboss.e2e.test.ts): opens the PostgreSQL store argv[2]
 * and its pg-boss TurnQueue as owner argv[3] with capacity argv[4], and prints one JSON line per
 * event. Its handler stands for a run: a turn `hold:<name>` (or `park:<name>`, parked on a human)
 * waits for "release <id>" on stdin when this replica is <name> (a parked one stores a run record
 * first, which a replica taking it over continues: `takeover`, printed, the record dropped); then it
 * appends the turn's id to the transcript and drops the turn in ONE fenced checkpoint, checks its
 * fence, and "posts". "send <conversation> <id> <text>" stores a turn through this replica's queue
 * (the owner fast path); "exclusive <conversation> <key>" runs an exclusive task there that prints
 * `exclusive-running` and waits for "release <key>"; "idle" prints `idling`, then `idle` once queue.idle() resolves; "close <ms>"
 * prints `closing`, closes the queue with that grace and exits 0.
 */
import { createInterface } from 'node:readline';
import { parseTurn } from '../../../agent/run/turn.js';
import { openPostgresStore } from '../../../agent/store/postgres/index.js';
import { FencedError, type Fence } from '../../../agent/store/types.js';

const [url, name, capacity] = process.argv.slice(2) as [string, string, string];
const out = (e: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ replica: name, ...e })}\n`);
const store = await openPostgresStore({ url, log: () => undefined });
const parked = new Set<string>();
const releases = new Map<string, () => void>();
const queue = await store.turnQueue!({
  owner: name,
  parse: parseTurn,
  capacity: Number(capacity),
  settled: (c) => parked.has(c),
  log: (level, msg) => out({ ev: 'log', level, msg }),
  tuning: { superviseSeconds: 1, pollMs: 500 },
});
const takeover = async (conversation: string, record: unknown, delivery: { fence: Fence }) => {
  out({ ev: 'takeover', conversation, runId: (record as { runId?: string }).runId, epoch: delivery.fence.epoch });
  await store.runs.dropRecord(conversation, delivery.fence);
};
queue.start(
  async (conversation, q, delivery) => {
    const fence = delivery!.fence;
    out({ ev: 'start', id: q.id, conversation, epoch: fence.epoch });
    const [mode, who] = q.turn.text.split(':');
    if (who === name && (mode === 'hold' || mode === 'park')) {
      if (mode === 'park') {
        await store.runs.saveRecord(conversation, { runId: q.id }, fence);
        parked.add(conversation);
      }
      out({ ev: 'holding', id: q.id });
      await new Promise<void>((r) => releases.set(q.id, r));
      parked.delete(conversation);
    }
    try {
      const t = await store.transcripts.load(conversation);
      const seq = (t?.rows.at(-1)?.seq ?? 0) + 1;
      await store.checkpoint({
        fence,
        transcript: {
          conversation,
          agent: 'a',
          state: {},
          changes: [{ op: 'append', rows: [{ seq, message: q.id }] }],
          now: Date.now(),
          expectRevision: t?.revision ?? 0,
        },
        dropTurn: { conversation, id: q.id },
        ...(mode === 'park' && who === name ? { record: { conversation, record: null } } : {}),
      });
      if (!(await store.leases.holds(fence))) throw new FencedError(fence, (await store.leases.current(conversation))?.epoch);
      out({ ev: 'posted', id: q.id, conversation });
    } catch (err) {
      if (!(err instanceof FencedError)) throw err;
      process.stderr.write(`${err.message}: not writing or posting\n`);
      out({ ev: 'fenced', id: q.id, message: err.message });
    }
  },
  { takeover },
);
const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const [cmd, arg] = line.split(' ');
  if (cmd === 'release') releases.get(arg!)?.();
  if (cmd === 'send') {
    const [, conversation, id, text] = line.split(' ') as [string, string, string, string];
    const turn = { agentName: 'a', conversationKey: conversation, platform: 'console', sender: { id: 'u' }, text };
    void queue.enqueue(conversation, { id, turn }).then(
      () => out({ ev: 'sent', id }),
      (err: unknown) => out({ ev: 'send-failed', id, message: String(err) }),
    );
  }
  if (cmd === 'exclusive') {
    const [, conversation, key] = line.split(' ') as [string, string, string];
    const task = () =>
      new Promise<void>((r) => {
        releases.set(key, r);
        out({ ev: 'exclusive-running', id: key });
      });
    void queue.exclusive(conversation, task).then(() => out({ ev: 'exclusive-done', id: key }));
  }
  if (cmd === 'idle') {
    out({ ev: 'idling' });
    void queue.idle().then(() => out({ ev: 'idle' }));
  }
  if (cmd === 'close') {
    out({ ev: 'closing' });
    void queue.close(Number(arg)).then(async () => {
      out({ ev: 'closed' });
      rl.close();
      await store.close();
      process.exit(0);
    });
  }
});
out({ ev: 'ready' });
