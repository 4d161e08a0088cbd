/** Telegram (real grammy against the fake Bot API) passes the adapter conformance suite. */
import { createTelegramAdapter } from '../../../adapters/telegram/adapter.js';
import { decodeEntities } from '../../../adapters/telegram/format.js';
import { refFor } from '../../../adapters/telegram/keys.js';
import type { ConversationRef } from '../../../adapters/types.js';
import { startFakeTelegram } from '../../fakes/telegram.js';
import type { FakeChat, FakeUser, SentMessage } from '../../fakes/telegram.js';
import { adapterContract, ContractSink } from './suite.js';
import type { ContractDriver, SeenMessage } from './suite.js';

const TOKEN = '123456:TEST-token_abcdefghijklmnopqrstuv';
const ada: FakeUser = { id: 501, first_name: 'Ada' };
const group: FakeChat = { id: -100200, type: 'supergroup', title: 'Team' };

const seen = (m: SentMessage): SeenMessage => ({
  text: m.plain,
  tokens: (m.replyMarkup?.inline_keyboard ?? []).flat().map((b) => (b.callback_data ?? '').replace(/^g:/, '')),
  code: m.parseMode === 'HTML' ? [...m.text.matchAll(/<pre>(?:<code[^>]*>)?([\s\S]*?)(?:<\/code>)?<\/pre>/g)].map((x) => decodeEntities(x[1] ?? '')) : [],
  links: m.parseMode === 'HTML' ? [...m.text.matchAll(/<a href="([^"]*)"/g)].map((x) => decodeEntities(x[1] ?? '')) : [],
});

adapterContract('telegram', async (): Promise<ContractDriver> => {
  const fake = await startFakeTelegram({ token: TOKEN });
  fake.addChat(group);
  const adapter = createTelegramAdapter({ token: TOKEN, apiRoot: fake.apiRoot, statusEditIntervalMs: 30, log: () => {} });
  const sink = new ContractSink();
  await adapter.start(sink);
  const chatOf = (ref: ConversationRef) => Number(ref.channelId);
  const byHandle = (ref: ConversationRef, handle: string) => {
    const m = fake.sent.find((s) => s.chatId === chatOf(ref) && s.messageId === Number(handle));
    if (!m) throw new Error(`no message ${handle}`);
    return m;
  };
  return {
    adapter,
    sink,
    textLimit: 4096,
    sampleRefs: () => [refFor(501), refFor(-1001234567890), refFor(-1001234567890, 7)],
    conversation: () => refFor(group.id),
    sendCommand: async (_ref, command) => {
      await fake.sendText({ chat: group, from: ada, text: `/${command}@${fake.bot.username}` });
    },
    click: async (ref, handle, token) => {
      const before = fake.callbackAnswers.length;
      await fake.pressData(chatOf(ref), Number(handle), `g:${token}`, ada);
      await fake.waitFor(() => fake.callbackAnswers.length > before, 5000, 'the callback answer');
    },
    privateNotices: () => fake.callbackAnswers.flatMap((a) => (a.text ? [a.text] : [])),
    visible: (ref) => fake.visible(chatOf(ref)).map(seen),
    message: (ref, handle) => seen(byHandle(ref, handle)),
    rateLimitEdits: (times) => {
      fake.failNext('editMessageText', { error_code: 429, retry_after: 1 }, { times });
    },
    editStats: () => ({
      accepted: fake.calls.filter((c) => c.method === 'editMessageText' && c.ok).length,
      limited: fake.calls.filter((c) => c.method === 'editMessageText' && c.errorCode === 429).length,
      retryAfterViolations: fake.retryAfterViolations,
    }),
    close: async () => {
      await adapter.stop();
      await fake.close();
    },
  };
});
