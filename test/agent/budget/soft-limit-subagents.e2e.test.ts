/**
 * Two sub-agents (spawn_subagent, run in parallel) crossing the conversation's soft limit at once,
 * on Telegram through the real start path: ONE card for both, and after the approval both run and
 * the parent answers. The fake model answers by who asks (the parent, or the sub-agent of task A or
 * B); every call costs $0.018 and reserves about $0.015.
 */
import { join } from 'node:path';
import type { RecordedRequest } from '../../fakes/anthropic.js';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/telegram.js';
import { BotE2e } from '../../helpers/bot-e2e.js';
import { waitFor } from '../../helpers/wait.js';
import { TOKEN } from '../../adapters/telegram/helpers.js';

const ada = { id: 501, first_name: 'Ada' };
const dm = { id: 501, type: 'private' as const, first_name: 'Ada' };
const usage = { input_tokens: 1000, output_tokens: 1000 };

let h: BotE2e;
let tg: FakeTelegram;
afterEach(async () => {
  await h.stopBot();
  await tg.close();
  await h.close();
});

test('two sub-agents over the soft limit at once share one card; approved, both run', async () => {
  h = await BotE2e.start({
    engine: 'sqlite',
    prefix: 'gh-soft-sub-',
    yaml: (d) => `
agents:
  default:
    model: claude-sonnet-4-6
    maxTokens: 1000
    tools: [spawn_subagent]
    tier: low-risk
    workspace: "${join(d, 'ws')}"
    approvers: { telegram: ["501"] }
    requesterMayApprove: true
    budget:
      conversation: { usd: { soft: 0.03 } }
access:
  telegram: { users: ["501"] }
`,
  });
  const text = (r: RecordedRequest) => JSON.stringify((r.body as { messages: unknown[] }).messages);
  h.model.setHandler((r) => {
    const t = text(r);
    const sub = JSON.stringify((r.body as { system?: unknown }).system ?? '').includes('You are a sub-agent');
    if (sub) return { text: t.includes('Task A') ? 'A done' : 'B done', usage };
    if (!t.includes('tool_result'))
      return {
        toolUses: [
          { name: 'spawn_subagent', input: { task: 'Task A: say A.' } },
          { name: 'spawn_subagent', input: { task: 'Task B: say B.' } },
        ],
        usage,
      };
    return { text: 'both done', usage };
  });
  tg = await startFakeTelegram({ token: TOKEN });
  await h.boot({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: tg.apiRoot }, { log: false });
  const cards = () => tg.visible(501).filter((m) => (m.replyMarkup?.inline_keyboard.flat() ?? []).length > 0);
  const press = async (label: string) => {
    const card = cards()[0]!;
    await tg.press(
      501,
      card.messageId,
      card.replyMarkup!.inline_keyboard.flat().findIndex((b) => b.text.startsWith(label)),
      ada,
    );
  };

  await tg.sendText({ chat: dm, from: ada, text: 'run both' });
  // The parent's call ($0.018) fits; each sub-agent's would pass $0.03: one card for the two.
  await waitFor('the card', () => cards().length === 1);
  expect(cards()[0]!.plain).toContain('This conversation has spent $0.02 of $0.03; allow $0.03 more?');
  const asked = h.model.requests.length;
  expect(asked).toBe(1);
  await press('Approve once');
  // Both sub-agents run ($0.054); the parent's answer then passes $0.06 and asks again.
  await waitFor('the next card', () => cards().length === 1 && cards()[0]!.plain.includes('$0.05 of $0.06'));
  expect(h.model.requests.filter((r) => JSON.stringify((r.body as { system?: unknown }).system ?? '').includes('You are a sub-agent'))).toHaveLength(2);
  expect(tg.visible(501).filter((m) => m.plain.includes('Allow more spending?'))).toHaveLength(2);
  await press('Approve once');
  await waitFor('the answer', () => tg.visible(501).some((m) => m.plain.includes('both done')));
});
