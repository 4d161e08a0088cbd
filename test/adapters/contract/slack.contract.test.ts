/**
 * Slack (real Bolt + @slack/web-api + socket-mode) passes the adapter conformance suite against the
 * fake Slack in both modes: HTTP (signed requests to /slack/events on the bot's own HTTP server) and
 * Socket Mode (envelopes over the fake's WebSocket, acked by the client).
 */
import { createSlackAdapter } from '../../../adapters/slack/adapter.js';
import { refFor } from '../../../adapters/slack/keys.js';
import { mrkdwnToPlain } from '../../../adapters/slack/mrkdwn.js';
import { startHttpServer } from '../../../bot/service/http.js';
import { startFakeSlack } from '../../fakes/slack.js';
import type { FakeSlackMessage } from '../../fakes/slack.js';
import { adapterContract, ContractSink } from './suite.js';
import type { ContractDriver, SeenMessage } from './suite.js';
import { waitFor } from '../../helpers/wait.js';

const BOT_TOKEN = 'xoxb-1111-2222-fakeBotTokenValue';
const SECRET = 'fake-signing-secret-0123456789';
const APP_TOKEN = 'xapp-1-A0APP-3333-fakeAppTokenValue';

const unescapeHtml = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

function seen(m: FakeSlackMessage): SeenMessage {
  const blockTexts = (m.blocks ?? []).flatMap((b) => {
    const t = (b['text'] as { text?: string } | undefined)?.text;
    const ctx = b['type'] === 'context' ? (b['elements'] as Array<{ text: string }>).map((e) => e.text) : [];
    return [...(t ? [t] : []), ...ctx];
  });
  const raw = m.blocks ? blockTexts.join('\n') : m.text;
  const actions = (m.blocks ?? []).find((b) => b['type'] === 'actions') as { elements: Array<Record<string, unknown>> } | undefined;
  const tokens = (actions?.elements ?? []).flatMap((e) =>
    e['type'] === 'static_select' ? (e['options'] as Array<{ value: string }>).map((o) => o.value) : [String(e['value'])],
  );
  return {
    text: mrkdwnToPlain(raw.replace(/```\n?/g, '')).replace(/ \((https?:[^)]*)\)/g, ''),
    tokens,
    links: [...raw.matchAll(/<(https?:[^|>]+)\|[^>]*>/g)].map((x) => unescapeHtml(x[1] ?? '')),
    code: [...raw.matchAll(/```\n([\s\S]*?)\n```/g)].map((x) => unescapeHtml(x[1] ?? '')),
  };
}

for (const mode of ['http', 'socket'] as const)
  adapterContract(`slack (${mode === 'http' ? 'HTTP mode' : 'Socket Mode'})`, async (): Promise<ContractDriver> => {
    const fake = await startFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN, signingSecret: SECRET });
    fake.mode = mode;
    const adapter = createSlackAdapter({
      botToken: BOT_TOKEN,
      ...(mode === 'socket' ? { appToken: APP_TOKEN } : { signingSecret: SECRET }),
      apiUrl: fake.apiUrl,
      statusEditIntervalMs: 30,
      log: () => {},
    });
    const http = await startHttpServer({ host: '127.0.0.1', port: 0, routes: adapter.httpRoutes(), health: () => ({}) });
    fake.eventsUrl = `http://127.0.0.1:${http.port}/slack/events`;
    const sink = new ContractSink();
    await adapter.start(sink);
    if (mode === 'socket') expect(fake.sockets.open).toBe(1);
    const dm = refFor(fake.teamId, 'D0ADA');
    const byTs = (ref: { channelId: string }, ts: string) => {
      const m = fake.messages.find((x) => x.channel === ref.channelId && x.ts === ts);
      if (!m) throw new Error(`no message ${ts}`);
      return m;
    };
    return {
      adapter,
      sink,
      textLimit: 3900,
      sampleRefs: () => [dm, refFor('T0TEAM', 'C0CHAN'), refFor('T0TEAM', 'C0CHAN', '1700000000.000100')],
      conversation: () => dm,
      sendCommand: async (ref, command) => {
        await fake.userMessage({ user: 'U0ADA', channel: ref.channelId, text: `<@${fake.botUserId}> /${command}@gatehouse`, im: true });
      },
      click: async (ref, handle, token) => {
        const r = await fake.click({ user: 'U0ADA', message: byTs(ref, handle), value: token });
        if (r.status !== 200) throw new Error(`click answered ${r.status}`);
      },
      privateNotices: () => fake.ephemerals.map((e) => unescapeHtml(e.text)),
      visible: (ref) => fake.visible(ref.channelId, ref.threadId).map(seen),
      message: (ref, handle) => seen(byTs(ref, handle)),
      rateLimitEdits: (times) => fake.failNext('chat.update', { error: 'ratelimited', retryAfter: 1 }, times),
      editStats: () => ({
        accepted: fake.calls.filter((c) => c.method === 'chat.update' && c.ok).length,
        limited: fake.calls.filter((c) => c.method === 'chat.update' && c.status === 429).length,
        retryAfterViolations: fake.retryAfterViolations,
      }),
      close: async () => {
        await adapter.stop();
        // the client closes its socket with a close handshake: let it finish before the fake goes away
        await waitFor('the socket close handshake', () => fake.sockets.open === 0, { timeoutMs: 5000, intervalMs: 10 }).catch(() => undefined);
        await http.close();
        await fake.close();
      },
    };
  });
