/** Soft spending limits on Slack (./soft-limit-chat.ts): the fake Slack over HTTP, a DM, the card clicked. */
import { startFakeSlack, type FakeSlack, type FakeSlackMessage } from '../../fakes/slack.js';
import { ENGINES } from '../../helpers/harness.js';
import { softLimitChatSuite, type ChatSurface } from './soft-limit-chat.js';

const BOT_TOKEN = 'xoxb-1111-2222-fakeBotTokenValue';
const SECRET = 'fake-signing-secret-0123456789';
type Button = { type: string; value: string; text: { text: string } };
const buttons = (blocks: FakeSlackMessage['blocks']): Button[] =>
  ((blocks ?? []).find((b) => b['type'] === 'actions') as { elements: Button[] } | undefined)?.elements.filter((e) => e.type === 'button') ?? [];

describe.each(ENGINES)('soft limits on Slack, %s', (engine) => {
  let slack: FakeSlack | undefined;
  softLimitChatSuite(engine, { platform: 'slack', approverId: 'U0ADA', approverName: /U0ADA|ada/i, access: 'slack: { users: ["U0ADA"] }' }, (): ChatSurface => {
    const visible = () => slack?.visible('D0ADA') ?? [];
    return {
      async boot(h) {
        slack ??= await startFakeSlack({ botToken: BOT_TOKEN, signingSecret: SECRET });
        const bot = await h.boot({ SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_SIGNING_SECRET: SECRET, SLACK_API_URL: slack.apiUrl }, { log: false });
        slack.eventsUrl = `http://127.0.0.1:${bot.http!.port}/slack/events`;
      },
      send: async (text) => void (await slack!.userMessage({ user: 'U0ADA', channel: 'D0ADA', text, im: true })),
      texts: () => visible().map((m) => `${m.text}\n${JSON.stringify(m.blocks ?? [])}`),
      cards: () =>
        visible()
          .filter((m) => buttons(m.blocks).length > 0 || m.edits.some((e) => buttons(e.blocks).length > 0))
          .map((m) => ({
            text: () => `${m.text}\n${JSON.stringify(m.blocks ?? [])}`,
            open: () => buttons(m.blocks).length > 0,
            press: async (label) =>
              void (await slack!.click({ user: 'U0ADA', message: m, value: buttons(m.blocks).find((b) => b.text.text.startsWith(label))!.value })),
          })),
      async stop() {
        await slack?.close();
        slack = undefined;
      },
    };
  });
});
