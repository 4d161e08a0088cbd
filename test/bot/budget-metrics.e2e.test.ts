/**
 * /metrics shows spend and budget refusals: a real bot (fake Telegram and Anthropic behind the real
 * clients) whose conversation limit is passed by the fake model's usage numbers; the next message is
 * refused, the user sees which limit, and the scrape counts the spend by agent and the refusal by scope.
 */
import { waitFor } from '../helpers/wait.js';
import { owner, ownerDm, startTelemetryBot, type TelemetryBot } from './telemetry-bot.js';

let t: TelemetryBot | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const sample = (text: string, line: string): number | undefined => {
  const hit = text.split('\n').find((l) => l.startsWith(`${line} `));
  return hit === undefined ? undefined : Number(hit.slice(line.length + 1));
};

test('a run over the conversation limit is refused and counted by scope; spend is counted by agent and kind', async () => {
  t = await startTelemetryBot({}, ['    budget: { conversation: { usd: 1 } }']);
  // One call with 100,000 output tokens: more than $1 once settled (a small input, so no compaction call).
  t.model.setHandler(() => ({ text: 'Hello Ada.', usage: { input_tokens: 1000, output_tokens: 100_000 } }));
  const texts = () => t!.tg.visible(ownerDm.id).map((m) => m.plain);
  await t.tg.sendText({ chat: ownerDm, from: owner, text: 'hello' });
  await t.tg.waitFor(() => texts().includes('Hello Ada.'), 10_000, 'first answer');
  await t.tg.sendText({ chat: ownerDm, from: owner, text: 'again' });
  await t.tg.waitFor(() => texts().some((x) => x.includes('spending limit is reached')), 10_000, 'refusal');
  expect(texts().find((x) => x.includes('spending limit'))).toMatch(/this conversation has spent \$\d+\.\d\d of \$1\.00 \(conversation, usd\)/);
  // The refused call never reached the model (the other requests are the bot's own side calls, e.g. a title).
  const turns = t.model.requests.filter((r) => JSON.stringify(r.body).includes('"again"'));
  expect(turns).toHaveLength(0);

  const url = `${t.url}/metrics`;
  const text = await waitFor('the refusal counted', async () => {
    const body = await (await fetch(url)).text();
    return sample(body, 'gatehouse_budget_refusals_total{scope="conversation"}') === 1 ? body : undefined;
  });
  expect(sample(text, 'gatehouse_agent_spend_total{agent="default",kind="tokens"}')).toBe(101_000);
  expect(sample(text, 'gatehouse_agent_spend_total{agent="default",kind="usd"}')).toBeGreaterThan(1);
  expect(sample(text, 'gatehouse_budget_refusals_total{scope="agent_day"}')).toBeUndefined();
}, 120_000);
