/**
 * A soft spending limit's card when the bot crashes while it waits (issue 24 with issue 19's
 * restart): the turn had stored no run record yet (the card comes before its first model call), so
 * nothing will wait on that card again. The restart closes it, saying why, and the turn, still
 * queued, asks again with a card of its own; the old card's Approve changes nothing.
 *
 * A store one process uses (SQLite, opened exclusive): at its start no run is live anywhere, so every
 * card no stored run waits on is closed. On a store replicas share, a card with no run record may be
 * a live replica's and is left to expire (agent/run/runner.ts `exclusiveStore`).
 *
 * The budget: $0.05 soft per conversation. Each answer costs 1000 in + 1000 out on Sonnet 4.6
 * ($0.018): two fit, the third asks.
 */
import { type Harness, harnessOn, waitFor } from '../../helpers/harness.js';

const YAML = `
agents:
  default:
    model: claude-sonnet-4-6
    maxTokens: 1000
    workspace: "{{workspace}}"
    tier: read-only
    approvers: { console: [local] }
    approvalTimeoutMs: 600000
    budget:
      conversation: { usd: { soft: 0.05, hard: 1 } }
`;

const costly = (text: string) => ({ text, usage: { input_tokens: 1000, output_tokens: 1000 } });
const spendCards = (h: Harness) => h.adapter.cards.filter((c) => c.card.title.includes('Allow more spending'));

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('on sqlite', () => {
  test('a spending card held when the bot crashed is closed by the restart; the turn asks again', async () => {
    const g = (h = await harnessOn('sqlite').start({ yaml: YAML }));
    g.script(costly('answer 1'), costly('answer 2'), costly('answer 3'));
    await g.adapter.send('one');
    await waitFor('the first answer', () => g.adapter.answers()[0]);
    await g.adapter.send('two');
    await waitFor('the second answer', () => g.adapter.answers()[1]);
    await g.adapter.send('three');
    const old = await waitFor('the spending card', () => spendCards(g)[0]);

    await g.restart();
    // The queued turn runs again and asks with a new card; the old one is closed.
    const fresh = await waitFor('the new spending card', () => spendCards(g)[0]);
    expect(fresh.card.buttons.map((b) => b.token)).not.toEqual(old.card.buttons.map((b) => b.token));
    const click = await g.adapter.click(old, 'Approve once');
    expect(click.accepted).toBe(false);
    expect(click.notice).toContain('the bot restarted while this waited: nothing was done');
    expect(g.modelRequests()).toHaveLength(2);

    // The new card is the live one.
    expect((await g.adapter.click(fresh, 'Approve once')).accepted).toBe(true);
    await waitFor('the third answer', () => g.adapter.answers().find((a) => a.includes('answer 3')));
  }, 90_000);
});
