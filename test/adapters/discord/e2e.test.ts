/**
 * Discord end to end through the real start path (bot/cli/index.ts startBot): env and YAML config, the
 * store (SQLite and PostgreSQL: the whole file runs on each), the router, the runner, the real Anthropic SDK against the fake model, and the real
 * discord.js client against the fake Discord (gateway WebSocket + REST on 127.0.0.1).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { discordToPlain } from '../../../adapters/discord/markdown.js';
import { startBot, type RunningBot } from '../../../bot/cli/index.js';
import type { FakeAnthropic, FakeReply } from '../../fakes/anthropic.js';
import { startFakeDiscord, type FakeDiscord, type FakeDiscordMessage } from '../../fakes/discord.js';
import { BotE2e } from '../../helpers/bot-e2e.js';
import { askReply, environmentThenBranch } from '../../helpers/questions.js';
import { ENGINES, waitFor } from '../../helpers/harness.js';

const TOKEN = 'OTAwMDAwMDAwMDAwMDAwMDAx.GfakeX.fakeDiscordBotTokenValue0123456789';
const GUILD = '700000000000000001';
const TEAM = '700000000000000010';
const INPLACE = '700000000000000011';
const MODS = '500000000000000001';
const ADA = { id: '600000000000000001', name: 'Ada' };
const BOB = { id: '600000000000000002', name: 'Bob' };
const CAROL = { id: '600000000000000003', name: 'Carol', roles: [MODS] };
const EVE = { id: '600000000000000009', name: 'Eve' };
const DM_ADA = '800000000000000001';
const DM_EVE = '800000000000000009';

const YAML = (dir: string) => `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file, write_file, ask_user_question]
    tier: read-only
    workspace: "${join(dir, 'ws')}"
    approvers: { discord: ["${ADA.id}", "role:${MODS}"] }
  inplace:
    model: claude-sonnet-5-5
    tools: [read_file]
    workspace: "${join(dir, 'ws2')}"
    discordReplyInThread: false
routes:
  - { match: "discord:${GUILD}:${INPLACE}", agent: inplace }
access:
  discord: { users: ["${ADA.id}", "${BOB.id}", "${CAROL.id}"], guilds: ["${GUILD}"] }
`;

describe.each(ENGINES)('on %s', (engine) => {
  let h: BotE2e;
  let discord: FakeDiscord;
  let model: FakeAnthropic;
  let queue: FakeReply[];
  let dir: string;

  const env = (extra: Record<string, string> = {}) => h.env({ DISCORD_TOKEN: TOKEN, DISCORD_API_URL: discord.apiUrl, ...extra });
  const boot = (extra: Record<string, string> = {}): Promise<RunningBot> => h.boot({ DISCORD_TOKEN: TOKEN, DISCORD_API_URL: discord.apiUrl, ...extra });

  beforeEach(async () => {
    h = await BotE2e.start({ engine, prefix: 'gatehouse-discord-', yaml: YAML });
    ({ model, queue, dir } = h);
    discord = await startFakeDiscord({ token: TOKEN, guilds: [{ id: GUILD, channels: [TEAM, INPLACE], roles: [MODS] }] });
  });

  afterEach(async () => {
    await h.stopBot();
    await discord.close();
    await h.close();
    expect(h.logged).not.toContain(TOKEN);
  });

  const texts = (channel: string) => discord.visible(channel).map((m) => discordToPlain(m.content));
  const withComponents = (channel: string) => discord.visible(channel).filter((m) => m.components.length > 0);
  const buttons = (m: FakeDiscordMessage) =>
    m.components.flatMap(
      (r) => r['components'] as Array<{ type: number; label?: string; custom_id: string; options?: Array<{ label: string; value: string }> }>,
    );
  const modelTurns = () => model.requests.filter((r) => !JSON.stringify(r.body).includes('classif'));

  test('start: slash commands registered for the listed guild, the invite URL logged, no token anywhere', async () => {
    await boot();
    expect(
      discord.commands
        .get(GUILD)
        ?.map((c) => c['name'])
        .sort(),
    ).toEqual(['help', 'reset', 'stop']);
    expect(discord.commands.has('global')).toBe(false);
    expect(h.logged).toMatch(/https:\/\/discord\.com\/oauth2\/authorize\?client_id=900000000000000002&scope=bot%20applications\.commands&permissions=\d+/);
    expect(discord.gateway.identifies).toBe(1);
  });

  test('a DM conversation over several turns keeps its context', async () => {
    await boot();
    queue.push({ text: 'Hi **Ada**!' }, { text: 'You said hello.' });
    discord.userMessage({ user: ADA, channel: DM_ADA, text: 'hello' });
    await waitFor('first answer', () => texts(DM_ADA).includes('Hi Ada!'));
    expect(discord.visible(DM_ADA).map((m) => m.content)).toContain('Hi **Ada**!');
    discord.userMessage({ user: ADA, channel: DM_ADA, text: 'what did I say?' });
    await waitFor('second answer', () => texts(DM_ADA).includes('You said hello.'));
    const body = model.requests.at(-1)!.body as { messages: Array<{ role: string }> };
    expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  });

  test('a guild mention is answered in a new thread from that message; a follow-up there needs no mention; chatter, bots, system messages and edits are ignored', async () => {
    await boot();
    queue.push({ text: 'First answer.' }, { text: 'Second answer.' });
    discord.userMessage({ user: BOB, channel: TEAM, text: 'just chatting' });
    discord.userMessage({ user: { id: '600000000000000077', name: 'OtherBot', bot: true }, channel: TEAM, text: 'beep', mention: true });
    discord.userMessage({ user: BOB, channel: TEAM, text: 'joined', type: 7, mention: true });
    const asked = discord.userMessage({ user: BOB, channel: TEAM, text: 'help me', mention: true });
    await waitFor('answer in the thread', () => texts(asked).includes('First answer.'));
    const thread = discord.channels.get(asked)!;
    expect(thread).toMatchObject({ type: 11, parentId: TEAM, ownerId: discord.botUserId });
    expect(thread.name).toBe('help me');
    discord.dispatch('MESSAGE_UPDATE', {
      id: asked,
      channel_id: TEAM,
      guild_id: GUILD,
      content: `<@${discord.botUserId}> edited`,
      author: { id: BOB.id, username: 'bob', discriminator: '0' },
    });
    discord.userMessage({ user: BOB, channel: asked, text: 'and more' });
    await waitFor('follow-up answer', () => texts(asked).includes('Second answer.'));
    expect(texts(TEAM)).toEqual([]);
    expect(modelTurns()).toHaveLength(2);
    const all = JSON.stringify(model.requests.map((r) => r.body));
    for (const ignored of ['just chatting', 'beep', 'joined', 'edited']) expect(all).not.toContain(ignored);
  });

  test('an agent with discordReplyInThread: false answers in place; a reply to the bot addresses it', async () => {
    await boot();
    queue.push({ text: 'In place.' }, { text: 'Reply noticed.' });
    discord.userMessage({ user: BOB, channel: INPLACE, text: 'hello there', mention: true });
    await waitFor('answer in the channel', () => texts(INPLACE).includes('In place.'));
    expect([...discord.channels.values()].filter((c) => c.type === 11)).toHaveLength(0);
    const answer = discord.visible(INPLACE).find((m) => m.content === 'In place.')!;
    discord.userMessage({ user: BOB, channel: INPLACE, text: 'about that', replyTo: answer.id });
    await waitFor('reply answered', () => texts(INPLACE).includes('Reply noticed.'));
  });

  test('an approval: a non-approver is told privately, a role holder approves, the card is replaced in place, a replay changes nothing', async () => {
    await boot();
    queue.push({ toolUses: [{ name: 'write_file', input: { path: 'hello.txt', content: 'hi\n' } }] }, { text: 'Written.' });
    const asked = discord.userMessage({ user: BOB, channel: TEAM, text: 'write hello.txt', mention: true });
    const card = await waitFor('the card', () => withComponents(asked)[0]);
    const labels = buttons(card).map((b) => b.label);
    expect(labels[0]).toBe('Approve once');
    expect(labels.some((l) => /^Always/.test(l ?? ''))).toBe(true);
    expect(labels.at(-1)).toBe('Deny');
    const approve = buttons(card).find((b) => b.label === 'Approve once')!.custom_id;

    expect(await discord.click({ user: BOB, message: card, customId: approve })).toBe(6);
    await waitFor('notice to Bob', () => discord.ephemerals.find((e) => e.userId === BOB.id));
    expect(existsSync(join(dir, 'ws', 'hello.txt'))).toBe(false);
    expect(card.components.length).toBeGreaterThan(0);

    const snapshot = { ...card, components: [...card.components] };
    await discord.click({ user: CAROL, message: card, customId: approve });
    await waitFor('answer', () => texts(asked).includes('Written.'));
    expect(readFileSync(join(dir, 'ws', 'hello.txt'), 'utf8')).toBe('hi\n');
    expect(card.components).toEqual([]); // decided in place
    expect(discordToPlain(card.content)).toMatch(/Carol/);
    expect(discordToPlain(card.content)).toMatch(/\d{1,2}:\d{2}/);

    const before = discord.ephemerals.length;
    const contentAfter = card.content;
    await discord.click({ user: CAROL, message: snapshot, customId: approve });
    await waitFor('notice on replay', () => discord.ephemerals.length > before);
    expect(card.content).toBe(contentAfter);
    // a forged token and a component that is not ours change nothing either
    await discord.click({ user: ADA, message: snapshot, customId: 'gh:forged-token-000000000000000000000000' });
    await waitFor('notice on forgery', () => discord.ephemerals.length > before + 1);
    // a component that is not one of the bot's (another app's custom_id) gets a notice too
    await discord.click({ user: ADA, message: snapshot, customId: 'someone-else:approve' });
    await waitFor('notice on a foreign click', () => discord.ephemerals.length > before + 2);
    expect(discord.ephemerals.at(-1)!.content).toMatch(/no longer valid/);
    expect(modelTurns()).toHaveLength(2);
    // every click was acknowledged well within Discord's 3 s
    for (const c of discord.callbacks) expect(c.afterMs).toBeLessThan(3000);
  });

  test('a question: suggestions as buttons, then a typed reply in the thread; many options become a string select', async () => {
    await boot();
    const many = Array.from({ length: 8 }, (_, i) => ({ value: `region-${i}`, label: `Region ${i}` }));
    queue.push(...environmentThenBranch(), askReply('Which region?', many, false), { text: 'Region noted.' });
    const asked = discord.userMessage({ user: ADA, channel: TEAM, text: 'deploy something', mention: true });
    const questionCard = (q: string) => withComponents(asked).find((m) => m.content.includes(q));
    const q1 = await waitFor('question', () => questionCard('Which environment?'));
    await discord.click({ user: ADA, message: q1, customId: buttons(q1).find((b) => b.label === 'Staging')!.custom_id });
    await waitFor('answer by button', () => texts(asked).includes('Going with staging.'));
    expect(JSON.stringify(modelTurns()[1]!.body)).toContain('staging');

    discord.userMessage({ user: ADA, channel: asked, text: 'and the branch?' });
    await waitFor('second question', () => questionCard('Which branch?'));
    discord.userMessage({ user: ADA, channel: asked, text: 'release-2026' });
    await waitFor('answer by text', () => texts(asked).includes('Branch noted.'));
    expect(JSON.stringify(model.requests.at(-1)!.body)).toContain('release-2026');

    discord.userMessage({ user: ADA, channel: asked, text: 'and the region?' });
    const q3 = await waitFor('third question', () => questionCard('Which region?'));
    const select = buttons(q3).find((c) => c.type === 3)!;
    expect(select.options!.map((o) => o.label)).toEqual(expect.arrayContaining(['Region 0', 'Region 7']));
    const region5 = select.options!.find((o) => o.label === 'Region 5')!.value;
    await discord.click({ user: ADA, message: q3, customId: select.custom_id, values: [region5] });
    await waitFor('answer by select', () => texts(asked).includes('Region noted.'));
    expect(JSON.stringify(model.requests.at(-1)!.body)).toContain('region-5');
  });

  test('slash commands: /help privately, /stop cancels a running turn; the text command works too', async () => {
    await boot();
    const help = await discord.slash({ user: ADA, channel: DM_ADA, name: 'help' });
    expect(help.ephemeral).toBe(true);
    expect(discordToPlain(help.content)).toMatch(/\/stop cancels the current run/);
    queue.push({ hang: true } as FakeReply, { hang: true } as FakeReply);
    discord.userMessage({ user: ADA, channel: DM_ADA, text: 'think hard' });
    await waitFor('model called', () => model.requests.length === 1);
    const stop = await discord.slash({ user: ADA, channel: DM_ADA, name: 'stop' });
    expect(stop.content).toMatch(/Stopping the current run/);
    await waitFor('stopped', () => texts(DM_ADA).some((t) => /Stopped\./.test(t)));
    discord.userMessage({ user: ADA, channel: DM_ADA, text: 'think again' });
    await waitFor('model called again', () => model.requests.length === 2);
    discord.userMessage({ user: ADA, channel: DM_ADA, text: '/stop' });
    await waitFor('stopped by text', () => texts(DM_ADA).filter((t) => /Stopped\./.test(t)).length === 2);
    for (const c of discord.callbacks) expect(c.afterMs).toBeLessThan(3000);
  });

  test('a text file is read; a file over the size limit is refused with the reason', async () => {
    await boot();
    queue.push({ text: 'Read it.' });
    const file = discord.addFile('notes.md', 'text/markdown', '# Notes\nthe word is pineapple\n');
    const big = discord.addFile('huge.log', 'text/plain', 'x'.repeat(6 * 1024 * 1024));
    discord.userMessage({ user: ADA, channel: DM_ADA, text: 'summarize', attachments: [file, big] });
    await waitFor('answer', () => texts(DM_ADA).includes('Read it.'));
    const sent = JSON.stringify(model.requests[0]!.body);
    expect(sent).toContain('the word is pineapple');
    expect(sent).toMatch(/huge\.log is 6 MB; the limit is 5 MB/);
    expect(sent).not.toContain('xxxxxxxxxx');
  });

  test('model text cannot ping: every bot message goes out with no allowed mentions, mention syntax escaped', async () => {
    await boot();
    queue.push({ text: `@everyone look, <@&${MODS}> and <@${BOB.id}>` });
    discord.userMessage({ user: ADA, channel: DM_ADA, text: 'say something loud' });
    await waitFor('answer', () => discord.visible(DM_ADA).length === 1);
    const [m] = discord.visible(DM_ADA);
    expect(m!.allowedMentions).toEqual({ parse: [] });
    expect(m!.content).toContain(`\\<@&${MODS}>`);
    expect(m!.content).toContain(`\\<@${BOB.id}>`);
  });

  test("an unlisted user's DM gets one reply with their id and the config key, and no run", async () => {
    await boot();
    discord.userMessage({ user: EVE, channel: DM_EVE, text: 'let me in' });
    await waitFor('refusal', () => texts(DM_EVE).length === 1);
    expect(texts(DM_EVE)[0]).toContain(EVE.id);
    expect(texts(DM_EVE)[0]).toContain('access.discord.users');
    discord.userMessage({ user: EVE, channel: DM_EVE, text: 'please?' });
    queue.push({ text: 'pong' });
    discord.userMessage({ user: ADA, channel: DM_ADA, text: 'ping' });
    await waitFor('owner answered', () => texts(DM_ADA).includes('pong'));
    expect(texts(DM_EVE)).toHaveLength(1);
    expect(model.requests).toHaveLength(1);
  });

  test('a gateway disconnect in the middle of a run: the client resumes, nothing is lost and nothing is answered twice', async () => {
    await boot();
    queue.push({ text: 'Slow answer.', delayMs: 700 }, { text: 'Second answer.' });
    discord.userMessage({ user: ADA, channel: DM_ADA, text: 'first question' });
    await waitFor('model called', () => model.requests.length === 1);
    discord.resendOnResume = true; // Discord may re-send the last event the client already had
    discord.dropConnection();
    discord.userMessage({ user: ADA, channel: DM_ADA, text: 'second question while you were away' });
    await waitFor('both answers', () => texts(DM_ADA).includes('Slow answer.') && texts(DM_ADA).includes('Second answer.'), 10_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(texts(DM_ADA).filter((t) => t === 'Slow answer.')).toHaveLength(1);
    expect(texts(DM_ADA).filter((t) => t === 'Second answer.')).toHaveLength(1);
    expect(model.requests).toHaveLength(2);
    expect(JSON.stringify(model.requests[1]!.body)).toContain('second question while you were away');
    expect(discord.gateway.resumes).toBe(1);
    expect(discord.gateway.resent).toBe(1);
    // typing was shown while the slow answer was being made (Discord shows it for 10 s a call)
    expect(discord.calls.some((c) => c.method === 'POST' && c.route === '/channels/:id/typing' && c.status === 204)).toBe(true);
    expect(discord.gateway.identifies).toBe(1);
  });

  test('4014 (Message Content Intent not enabled) stops the start naming the switch in the developer portal', async () => {
    discord.privilegedIntents = false;
    const stderr = new PassThrough();
    stderr.on('data', (c: Buffer) => (h.logged += c.toString()));
    await expect(startBot({ env: env(), cwd: dir, stdout: new PassThrough(), stderr }, (l, m) => (h.logged += `${l} ${m}\n`))).rejects.toThrow(
      /Message Content Intent.*Developer Portal|Developer Portal.*Message Content Intent/,
    );
    expect(discord.gateway.identifies).toBe(1);
  });

  test('a token refused by the gateway (close 4004) stops the start the same way', async () => {
    discord.closeOnIdentify = 4004;
    await expect(startBot({ env: env(), cwd: dir, stdout: new PassThrough(), stderr: new PassThrough() }, () => {})).rejects.toThrow(
      /DISCORD_TOKEN was rejected by Discord/,
    );
  });

  test('an invalid token stops the start with what to do, without the token', async () => {
    const wrong = 'OTAwMDAwMDAwMDAwMDAwMDAx.GwrongX.notTheRightTokenAtAll0123456789';
    const err = await startBot({ env: env({ DISCORD_TOKEN: wrong }), cwd: dir, stdout: new PassThrough(), stderr: new PassThrough() }, () => {}).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/DISCORD_TOKEN was rejected by Discord.*Reset Token/);
    expect(err?.message).not.toContain(wrong);
    expect(discord.gateway.identifies).toBe(0);
  });
});
