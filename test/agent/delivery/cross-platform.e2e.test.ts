/**
 * Issue 24, cross-platform approvers: `approvalDelivery: { dm: telegram }` / `{ both: telegram }` on
 * an agent serving Slack. One bot with both platforms through the real start path: real Bolt against
 * the fake Slack, real grammy against the fake Bot API. A Slack conversation's card reaches the team
 * lead's Telegram private chat; the decision, who made it and where, shows in both places and in the
 * audit; a click there by anyone else changes nothing.
 */
import { TOKEN as TG_TOKEN } from '../../adapters/telegram/helpers.js';
import type { FakeSlack } from '../../fakes/slack.js';
import { startFakeTelegram, type FakeTelegram, type FakeUser } from '../../fakes/telegram.js';
import { waitFor } from '../../helpers/wait.js';
import { DeliveryBed, slackButtons, slackPlain, startSlack, writePlan } from './boot.js';

const bed = new DeliveryBed();
const lead: FakeUser = { id: 501, first_name: 'Lena' };
const mallory: FakeUser = { id: 777, first_name: 'Mallory' };
let slack: FakeSlack;
let tg: FakeTelegram;

beforeEach(async () => {
  await bed.setUp();
  slack = await startSlack();
  tg = await startFakeTelegram({ token: TG_TOKEN });
  tg.addChat({ id: 501, type: 'private', first_name: 'Lena' }); // Lena has started the bot on her phone
});
afterEach(async () => {
  await slack.close();
  await tg.close();
  await bed.tearDown();
});

const start = (delivery: string) =>
  bed.bootSlack(
    slack,
    bed.yaml({
      approvers: '{ slack: ["U0ADA"], telegram: ["501"] }',
      delivery,
      access: '  slack: { users: ["U0ADA", "U0BOB"], channels: ["C0TEAM"] }\n  telegram: { users: ["501"], chats: [] }',
    }),
    { TELEGRAM_BOT_TOKEN: TG_TOKEN, TELEGRAM_API_ROOT: tg.apiRoot },
  );
const plain = slackPlain;

test('{ dm: telegram }: a Slack request is approved from Telegram; both places show who decided and where; a stranger’s tap changes nothing', async () => {
  await start('{ dm: telegram }');
  expect(bed.logged).toContain('slack: Telegram direct messages');
  bed.queue.push(writePlan, { text: 'Written.' });
  const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> write the plan` });
  const dmCard = await waitFor('the card in Lena’s Telegram', () => tg.visible(501).find((m) => m.replyMarkup !== undefined));
  expect(dmCard.plain).toMatch(new RegExp(`Asked in Slack conversation slack:T0TEAM:C0TEAM:${ts.replace('.', '\\.')}`));
  const status = await waitFor('the Slack status line', () =>
    slack.visible('C0TEAM', ts).find((m) => /Waiting for approval from Lena \(sent to their Telegram direct messages\)/.test(plain(m))),
  );
  expect(plain(status)).toMatch(/sent to their Telegram direct messages/);
  expect(slack.messages.filter((m) => slackButtons(m).length > 0)).toHaveLength(0); // no buttons anywhere on Slack

  // Mallory forges a tap on Lena's card (Telegram would not deliver it): refused, nothing runs.
  const data = dmCard.replyMarkup!.inline_keyboard.flat()[0]!.callback_data!;
  await tg.pressData(501, dmCard.messageId, data, mallory);
  await tg.waitFor(() => tg.callbackAnswers.length === 1, 10_000, 'answer to Mallory');
  expect(tg.callbackAnswers[0]!.text).toMatch(/Only a bound approver can decide this/);
  expect(bed.planWritten()).toBeUndefined();
  expect(bed.audit()).toContainEqual(expect.objectContaining({ event: 'approval_refused', platform: 'telegram', userId: '777', reason: 'not_approver' }));

  await tg.press(501, dmCard.messageId, 0, lead);
  await waitFor('the answer in Slack', () => slack.visible('C0TEAM', ts).some((m) => m.text === 'Written.'));
  expect(bed.planWritten()).toBe('# plan\n');
  await waitFor('the Slack status line decided', () => /Approved once by Lena \(501\).*from Telegram direct messages/.test(plain(status)));
  await tg.waitFor(() => /Approved once by Lena \(501\).*from Telegram direct messages/s.test(dmCard.plain), 10_000, 'the Telegram card decided');
  expect(dmCard.replyMarkup).toBeUndefined();
  expect(bed.audit().filter((e) => e['event'] === 'approval_decided')).toEqual([
    expect.objectContaining({ conversation: `slack:T0TEAM:C0TEAM:${ts}`, by: '501', byName: 'Lena', byPlatform: 'telegram', byConversation: 'telegram:501' }),
  ]);
});

test('{ both: telegram }: the Slack approver decides in the thread; the Telegram copy shows it, and a later tap there is refused', async () => {
  await start('{ both: telegram }');
  bed.queue.push(writePlan, { text: 'Written.' });
  const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> write the plan` });
  const dmCard = await waitFor('the Telegram card', () => tg.visible(501).find((m) => m.replyMarkup !== undefined));
  const here = await waitFor('the Slack card', () => slack.visible('C0TEAM', ts).find((m) => slackButtons(m).length > 0));
  expect(plain(here)).toMatch(/Sent to the Telegram direct messages of Lena/);
  const data = dmCard.replyMarkup!.inline_keyboard.flat()[2]!.callback_data!; // Deny, kept from before the update

  await slack.click({ user: 'U0ADA', message: here, value: slackButtons(here).find((b) => b.label.startsWith('Approve'))!.value });
  await waitFor('the answer', () => slack.visible('C0TEAM', ts).some((m) => m.text === 'Written.'));
  await tg.waitFor(() => /Approved once by u0ada \(U0ADA\)/.test(dmCard.plain) && dmCard.replyMarkup === undefined, 10_000, 'the Telegram copy decided');

  await tg.pressData(501, dmCard.messageId, data, lead);
  await tg.waitFor(() => tg.callbackAnswers.length === 1, 10_000, 'answer to the late tap');
  expect(tg.callbackAnswers[0]!.text).toMatch(/Already decided: Approved once by u0ada/);
  expect(bed.audit().filter((e) => e['event'] === 'approval_decided')).toEqual([expect.objectContaining({ by: 'U0ADA', byPlatform: 'slack' })]);
});
