/**
 * Issue 24's `approvalDelivery: dm` on Discord: real discord.js against the fake Discord (REST and
 * gateway). The card reaches the other approver's DM channel (POST /users/@me/channels), the thread
 * gets the status line and its outcome; another user's click on the DM card changes nothing; a user
 * whose DMs refuse the bot (50007) gets the card in the thread instead.
 */
import { discordToPlain } from '../../../adapters/discord/markdown.js';
import { startFakeDiscord, type FakeDiscord, type FakeDiscordMessage } from '../../fakes/discord.js';
import { waitFor } from '../../helpers/wait.js';
import { DeliveryBed, writePlan } from './boot.js';

const TOKEN = 'OTAwMDAwMDAwMDAwMDAwMDAx.GfakeX.fakeDiscordBotTokenValue0123456789';
const GUILD = '700000000000000001';
const TEAM = '700000000000000010';
const ADA = { id: '600000000000000001', name: 'Ada' };
const BOB = { id: '600000000000000002', name: 'Bob' };
const EVE = { id: '600000000000000009', name: 'Eve' };

const bed = new DeliveryBed();
let discord: FakeDiscord;
beforeEach(async () => {
  await bed.setUp();
  discord = await startFakeDiscord({ token: TOKEN, guilds: [{ id: GUILD, channels: [TEAM], roles: [] }], users: [ADA, BOB, EVE] });
});
afterEach(async () => {
  await bed.tearDown();
  await discord.close();
});

const start = () =>
  bed.boot(
    bed.yaml({
      approvers: `{ discord: ["${ADA.id}", "${BOB.id}"] }`,
      delivery: 'dm',
      access: `  discord: { users: ["${ADA.id}", "${BOB.id}", "${EVE.id}"], guilds: ["${GUILD}"] }`,
    }),
    { DISCORD_TOKEN: TOKEN, DISCORD_API_URL: discord.apiUrl },
  );
const buttons = (m: FakeDiscordMessage) => m.components.flatMap((r) => r['components'] as Array<{ label?: string; custom_id: string }>);
const text = (m: FakeDiscordMessage) => discordToPlain(m.content);

test('dm: Ada’s DM gets the card, the thread a status line; Eve’s click on the DM card is refused; Ada’s approves and both show it', async () => {
  await start();
  bed.queue.push(writePlan, { text: 'Written.' });
  const asked = discord.userMessage({ user: BOB, channel: TEAM, text: 'write the plan', mention: true });
  const dmChannel = await waitFor('Ada’s DM channel', () => discord.dms.get(ADA.id));
  expect(discord.dms.has(BOB.id)).toBe(false); // the requester may not approve: not messaged
  const card = await waitFor('the DM card', () => discord.visible(dmChannel).find((m) => m.components.length > 0));
  const status = await waitFor('the status line', () =>
    discord.visible(asked).find((m) => /Waiting for approval from @Ada \(sent to their Discord direct messages\)/.test(text(m))),
  );
  expect(status.components).toEqual([]);
  const approve = buttons(card).find((b) => b.label === 'Approve once')!.custom_id;

  await discord.click({ user: EVE, message: card, customId: approve });
  const notice = await waitFor('the notice to Eve', () => discord.ephemerals.find((e) => e.userId === EVE.id));
  expect(notice.content).toMatch(/Only a bound approver can decide this/);
  expect(card.components.length).toBeGreaterThan(0);
  expect(bed.planWritten()).toBeUndefined();

  await discord.click({ user: ADA, message: card, customId: approve });
  await waitFor('the answer', () => discord.visible(asked).some((m) => text(m) === 'Written.'));
  expect(bed.planWritten()).toBe('# plan\n');
  await waitFor('the status line decided', () => /Approved once by Ada.*from Discord direct messages/.test(text(status)));
  expect(card.components).toEqual([]);
  expect(bed.audit().find((e) => e['event'] === 'approval_decided')).toMatchObject({ byPlatform: 'discord', byConversation: `discord:dm:${dmChannel}` });
});

test('dm to a user whose DMs refuse the bot: the card is posted in the thread, naming the refusal', async () => {
  discord.closeDms(ADA.id);
  await start();
  bed.queue.push(writePlan, { text: 'Written.' });
  const asked = discord.userMessage({ user: BOB, channel: TEAM, text: 'write the plan', mention: true });
  const card = await waitFor('the thread card', () => discord.visible(asked).find((m) => m.components.length > 0));
  expect(text(card)).toMatch(/Could not reach by direct message: @Ada \(.*Cannot send messages to this user.*\)/);
  await discord.click({ user: ADA, message: card, customId: buttons(card).find((b) => b.label === 'Approve once')!.custom_id });
  await waitFor('the answer', () => discord.visible(asked).some((m) => text(m) === 'Written.'));
});
