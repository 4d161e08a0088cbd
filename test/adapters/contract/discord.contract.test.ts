/**
 * Discord (the real discord.js client: gateway WebSocket + REST) passes the adapter conformance
 * suite against the fake Discord.
 */
import { createDiscordAdapter } from '../../../adapters/discord/adapter.js';
import { refFor } from '../../../adapters/discord/keys.js';
import { discordToPlain } from '../../../adapters/discord/markdown.js';
import { startFakeDiscord } from '../../fakes/discord.js';
import type { FakeDiscordMessage } from '../../fakes/discord.js';
import { adapterContract, ContractSink } from './suite.js';
import type { ContractDriver, SeenMessage } from './suite.js';

const TOKEN = 'OTAwMDAwMDAwMDAwMDAwMDAx.GfakeX.fakeDiscordBotTokenValue0123456789';
const DM = '800000000000000001';
const GUILD = '700000000000000001';
const CHANNEL = '700000000000000010';

export function seenDiscord(m: FakeDiscordMessage): SeenMessage {
  const raw = m.content;
  const tokens = m.components.flatMap((row) =>
    ((row['components'] as Array<Record<string, unknown>>) ?? []).flatMap((c) =>
      c['type'] === 3 ? (c['options'] as Array<{ value: string }>).map((o) => o.value) : [String(c['custom_id']).replace(/^gh:/, '')],
    ),
  );
  return {
    text: discordToPlain(raw).replace(/ \((https?:[^)]*)\)/g, ''),
    tokens,
    links: [...raw.matchAll(/\]\((https?:[^)\s]+)\)/g)].map((x) => x[1] ?? ''),
    code: [...raw.matchAll(/```[A-Za-z0-9_+.-]*\n([\s\S]*?)\n```/g)].map((x) => x[1] ?? ''),
  };
}

adapterContract('discord', async (): Promise<ContractDriver> => {
  const fake = await startFakeDiscord({ token: TOKEN, guilds: [{ id: GUILD, channels: [CHANNEL] }] });
  fake.channels.set(DM, { id: DM, guildId: undefined, type: 1 });
  const adapter = createDiscordAdapter({ token: TOKEN, apiUrl: fake.apiUrl, statusEditIntervalMs: 30, log: () => {} });
  const sink = new ContractSink();
  await adapter.start(sink);
  const dm = refFor('dm', DM);
  const byId = (handle: string) => {
    const m = fake.byId(handle);
    if (!m) throw new Error(`no message ${handle}`);
    return m;
  };
  return {
    adapter,
    sink,
    textLimit: 2000,
    sampleRefs: () => [dm, refFor(GUILD, CHANNEL), refFor(GUILD, CHANNEL, '700000000000000099')],
    conversation: () => dm,
    sendCommand: async (ref, command) => {
      fake.userMessage({ user: { id: '600000000000000001', name: 'Ada' }, channel: ref.channelId, text: `/${command}@gatehouse`, mention: true });
    },
    click: async (ref, handle, token) => {
      const type = await fake.click({ user: { id: '600000000000000001', name: 'Ada' }, message: byId(handle), customId: `gh:${token}` });
      if (type === 0) throw new Error('the click was not acknowledged within 3 s');
    },
    privateNotices: () => fake.ephemerals.map((e) => discordToPlain(e.content)),
    visible: (ref) => fake.visible(ref.threadId ?? ref.channelId).map(seenDiscord),
    message: (_ref, handle) => seenDiscord(byId(handle)),
    rateLimitEdits: (times) => fake.rateLimitEdits(times, 1),
    editStats: () => ({
      accepted: fake.calls.filter((c) => c.method === 'PATCH' && c.route.startsWith('/channels/') && c.status === 200).length,
      limited: fake.calls.filter((c) => c.method === 'PATCH' && c.status === 429).length,
      retryAfterViolations: fake.retryAfterViolations,
    }),
    close: async () => {
      await adapter.stop();
      await fake.close();
    },
  };
});
