/** Soft spending limits on Telegram (./soft-limit-chat.ts): the fake Bot API, a DM, the card tapped. */
import { startFakeTelegram, type FakeTelegram, type SentMessage } from '../../fakes/telegram.js';
import { ENGINES } from '../../helpers/harness.js';
import { TOKEN } from '../../adapters/telegram/helpers.js';
import { softLimitChatSuite, type ChatSurface } from './soft-limit-chat.js';

const ada = { id: 501, first_name: 'Ada' };
const dm = { id: 501, type: 'private' as const, first_name: 'Ada' };
const buttons = (m: { replyMarkup: SentMessage['replyMarkup'] }) => m.replyMarkup?.inline_keyboard.flat() ?? [];

describe.each(ENGINES)('soft limits on Telegram, %s', (engine) => {
  let tg: FakeTelegram | undefined;
  softLimitChatSuite(engine, { platform: 'telegram', approverId: '501', approverName: /Ada/, access: 'telegram: { users: ["501"] }' }, (): ChatSurface => {
    const cards = () => (tg?.visible(501) ?? []).filter((m) => buttons(m).length > 0 || m.edits.some((e) => buttons(e).length > 0));
    return {
      async boot(h) {
        tg ??= await startFakeTelegram({ token: TOKEN });
        await h.boot({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: tg.apiRoot }, { log: false });
      },
      send: async (text) => void (await tg!.sendText({ chat: dm, from: ada, text })),
      texts: () => tg!.visible(501).map((m) => m.plain),
      cards: () =>
        cards().map((m) => ({
          text: () => m.plain,
          open: () => buttons(m).length > 0,
          press: async (label) =>
            void (await tg!.press(
              501,
              m.messageId,
              buttons(m).findIndex((b) => b.text.startsWith(label)),
              ada,
            )),
        })),
      async stop() {
        await tg?.close();
        tg = undefined;
      },
    };
  });
});
