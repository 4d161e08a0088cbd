/**
 * Issue 24, "approvals that reach the approver": `approvalDelivery: dm | both` end to end through
 * the real start path, the real grammy against the fake Bot API and real Bolt against the fake
 * Slack. What each person sees: the card in the approver's direct messages, the status line in the
 * conversation and its outcome, the fallback when a DM cannot be sent, and the clicks on a DM card
 * that must change nothing (someone else's, a made-up token, a replay).
 */
import { TOKEN as TG_TOKEN } from '../../adapters/telegram/helpers.js';
import type { FakeSlack } from '../../fakes/slack.js';
import { startFakeTelegram, type FakeChat, type FakeTelegram, type FakeUser } from '../../fakes/telegram.js';
import { waitFor } from '../../helpers/wait.js';
import { DeliveryBed, slackButtons, slackPlain, startSlack, writePlan } from './boot.js';

const bed = new DeliveryBed();
beforeEach(() => bed.setUp());
afterEach(() => bed.tearDown());

describe('Telegram', () => {
  const ada: FakeUser = { id: 501, first_name: 'Ada' };
  const bob: FakeUser = { id: 502, first_name: 'Bob' };
  const group: FakeChat = { id: -100200, type: 'supergroup', title: 'Team' };
  let tg: FakeTelegram;
  beforeEach(async () => {
    tg = await startFakeTelegram({ token: TG_TOKEN });
  });
  afterEach(async () => {
    await tg.close();
  });
  const start = (delivery: string, extra = '') =>
    bed.boot(bed.yaml({ approvers: '{ telegram: ["501", "502"] }', delivery, extra, access: '  telegram: { users: ["501", "502"], chats: ["-100200"] }' }), {
      TELEGRAM_BOT_TOKEN: TG_TOKEN,
      TELEGRAM_API_ROOT: tg.apiRoot,
    });
  const groupTexts = () => tg.visible(-100200).map((m) => m.plain);

  test('dm: the card goes to the other approver’s private chat, the group gets a status line; a foreign, a forged and a replayed click change nothing', async () => {
    tg.addChat({ id: 501, type: 'private', first_name: 'Ada' }); // Ada has started the bot
    await start('dm');
    expect(bed.logged).toContain('agent default: approvalDelivery: telegram: Telegram direct messages');
    bed.queue.push(writePlan, { text: 'Wrote plan.md.' });
    await tg.sendText({ chat: group, from: bob, text: `@${tg.bot.username} write the plan` });

    const dmCard = await waitFor('the card in Ada’s DM', () => tg.visible(501).find((m) => m.replyMarkup !== undefined));
    expect(dmCard.plain).toMatch(/Asked in Telegram conversation telegram:-100200/);
    // Bob asked and two approvers are bound, so only Ada is messaged; the group has no buttons.
    expect(tg.sent.filter((m) => m.chatId === 502)).toHaveLength(0);
    const status = await waitFor('the status line', () =>
      tg.visible(-100200).find((m) => /Waiting for approval from Ada \(sent to their Telegram direct messages\)/.test(m.plain)),
    );
    expect(status.replyMarkup).toBeUndefined();
    expect(status.plain).toMatch(/sent to their Telegram direct messages/);

    // Bob presses Ada’s DM button (a forged callback: Telegram would never deliver it) -> refused.
    const data = dmCard.replyMarkup!.inline_keyboard.flat()[0]!.callback_data!;
    await tg.pressData(501, dmCard.messageId, data, bob);
    await tg.waitFor(() => tg.callbackAnswers.length === 1, 10_000, 'answer to Bob');
    expect(tg.callbackAnswers[0]!.text).toMatch(/Only a bound approver can decide this/);
    // A made-up token on the DM card -> refused.
    await tg.pressData(501, dmCard.messageId, `${data.slice(0, data.indexOf(':') + 1)}AAAAAAAAAAAAAAAAAAAAAAAA`, ada);
    await tg.waitFor(() => tg.callbackAnswers.length === 2, 10_000, 'answer to the forgery');
    expect(tg.callbackAnswers[1]!.text).toMatch(/no longer valid|not valid/);
    expect({ edits: dmCard.edits, now: dmCard.plain }).toEqual({ edits: [], now: dmCard.plain });
    expect(bed.planWritten()).toBeUndefined();

    // Ada approves in her DM: it runs, and both the DM card and the group's status line say so.
    await tg.press(501, dmCard.messageId, 0, ada);
    await tg.waitFor(() => groupTexts().includes('Wrote plan.md.'), 10_000, 'the answer');
    expect(bed.planWritten()).toBe('# plan\n');
    await tg.waitFor(() => /Approved once by Ada \(501\).*from Telegram direct messages/s.test(dmCard.plain), 10_000, 'decided DM card');
    expect(dmCard.replyMarkup).toBeUndefined();
    await tg.waitFor(() => /Approved once by Ada \(501\).*from Telegram direct messages/s.test(status.plain), 10_000, 'decided status line');

    // Replayed: the same button again (an old client still shows it) changes nothing.
    await tg.pressData(501, dmCard.messageId, data, ada);
    await tg.waitFor(() => tg.callbackAnswers.length === 4, 10_000, 'answer to the replay');
    expect(tg.callbackAnswers[3]!.text).toMatch(/Already decided/);
    const decided = bed.audit().filter((e) => e['event'] === 'approval_decided');
    expect(decided).toHaveLength(1);
    expect(decided[0]).toMatchObject({ by: '501', byPlatform: 'telegram', byConversation: 'telegram:501', outcome: 'approved' });
    expect(bed.audit()).toContainEqual(expect.objectContaining({ event: 'approval_refused', userId: '502', reason: 'not_approver' }));
  });

  test('dm: a tap on the first DM card while the others are still being sent is decided (the copy is recorded as it is posted)', async () => {
    tg.addChat({ id: 501, type: 'private', first_name: 'Ada' });
    tg.addChat({ id: 503, type: 'private', first_name: 'Cy' });
    await bed.boot(
      bed.yaml({
        approvers: '{ telegram: ["501", "502", "503"] }',
        delivery: 'dm',
        access: '  telegram: { users: ["501", "502", "503"], chats: ["-100200"] }',
      }),
      { TELEGRAM_BOT_TOKEN: TG_TOKEN, TELEGRAM_API_ROOT: tg.apiRoot },
    );
    bed.queue.push(writePlan, { text: 'Wrote plan.md.' });
    // Cy's DM is slowed down by a rate limit, so Ada's tap comes before the delivery is complete.
    tg.failNext('sendMessage', { error_code: 429, description: 'Too Many Requests: retry after 1', retry_after: 1 }, { chatId: 503 });
    await tg.sendText({ chat: group, from: bob, text: `@${tg.bot.username} write the plan` });
    const dmCard = await waitFor('the card in Ada’s DM', () => tg.visible(501).find((m) => m.replyMarkup !== undefined), { intervalMs: 1 });
    await tg.press(501, dmCard.messageId, 0, ada);
    await tg.waitFor(() => tg.callbackAnswers.length === 1, 10_000, 'answer to Ada');
    expect(tg.callbackAnswers[0]!.text).toBe('Approved.');
    await tg.waitFor(() => groupTexts().includes('Wrote plan.md.'), 10_000, 'the answer');
    const cyCard = await waitFor('Cy’s copy', () => tg.visible(503)[0]);
    await tg.waitFor(() => /Approved once by Ada/.test(cyCard.plain) && cyCard.replyMarkup === undefined, 10_000, 'Cy’s copy decided');
  });

  test('dm to someone who never started the bot: the group’s card says so and carries the buttons; nothing is lost', async () => {
    await start('dm');
    bed.queue.push(writePlan, { text: 'Wrote plan.md.' });
    await tg.sendText({ chat: group, from: bob, text: `@${tg.bot.username} write the plan` });
    const card = await waitFor('the card in the group', () => tg.visible(-100200).find((m) => m.replyMarkup !== undefined));
    expect(card.plain).toMatch(/Could not reach by direct message: 501 \(.*can't initiate conversation.*\)\. The card is posted here instead\./s);
    expect(tg.visible(501)).toHaveLength(0);
    await tg.press(-100200, card.messageId, 0, ada);
    await tg.waitFor(() => groupTexts().includes('Wrote plan.md.'), 10_000, 'the answer');
    await tg.waitFor(() => /Approved once by Ada/.test(card.plain), 10_000, 'decided card');
    expect(card.plain).not.toMatch(/direct messages\)/);
  });

  test('dm, nobody decides: the status line and the DM card both say it expired, and nothing ran', async () => {
    tg.addChat({ id: 501, type: 'private', first_name: 'Ada' });
    await start('dm', '\n    approvalTimeoutMs: 300');
    bed.queue.push(writePlan, { text: 'Not written.' });
    await tg.sendText({ chat: group, from: bob, text: `@${tg.bot.username} write the plan` });
    const dmCard = await waitFor('the DM card', () => tg.visible(501).find((m) => m.replyMarkup !== undefined));
    const status = await waitFor('the status line', () =>
      tg.visible(-100200).find((m) => /Waiting for approval from Ada \(sent to their Telegram direct messages\)/.test(m.plain)),
    );
    await tg.waitFor(() => /Expired without a decision/.test(status.plain) && /Expired without a decision/.test(dmCard.plain), 10_000, 'both expired');
    expect(dmCard.replyMarkup).toBeUndefined();
    expect(bed.planWritten()).toBeUndefined();
  });

  test('both: the card is in the group and in the DM; a decision in the group updates the DM copy too', async () => {
    tg.addChat({ id: 501, type: 'private', first_name: 'Ada' });
    await start('both');
    bed.queue.push(writePlan, { text: 'Wrote plan.md.' });
    await tg.sendText({ chat: group, from: bob, text: `@${tg.bot.username} write the plan` });
    const dmCard = await waitFor('the DM card', () => tg.visible(501).find((m) => m.replyMarkup !== undefined));
    const groupCard = await waitFor('the group card', () => tg.visible(-100200).find((m) => m.replyMarkup !== undefined));
    expect(groupCard.plain).toMatch(/Sent to the Telegram direct messages of Ada\./);
    // Bob, the requester, may not approve his own request, from the group either.
    await tg.press(-100200, groupCard.messageId, 0, bob);
    await tg.waitFor(() => tg.callbackAnswers.length === 1, 10_000, 'answer to Bob');
    expect(tg.callbackAnswers[0]!.text).toMatch(/You started this request/);
    await tg.press(-100200, groupCard.messageId, 0, ada);
    await tg.waitFor(() => groupTexts().includes('Wrote plan.md.'), 10_000, 'the answer');
    await tg.waitFor(() => /Approved once by Ada/.test(dmCard.plain) && dmCard.replyMarkup === undefined, 10_000, 'the DM copy decided');
    expect(dmCard.plain).not.toMatch(/from Telegram direct messages/);
    expect(bed.audit().find((e) => e['event'] === 'approval_decided')).not.toHaveProperty('byConversation');
  });
});

describe('Slack', () => {
  let slack: FakeSlack;
  beforeEach(async () => {
    slack = await startSlack();
    slack.setUserName('U0ADA', 'ada');
  });
  afterEach(async () => {
    await slack.close();
  });
  const start = (delivery: string) =>
    bed.bootSlack(
      slack,
      bed.yaml({ approvers: '{ slack: ["U0ADA", "U0BOB"] }', delivery, access: '  slack: { users: ["U0ADA", "U0BOB"], channels: ["C0TEAM"] }' }),
    );
  const plain = slackPlain;

  test('dm: the card goes to the approver’s DM channel (conversations.open), the thread gets a status line with the outcome; Bob’s click on it is refused', async () => {
    await start('dm');
    bed.queue.push(writePlan, { text: 'Written.' });
    const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> write the plan` });
    const dmChannel = await waitFor('the DM channel', () => slack.dms.get('U0ADA'));
    expect(slack.dms.has('U0BOB')).toBe(false);
    const dmCard = await waitFor('the DM card', () => slack.visible(dmChannel).find((m) => slackButtons(m).length > 0));
    const status = await waitFor('the status line', () =>
      slack.visible('C0TEAM', ts).find((m) => /Waiting for approval from @ada \(sent to their Slack direct messages\)/.test(plain(m))),
    );
    expect(slackButtons(status)).toHaveLength(0);
    const approve = slackButtons(dmCard).find((b) => b.label.startsWith('Approve'))!.value;

    await slack.click({ user: 'U0BOB', message: dmCard, value: approve });
    const notice = await waitFor('the notice to Bob', () => slack.ephemerals.find((e) => e.user === 'U0BOB'));
    expect(notice.text).toMatch(/Only a bound approver can decide this/);
    expect(bed.planWritten()).toBeUndefined();
    expect(slackButtons(dmCard).length).toBeGreaterThan(0);

    await slack.click({ user: 'U0ADA', message: dmCard, value: approve });
    await waitFor('the answer', () => slack.visible('C0TEAM', ts).some((m) => m.text === 'Written.'));
    expect(bed.planWritten()).toBe('# plan\n');
    await waitFor('the decided status line', () => /Approved once by u0ada \(U0ADA\).*from Slack direct messages/.test(plain(status)));
    expect(slackButtons(dmCard)).toHaveLength(0);
    expect(plain(dmCard)).toMatch(/Approved once by u0ada/);
    expect(bed.audit().find((e) => e['event'] === 'approval_decided')).toMatchObject({ byPlatform: 'slack', byConversation: `slack:T0TEAM:${dmChannel}` });
  });

  test('dm without the im:write scope: the card is posted in the thread, naming the missing scope', async () => {
    slack.failNext('conversations.open', { error: 'missing_scope', needed: 'im:write' });
    await start('dm');
    bed.queue.push(writePlan, { text: 'Written.' });
    const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> write the plan` });
    const card = await waitFor('the thread card', () => slack.visible('C0TEAM', ts).find((m) => slackButtons(m).length > 0));
    expect(plain(card)).toMatch(/Could not reach by direct message: @ada \(conversations\.open: missing_scope \(needs im:write\)\)/);
    await slack.click({ user: 'U0ADA', message: card, value: slackButtons(card)[0]!.value });
    await waitFor('the answer', () => slack.visible('C0TEAM', ts).some((m) => m.text === 'Written.'));
  });

  test('both: either card decides; a replay on the other copy is refused and changes nothing', async () => {
    await start('both');
    bed.queue.push(writePlan, { text: 'Written.' });
    const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> write the plan` });
    const dmChannel = await waitFor('the DM channel', () => slack.dms.get('U0ADA'));
    const dmCard = await waitFor('the DM card', () => slack.visible(dmChannel).find((m) => slackButtons(m).length > 0));
    const here = await waitFor('the thread card', () => slack.visible('C0TEAM', ts).find((m) => slackButtons(m).length > 0));
    const deny = slackButtons(dmCard).find((b) => b.label === 'Deny')!.value;
    const hereApprove = slackButtons(here).find((b) => b.label.startsWith('Approve'))!.value;

    await slack.click({ user: 'U0ADA', message: dmCard, value: deny });
    await waitFor('both copies decided', () => slackButtons(here).length === 0 && /Denied by u0ada/.test(plain(here)) && slackButtons(dmCard).length === 0);
    // The thread card's Approve, clicked after the DM's Deny (kept from before the update): nothing changes.
    const edits = here.edits.length;
    await slack.click({ user: 'U0ADA', message: { ...here, blocks: here.edits[0]!.blocks }, value: hereApprove });
    const notice = await waitFor('the replay notice', () => slack.ephemerals.find((e) => e.user === 'U0ADA' && /Already decided/.test(e.text)));
    expect(notice.text).toMatch(/Denied by u0ada/);
    expect(here.edits.length).toBe(edits);
    expect(bed.planWritten()).toBeUndefined();
    expect(bed.audit().filter((e) => e['event'] === 'approval_decided')).toHaveLength(1);
  });
});
