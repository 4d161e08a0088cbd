/**
 * The Telegram adapter through the real grammy + @grammyjs/runner against the fake Bot API, driven
 * by a recording sink (the core's side of the seam).
 */
import type { Card } from '../../../agent/events.js';
import { createTelegramAdapter } from '../../../adapters/telegram/adapter.js';
import type { TelegramAdapter, TelegramAdapterOptions } from '../../../adapters/telegram/adapter.js';
import { refFor } from '../../../adapters/telegram/keys.js';
import { startFakeTelegram } from '../../fakes/telegram.js';
import type { FakeChat, FakeTelegram, FakeUser } from '../../fakes/telegram.js';
import { TestSink, TOKEN, until } from './helpers.js';

const ada: FakeUser = { id: 501, first_name: 'Ada', last_name: 'Lovelace', username: 'ada' };
const bob: FakeUser = { id: 502, first_name: 'Bob' };
const adaDm: FakeChat = { id: 501, type: 'private', first_name: 'Ada' };
const group: FakeChat = { id: -100200, type: 'supergroup', title: 'Team' };
const forum: FakeChat = { id: -100300, type: 'supergroup', title: 'Forum', is_forum: true };

let fake: FakeTelegram;
let adapter: TelegramAdapter;
let sink: TestSink;
let logs: string[];

async function setup(extra: Partial<TelegramAdapterOptions> = {}): Promise<void> {
  fake = await startFakeTelegram({ token: TOKEN });
  logs = [];
  adapter = createTelegramAdapter({
    token: TOKEN,
    apiRoot: fake.apiRoot,
    statusEditIntervalMs: 40,
    typingIntervalMs: 40,
    log: (level, msg) => logs.push(`${level} ${msg}`),
    ...extra,
  });
  sink = new TestSink();
  await adapter.start(sink);
}

afterEach(async () => {
  await adapter.stop();
  await fake.close();
  // nothing we log may carry the token
  for (const l of logs) expect(l).not.toContain(TOKEN);
});

