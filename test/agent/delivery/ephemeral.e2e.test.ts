/**
 * Issue 24, `approvalDelivery: ephemeral`: on Slack, where the requester is a bound approver who may
 * approve their own request, the card is shown only to them (chat.postEphemeral) and replaced through
 * the click's response_url; otherwise, and on Telegram, it is posted in the conversation saying why.
 * Real Bolt against the fake Slack, real grammy against the fake Bot API.
 */
import { TOKEN as TG_TOKEN } from '../../adapters/telegram/helpers.js';
import type { FakeSlack } from '../../fakes/slack.js';
import { startFakeTelegram, type FakeChat, type FakeTelegram, type FakeUser } from '../../fakes/telegram.js';
import { waitFor } from '../../helpers/wait.js';
import { DeliveryBed, slackButtons, slackPlain, startSlack, writePlan } from './boot.js';

const bed = new DeliveryBed();
beforeEach(() => bed.setUp());
afterEach(() => bed.tearDown());

describe('Slack', () => {
  let slack: FakeSlack;
  beforeEach(async () => {
    slack = await startSlack();
  });
  afterEach(async () => {
    await slack.close();
  });
  const start = (approvers: string) =>
    bed.bootSlack(
      slack,
      bed.yaml({ approvers: `{ slack: [${approvers}] }`, delivery: 'ephemeral', access: '  slack: { users: ["U0ADA", "U0BOB"], channels: ["C0TEAM"] }' }),
    );
  const plain = slackPlain;

  test('the requester is the approver: only they see the card; their click replaces it through response_url; a stranger’s click and a replay change nothing', async () => {
    await start('"U0BOB"');
    expect(bed.logged).toContain('agent default: approvalDelivery: slack: ephemeral to the requester when they are an approver, else here');
    bed.queue.push(writePlan, { text: 'Written.' });
    const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> write the plan` });
    const card = await waitFor('the ephemeral card', () => slack.ephemerals.find((e) => e.user === 'U0BOB' && slackButtons(e).length > 0));
    expect(card.threadTs).toBe(ts);
    expect(slack.messages.filter((m) => slackButtons(m).length > 0)).toHaveLength(0); // nothing in the channel
    const approve = slackButtons(card).find((b) => b.label.startsWith('Approve'))!.value;

    // Ada is no approver (Slack would not even show her Bob's ephemeral): refused, nothing changes.
    await slack.clickEphemeral({ user: 'U0ADA', ephemeral: card, value: approve });
    const refusal = await waitFor('the notice to Ada', () => slack.ephemerals.find((e) => e.user === 'U0ADA'));
    expect(refusal.text).toMatch(/Only a bound approver can decide this/);
    expect(card.edits).toHaveLength(0);
    expect(bed.planWritten()).toBeUndefined();

    await slack.clickEphemeral({ user: 'U0BOB', ephemeral: card, value: approve });
    await waitFor('the answer', () => slack.visible('C0TEAM', ts).some((m) => m.text === 'Written.'));
    expect(bed.planWritten()).toBe('# plan\n');
    await waitFor('the card replaced', () => card.edits.length === 1);
    expect(slackButtons(card)).toHaveLength(0);
    expect(plain(card)).toMatch(/Approved once by u0bob \(U0BOB\)/);

    // A replay of the old button: "already decided", and it ran once.
    const notices = slack.ephemerals.length;
    await slack.clickEphemeral({ user: 'U0BOB', ephemeral: { ...card, blocks: card.edits[0]!.blocks }, value: approve });
    const again = await waitFor('the replay notice', () => slack.ephemerals.slice(notices).find((e) => e.user === 'U0BOB'));
    expect(again.text).toMatch(/Already decided/);
    expect(bed.audit().filter((e) => e['event'] === 'approval_decided')).toHaveLength(1);
  });

  test('the requester may not approve (two approvers bound): the card is posted in the thread, saying why', async () => {
    await start('"U0ADA", "U0BOB"');
    bed.queue.push(writePlan, { text: 'Written.' });
    const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> write the plan` });
    const card = await waitFor('the thread card', () => slack.visible('C0TEAM', ts).find((m) => slackButtons(m).length > 0));
    expect(plain(card)).toMatch(/Posted in the conversation: the requester may not approve their own request/);
    expect(slack.ephemerals.filter((e) => slackButtons(e).length > 0)).toHaveLength(0);
    await slack.click({ user: 'U0ADA', message: card, value: slackButtons(card)[0]!.value });
    await waitFor('the answer', () => slack.visible('C0TEAM', ts).some((m) => m.text === 'Written.'));
  });

  test('the requester is no approver: posted in the thread, saying why', async () => {
    await start('"U0ADA"');
    bed.queue.push(writePlan, { text: 'Written.' });
    const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> write the plan` });
    const card = await waitFor('the thread card', () => slack.visible('C0TEAM', ts).find((m) => slackButtons(m).length > 0));
    expect(plain(card)).toMatch(/Posted in the conversation: the requester is not a bound approver/);
    await slack.click({ user: 'U0ADA', message: card, value: slackButtons(card).find((b) => b.label === 'Deny')!.value });
    await waitFor('the card decided', () => /Denied by u0ada/.test(plain(card)));
  });
});

describe('Telegram', () => {
  const bob: FakeUser = { id: 502, first_name: 'Bob' };
  const group: FakeChat = { id: -100200, type: 'supergroup', title: 'Team' };
  let tg: FakeTelegram;
  beforeEach(async () => {
    tg = await startFakeTelegram({ token: TG_TOKEN });
  });
  afterEach(async () => {
    await tg.close();
  });

  test('ephemeral is Slack only: the start log says so and the card is posted in the group, saying why', async () => {
    await bed.boot(bed.yaml({ approvers: '{ telegram: ["502"] }', delivery: 'ephemeral', access: '  telegram: { users: ["502"], chats: ["-100200"] }' }), {
      TELEGRAM_BOT_TOKEN: TG_TOKEN,
      TELEGRAM_API_ROOT: tg.apiRoot,
    });
    expect(bed.logged).toContain('agent default: approvalDelivery: telegram: here (ephemeral is Slack only)');
    bed.queue.push(writePlan, { text: 'Wrote plan.md.' });
    await tg.sendText({ chat: group, from: bob, text: `@${tg.bot.username} write the plan` });
    const card = await waitFor('the card in the group', () => tg.visible(-100200).find((m) => m.replyMarkup !== undefined));
    expect(card.plain).toMatch(/Posted in the conversation: Telegram has no ephemeral messages/);
    await tg.press(-100200, card.messageId, 0, bob);
    await tg.waitFor(() => tg.visible(-100200).some((m) => m.plain === 'Wrote plan.md.'), 10_000, 'the answer');
  });
});
