/**
 * The Discord adapter, with discord.js loaded only when it starts. discord.js takes seconds to import
 * on a busy machine; a bot that serves Telegram, Slack or the terminal alone never pays for it.
 *
 * Contract: the same Adapter as adapters/discord/adapter.ts (see its header). `decodeKey` works before
 * start; every other method before a successful start() throws "not started".
 */
import type { AgentEvent, Card } from '../../agent/events.js';
import type { Adapter, AdapterSink, AdapterStartOptions, ConversationRef, HeldConnection } from '../types.js';
import type { DiscordAdapterOptions } from './adapter.js';
import { decodeKey } from './keys.js';
import { AdapterError } from '../kit/errors.js';

export type { DiscordAdapterOptions };

export function createDiscordAdapter(opts: DiscordAdapterOptions): Adapter {
  let impl: Adapter | undefined;
  const started = (): Adapter => {
    if (!impl) throw new AdapterError('not_started', 'the Discord adapter is not started');
    return impl;
  };
  const held: HeldConnection = {
    name: 'Discord gateway',
    open: async () => started().held?.open(),
    close: async () => impl?.held?.close(),
    get up() {
      return impl?.held?.up ?? false;
    },
  };
  return {
    platform: 'discord',
    streamsText: false,
    held,
    async start(sink: AdapterSink, startOpts?: AdapterStartOptions): Promise<void> {
      const { createDiscordAdapter: create } = await import('./adapter.js');
      const a = create(opts);
      await a.start(sink, startOpts);
      impl = a;
    },
    async stop(): Promise<void> {
      // impl stays: runs finishing during the shutdown grace period still post their output
      await impl?.stop();
    },
    render: (ref: ConversationRef, event: AgentEvent) => started().render(ref, event),
    postCard: (ref: ConversationRef, card: Card) => started().postCard(ref, card),
    updateCard: (ref: ConversationRef, handle: string, card: Card) => started().updateCard(ref, handle, card),
    postText: (ref: ConversationRef, text: string) => started().postText(ref, text),
    openDirect: (userId: string) =>
      started().openDirect?.(userId) ?? Promise.reject(new AdapterError('not_started', 'the Discord adapter opens no direct messages')),
    userLabel: async (userId: string) => (impl ? impl.userLabel?.(userId) : undefined),
    decodeKey,
  };
}
