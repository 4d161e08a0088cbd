/**
 * What one turn costs the store on PostgreSQL, through the real runner and its owner lane
 * (agent/store/postgres/owner-lanes.ts): the turn stored and the conversation taken in one
 * statement that is also the lane's first read, ONE fenced checkpoint that holds the answer's
 * outbox, and one read that lets the conversation go and drops the posted outbox. The typed-answer
 * check reads nothing: no request of the conversation was announced (agent/approvals/open-requests.ts). After the answer nothing is left that a replica taking the conversation over would post again.
 */
import { agentYaml, Harness, waitFor } from '../../helpers/harness.js';
import { storeRoundTrips } from '../../../agent/store/round-trips.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

test('a turn on PostgreSQL: three statements, and no posted outbox left behind', async () => {
  h = await Harness.start({ engine: 'postgres', yaml: agentYaml('tools: []') });
  const key = 'console:cost';
  // Until signals flow, the typed-answer check reads the store (it cannot hear announcements yet).
  await h.store.signals.ready();
  const counts: number[] = [];
  for (let i = 0; i < 3; i++) {
    h.script({ text: `answer ${i}` });
    const before = storeRoundTrips.count;
    await h.adapter.send(`question ${i}`, { conversation: 'cost' });
    // In-process state only (no statement of its own): the lane let the conversation go.
    await waitFor('the lane to let go', () => h!.adapter.answers(key).length === i + 1 && !h!.gh.runner.isBusy(key), 30_000);
    counts.push(storeRoundTrips.count - before);
    expect(h.adapter.answers(key).at(-1)).toBe(`answer ${i}`);
    // The answer's outbox went with the read that let the conversation go.
    expect(await h.store.runs.records()).toEqual([]);
    expect(await h.store.runs.queuedTurns()).toEqual([]);
  }
  // The first turn also reads the (new) transcript and seeds the open-requests index; every later
  // one: store + take, the checkpoint, the read that lets go.
  expect(counts.slice(1)).toEqual([3, 3]);
  expect((await h.store.transcripts.load(key))?.rows).toHaveLength(6);
}, 120_000);