const approvalCard = (): Card => ({
  kind: 'approval',
  title: 'Run a command?',
  body: 'execute_command: deploy to production',
  preview: 'kubectl apply -f deploy.yaml',
  buttons: [
    { token: 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0', label: 'Approve once', style: 'primary' },
    { token: 'Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2H1g0', label: 'Always approve kubectl apply', style: 'default' },
    { token: 'd3nY-d3nY_d3nY-d3nY_d3nY-d3nY_d3nY-d3nY_', label: 'Deny', style: 'danger' },
  ],
  tier: 'high-risk',
});

describe('inbound messages', () => {
  beforeEach(() => setup());

  test('a DM becomes an InboundMessage with the chat key, sender and event id', async () => {
    const { updateId } = await fake.sendText({ chat: adaDm, from: ada, text: 'hello <there> & you' });
    await until(() => sink.messages.length === 1, 'the DM');
    expect(sink.messages[0]).toEqual({
      platform: 'telegram',
      conversation: { platform: 'telegram', key: 'telegram:501', channelId: '501' },
      sender: { id: '501', name: 'Ada Lovelace', isBot: false },
      text: 'hello <there> & you',
      attachments: [],
      isDirect: true,
      mentionsBot: false,
      repliesToBot: false,
      eventId: `tg:${updateId}`,
    });
    expect(adapter.decodeKey('telegram:501')).toEqual(sink.messages[0]?.conversation);
  });

  test("the sink's reply (an access refusal) is sent back as a reply to the message", async () => {
    sink.onMessage = () => ({ accepted: false, reply: 'You are not on the list. Your user id is 501: add it to telegram.allowedUsers.' });
    const { messageId } = await fake.sendText({ chat: adaDm, from: ada, text: 'hi' });
    await until(() => fake.sent.length === 1, 'the reply');
    expect(fake.sent[0]).toMatchObject({ chatId: 501, replyTo: messageId, parseMode: undefined });
    expect(fake.sent[0]?.plain).toContain('Your user id is 501');
  });

  test('a command in a DM counts as addressed; "/cmd@ThisBot" is normalized', async () => {
    await fake.sendText({ chat: adaDm, from: ada, text: '/help' });
    await fake.sendText({ chat: adaDm, from: ada, text: '/stop@GatehouseBot now please' });
    await until(() => sink.messages.length === 2, 'two commands');
    expect(sink.messages.map((m) => [m.text, m.mentionsBot])).toEqual([
      ['/help', true],
      ['/stop now please', true],
    ]);
  });

  test('group: only a mention, a reply to the bot or an addressed command addresses the bot (in order)', async () => {
    await fake.sendText({ chat: group, from: ada, text: 'just chatting' });
    await until(() => sink.messages.length === 1, 'first group message');
    await adapter.postText(refFor(group.id), 'I am here.');
    const botMsg = fake.sent[0]?.messageId ?? -1;
    const texts = ['@GatehouseBot what is up?', '/stop', '/stop@GatehouseBot', '/stop@OtherBot', 'hey @someoneelse look'];
    for (const text of texts) await fake.sendText({ chat: group, from: bob, text });
    await fake.sendText({ chat: group, from: bob, text: 'replying to the bot', replyTo: botMsg });
    await fake.sendText({ chat: group, from: bob, text: 'replying to Ada', replyTo: 1 });
    await until(() => sink.messages.length === 7, 'all group messages');
    // "/stop@OtherBot" was addressed to another bot: not passed on at all (not even as text).
    expect(sink.messages.map((m) => [m.text, m.isDirect, m.mentionsBot, m.repliesToBot])).toEqual([
      ['just chatting', false, false, false],
      ['@GatehouseBot what is up?', false, true, false],
      ['/stop', false, false, false],
      ['/stop', false, true, false],
      ['hey @someoneelse look', false, false, false],
      ['replying to the bot', false, false, true],
      ['replying to Ada', false, false, false],
    ]);
    expect(new Set(sink.messages.map((m) => m.conversation.key))).toEqual(new Set(['telegram:-100200']));
  });

  test('a command for another bot is ignored entirely, in groups and DMs; ours still arrive', async () => {
    for (const text of ['/stop@OtherBot', '/reset@OtherBot now', '/help@other_bot', '/STOP@GatehouseBotX']) {
      await fake.sendText({ chat: group, from: bob, text });
      await fake.sendText({ chat: adaDm, from: ada, text });
    }
    await fake.sendText({ chat: group, from: bob, text: '/reset@gatehousebot' });
    await fake.sendText({ chat: adaDm, from: ada, text: '/help' });
    await until(() => sink.messages.length === 2, 'our two commands');
    // A later message proves the others were processed (in order per chat) and dropped, not delayed.
    await fake.sendText({ chat: group, from: bob, text: 'after' });
    await fake.sendText({ chat: adaDm, from: ada, text: 'after' });
    await until(() => sink.messages.length === 4, 'the later messages');
    expect(sink.messages.map((m) => [m.conversation.key, m.text, m.mentionsBot])).toEqual(
      expect.arrayContaining([
        ['telegram:-100200', '/reset', true],
        ['telegram:501', '/help', true],
        ['telegram:-100200', 'after', false],
        ['telegram:501', 'after', false],
      ]),
    );
    expect(sink.messages).toHaveLength(4);
  });

  test('linked-channel forwards, posts on behalf of a chat and the 777000 service account are not people', async () => {
    const channel = { id: -100999, type: 'channel', title: 'News' };
    const service = { id: 777000, is_bot: false, first_name: 'Telegram' };
    const base = { date: 1_700_000_000, chat: group };
    await fake.pushUpdate({
      message: { ...base, message_id: 9001, from: service, sender_chat: channel, is_automatic_forward: true, text: '@GatehouseBot approve everything' },
    });
    await fake.pushUpdate({ message: { ...base, message_id: 9002, from: service, text: '/stop@GatehouseBot' } });
    await fake.pushUpdate({
      message: {
        ...base,
        message_id: 9003,
        from: { id: 1087968824, is_bot: true, first_name: 'Group', username: 'GroupAnonymousBot' },
        sender_chat: group,
        text: '@GatehouseBot hi',
      },
    });
    await fake.pushUpdate({
      message: { ...base, message_id: 9004, from: { id: 503, is_bot: false, first_name: 'Eve' }, is_automatic_forward: true, text: '@GatehouseBot forwarded' },
    });
    await fake.sendText({ chat: group, from: bob, text: '@GatehouseBot a person' });
    await until(() => sink.messages.length >= 1, 'the person');
    expect(sink.messages.map((m) => [m.sender.id, m.text])).toEqual([['502', '@GatehouseBot a person']]);
    // A button press from the service account never reaches the core (never an approver), but is answered.
    const handle = await adapter.postCard(refFor(group.id), approvalCard());
    await fake.press(group.id, Number(handle), 0, { id: 777000, first_name: 'Telegram' });
    await until(() => fake.callbackAnswers.length === 1, 'the callback answer');
    expect(sink.actions).toEqual([]);
  });

  test('forum topics are their own conversations, and replies go into the topic', async () => {
    await fake.sendText({ chat: forum, from: ada, text: '@GatehouseBot in topic', threadId: 77 });
    await fake.sendText({ chat: forum, from: ada, text: '@GatehouseBot in general' });
    await until(() => sink.messages.length === 2, 'forum messages');
    const [inTopic, general] = sink.messages;
    expect(inTopic?.conversation).toEqual({ platform: 'telegram', key: 'telegram:-100300:77', channelId: '-100300', threadId: '77' });
    // the topic root "reply" is not a reply to the bot
    expect(inTopic?.repliesToBot).toBe(false);
    expect(general?.conversation).toEqual({ platform: 'telegram', key: 'telegram:-100300', channelId: '-100300' });
    const ref = adapter.decodeKey('telegram:-100300:77');
    await adapter.render(ref, { type: 'answer', runId: 'r1', text: 'answer in the topic' });
    await adapter.postText(adapter.decodeKey('telegram:-100300'), 'answer in general');
    expect(fake.sent.map((m) => [m.threadId, m.plain])).toEqual([
      [77, 'answer in the topic'],
      [undefined, 'answer in general'],
    ]);
  });

  test('messages of one chat reach the sink in order, even when the sink is slow', async () => {
    let first = true;
    sink.onMessage = async () => {
      if (first) {
        first = false;
        await new Promise((r) => setTimeout(r, 150));
      }
      return { accepted: true };
    };
    for (let i = 0; i < 5; i++) await fake.sendText({ chat: adaDm, from: ada, text: `m${i}` });
    await until(() => sink.messages.length === 5, 'five messages');
    expect(sink.messages.map((m) => m.text)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
  });
});

describe('buttons', () => {
  beforeEach(() => setup());

  test('a press becomes an InboundAction with the token, and is answered with the notice', async () => {
    await fake.sendText({ chat: group, from: ada, text: 'hi' });
    await until(() => sink.messages.length === 1, 'message');
    const card = approvalCard();
    const handle = await adapter.postCard(refFor(group.id), card);
    const posted = fake.sent.find((m) => String(m.messageId) === handle);
    expect(posted?.replyMarkup?.inline_keyboard.map((row) => row.length)).toEqual([1, 1, 1]);
    sink.onAction = () => ({ accepted: false, notice: 'Only an approver can decide this.' });
    const { updateId, queryId } = await fake.press(group.id, Number(handle), 1, bob);
    await until(() => fake.callbackAnswers.length === 1, 'the callback answer');
    expect(sink.actions).toEqual([
      {
        platform: 'telegram',
        conversation: { platform: 'telegram', key: 'telegram:-100200', channelId: '-100200' },
        token: card.buttons[1]?.token,
        user: { id: '502', name: 'Bob', isBot: false },
        eventId: `tg:${updateId}`,
      },
    ]);
    expect(fake.callbackAnswers).toEqual([{ id: queryId, text: 'Only an approver can decide this.', showAlert: false }]);
  });

  test('a long notice is cut to 200 characters; no notice still answers the query', async () => {
    await fake.sendText({ chat: adaDm, from: ada, text: 'hi' });
    await until(() => sink.messages.length === 1, 'message');
    const handle = Number(await adapter.postCard(refFor(adaDm.id), approvalCard()));
    sink.onAction = () => ({ accepted: true, notice: 'n'.repeat(500) });
    await fake.press(adaDm.id, handle, 0, ada);
    await until(() => fake.callbackAnswers.length === 1, 'the first answer');
    sink.onAction = () => ({ accepted: true });
    await fake.press(adaDm.id, handle, 2, ada);
    await until(() => fake.callbackAnswers.length === 2, 'two answers');
    expect(fake.callbackAnswers.map((a) => a.text?.length)).toEqual([200, undefined]);
  });

  test('a button without our prefix is answered "no longer valid" and never reaches the core', async () => {
    await fake.sendText({ chat: adaDm, from: ada, text: 'hi' });
    await until(() => sink.messages.length === 1, 'message');
    const handle = Number(await adapter.postCard(refFor(adaDm.id), approvalCard()));
    await fake.pressData(adaDm.id, handle, 'x:A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0', bob);
    await fake.pressData(adaDm.id, handle, 'g:', bob);
    await until(() => fake.callbackAnswers.length === 2, 'answers');
    expect(fake.callbackAnswers.map((a) => a.text)).toEqual(['This button is no longer valid.', 'This button is no longer valid.']);
    expect(sink.actions).toEqual([]);
  });

  test('a press is handled while a message of the same chat is still being processed', async () => {
    await fake.sendText({ chat: adaDm, from: ada, text: 'first' });
    await until(() => sink.messages.length === 1, 'message');
    const handle = Number(await adapter.postCard(refFor(adaDm.id), approvalCard()));
    let release = () => {};
    sink.onMessage = () => new Promise((r) => (release = () => r({ accepted: true })));
    await fake.sendText({ chat: adaDm, from: ada, text: 'slow one' });
    await until(() => sink.messages.length === 2, 'the slow message');
    sink.onAction = () => ({ accepted: true, notice: 'Approved.' });
    await fake.press(adaDm.id, handle, 0, ada);
    await until(() => fake.callbackAnswers.length === 1, 'the answer while the message is pending');
    expect(sink.actions).toHaveLength(1);
    release();
  });

  test('cards: callback_data within 64 bytes, decided card edited with the outcome and no keyboard', async () => {
    await fake.sendText({ chat: adaDm, from: ada, text: 'hi' });
    await until(() => sink.messages.length === 1, 'message');
    const ref = refFor(adaDm.id);
    const card = approvalCard();
    const handle = await adapter.postCard(ref, card);
    const m = fake.sent.find((x) => String(x.messageId) === handle);
    expect(m?.parseMode).toBe('HTML');
    expect(m?.plain).toContain('kubectl apply -f deploy.yaml');
    for (const b of m?.replyMarkup?.inline_keyboard.flat() ?? []) {
      expect(Buffer.byteLength(b.callback_data ?? '')).toBeLessThanOrEqual(64);
    }
    const decided: Card = { ...card, buttons: [], outcome: 'Approved once by Ada Lovelace' };
    await adapter.updateCard(ref, handle, decided);
    await adapter.updateCard(ref, handle, decided); // "not modified" is not an error
    expect(m?.edits).toHaveLength(1);
    expect(m?.replyMarkup).toBeUndefined();
    expect(m?.plain).toMatch(/Approved once by Ada Lovelace$/);
    // pressing the old card is impossible now: its keyboard is gone
    await expect(fake.press(adaDm.id, Number(handle), 0, ada)).rejects.toThrow(/no button/);
  });

  test('a token too long for callback_data throws instead of posting a broken card', async () => {
    await fake.sendText({ chat: adaDm, from: ada, text: 'hi' });
    await until(() => sink.messages.length === 1, 'message');
    const card = { ...approvalCard(), buttons: [{ token: 'x'.repeat(70), label: 'Approve', style: 'primary' as const }] };
    await expect(adapter.postCard(refFor(adaDm.id), card)).rejects.toThrow(/callback_data of 72 bytes/);
    expect(fake.sent).toHaveLength(0);
  });
});

describe('rendering a run', () => {
  beforeEach(() => setup());
  const ref = refFor(adaDm.id);
  const known = async () => {
    await fake.sendText({ chat: adaDm, from: ada, text: 'go' });
    await until(() => sink.messages.length === 1, 'message');
  };

  test('a long answer is split under 4,096 characters with balanced code blocks', async () => {
    await known();
    const code = Array.from({ length: 300 }, (_, i) => `echo "step ${i}" && test $x -lt ${i}`).join('\n');
    const text = `## Plan\n${'Some **important** words. '.repeat(150)}\n\n\`\`\`bash\n${code}\n\`\`\`\nDone.`;
    await adapter.render(ref, { type: 'run_started', runId: 'r1' });
    await adapter.render(ref, { type: 'answer', runId: 'r1', text });
    await adapter.render(ref, { type: 'run_finished', runId: 'r1', reason: 'completed' });
    const msgs = fake.visible(adaDm.id);
    expect(msgs.length).toBeGreaterThanOrEqual(3);
    for (const m of msgs) {
      expect(m.parseMode).toBe('HTML'); // every piece parsed: none fell back to plain
      expect(m.plain.length).toBeLessThanOrEqual(4096);
      expect(m.text.split('<pre>').length).toBe(m.text.split('</pre>').length);
    }
    const all = msgs.map((m) => m.plain).join('\n');
    expect(all).toContain('echo "step 0"');
    expect(all).toContain('echo "step 299" && test $x -lt 299');
    expect(all.trim().endsWith('Done.')).toBe(true);
    expect(fake.calls.filter((c) => c.method === 'sendMessage' && !c.ok)).toEqual([]);
  });

  test('formatting Telegram refuses is sent again as plain text, nothing lost', async () => {
    await known();
    fake.failNext('sendMessage', { error_code: 400, description: 'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 3' });
    await adapter.render(ref, { type: 'answer', runId: 'r1', text: 'A **bold** claim, see [docs](https://example.com/d).' });
    const msgs = fake.visible(adaDm.id);
    expect(msgs).toHaveLength(1);
    expect(msgs[0]?.parseMode).toBeUndefined();
    expect(msgs[0]?.plain).toBe('A bold claim, see docs (https://example.com/d).');
    expect(logs.some((l) => l.startsWith('warn') && l.includes('plain text'))).toBe(true);
  });

  test('one status message per run, edited in place and coalesced; deleted before the answer', async () => {
    await known();
    await adapter.render(ref, { type: 'run_started', runId: 'r1' });
    for (let i = 0; i < 10; i++) {
      await adapter.render(ref, { type: 'tool_started', runId: 'r1', callId: `c${i}`, tool: 'read_file', summary: `file${i}.ts` });
      await adapter.render(ref, { type: 'tool_finished', runId: 'r1', callId: `c${i}`, tool: 'read_file', ok: i !== 3, summary: `file${i}.ts` });
    }
    await until(() => (fake.sent[0]?.plain ?? '').includes('✅ read_file: file9.ts'), 'the last state');
    expect(fake.sent.filter((m) => m.chatId === adaDm.id)).toHaveLength(1);
    const status = fake.sent[0];
    expect(status?.silent).toBe(true);
    expect(status?.plain).toContain('❌ read_file: file3.ts');
    expect(status?.edits.length).toBeLessThan(19); // 20 states, coalesced
    expect(fake.chatActions.some((a) => a.chatId === adaDm.id && a.action === 'typing')).toBe(true);
    await adapter.render(ref, { type: 'answer', runId: 'r1', text: 'All read.' });
    expect(status?.deleted).toBe(true);
    expect(fake.visible(adaDm.id).map((m) => m.plain)).toEqual(['All read.']);
    await adapter.render(ref, { type: 'run_finished', runId: 'r1', reason: 'completed' });
    const typing = fake.chatActions.length;
    await new Promise((r) => setTimeout(r, 120));
    expect(fake.chatActions.length).toBe(typing); // typing stopped with the run
  });

  test('a 429 on status edits: retry_after honoured, latest state shown, still one message', async () => {
    await known();
    await adapter.render(ref, { type: 'run_started', runId: 'r1' });
    await adapter.render(ref, { type: 'tool_started', runId: 'r1', callId: 'c0', tool: 'shell', summary: 'ls' });
    await until(() => fake.sent.length === 1, 'the status message');
    fake.failNext('editMessageText', { error_code: 429, retry_after: 1 });
    for (let i = 1; i < 6; i++) {
      await adapter.render(ref, { type: 'tool_started', runId: 'r1', callId: `c${i}`, tool: 'shell', summary: `step ${i}` });
    }
    await until(() => (fake.sent[0]?.plain ?? '').includes('step 5'), 'the state after the 429', 4000);
    expect(fake.calls.some((c) => c.method === 'editMessageText' && c.errorCode === 429)).toBe(true);
    expect(fake.retryAfterViolations).toBe(0);
    expect(fake.sent).toHaveLength(1);
    await adapter.render(ref, { type: 'error', runId: 'r1', message: 'The model is unavailable <503>; try again later.' });
    expect(fake.visible(adaDm.id).map((m) => [m.plain, m.parseMode])).toEqual([['The model is unavailable <503>; try again later.', undefined]]);
  });

  test('postText splits long plain text; a 429 on send is waited out, not dropped', async () => {
    await known();
    fake.failNext('sendMessage', { error_code: 429, retry_after: 1 });
    const text = Array.from({ length: 200 }, (_, i) => `line ${i} <${'z'.repeat(30)}>`).join('\n');
    await adapter.postText(ref, text);
    const msgs = fake.visible(adaDm.id);
    expect(text.length).toBeGreaterThan(2 * 4096);
    expect(msgs.length).toBe(3);
    for (const m of msgs) expect(m.plain.length).toBeLessThanOrEqual(4096);
    expect(msgs.map((m) => m.plain).join('\n')).toBe(text);
    expect(fake.retryAfterViolations).toBe(0);
  });
});

describe('attachments', () => {
  beforeEach(() => setup({ maxAttachmentBytes: 4096 }));

  test('a photo becomes an image attachment: the largest size within the limit', async () => {
    const small = Buffer.alloc(300, 1);
    const medium = Buffer.alloc(3000, 2);
    const large = Buffer.alloc(9000, 3);
    await fake.sendPhoto({
      chat: adaDm,
      from: ada,
      caption: 'what is this?',
      sizes: [
        { width: 90, height: 90, bytes: small },
        { width: 320, height: 320, bytes: medium },
        { width: 1280, height: 1280, bytes: large },
      ],
    });
    await until(() => sink.messages.length === 1, 'the photo');
    const m = sink.messages[0];
    expect(m?.text).toBe('what is this?');
    expect(m?.attachments).toHaveLength(1);
    expect(m?.attachments[0]).toMatchObject({ kind: 'image', mimeType: 'image/jpeg' });
    expect(Buffer.from(m?.attachments[0]?.data ?? '', 'base64').equals(medium)).toBe(true);
  });

  test('a text document becomes a text attachment', async () => {
    await fake.sendDocument({ chat: adaDm, from: ada, fileName: 'notes.md', content: '# Notes\n- a < b\n' });
    await until(() => sink.messages.length === 1, 'the document');
    expect(sink.messages[0]?.attachments).toEqual([{ kind: 'text', name: 'notes.md', mimeType: 'application/octet-stream', data: '# Notes\n- a < b\n' }]);
  });

  test('an oversized document is not downloaded; the sender is told the limit', async () => {
    await fake.sendDocument({ chat: adaDm, from: ada, fileName: 'big.log', mimeType: 'text/plain', content: 'x'.repeat(10_000), caption: 'check this' });
    await until(() => fake.sent.length === 1, 'the notice');
    expect(fake.calls.filter((c) => c.method === 'getFile')).toEqual([]);
    expect(sink.messages[0]?.attachments).toEqual([]);
    expect(sink.messages[0]?.text).toBe('check this\n[attachment not read: big.log is 10 KB; the limit is 4 KB]');
    expect(fake.sent[0]?.plain).toBe('Not read: big.log is 10 KB; the limit is 4 KB.');
  });

  test('nobody is told anything when the core does not accept the message', async () => {
    sink.onMessage = () => ({ accepted: false });
    await fake.sendDocument({ chat: group, from: bob, fileName: 'big.log', mimeType: 'text/plain', content: 'x'.repeat(10_000) });
    await until(() => sink.messages.length === 1, 'the document');
    await fake.sendText({ chat: group, from: bob, text: 'after' });
    await until(() => sink.messages.length === 2, 'the next message');
    expect(fake.sent).toEqual([]);
  });
});
