/**
 * A test adapter on the real seam: it records what the core renders and lets a test click buttons as
 * a given user, exactly as a platform adapter would report them. Platform 'console' with keys
 * `console:<name>`, so several conversations can be driven at once.
 */
import { randomUUID } from 'node:crypto';
import type { Adapter, AdapterSink, ActionResult, ConversationRef, InboundMessage, MessageResult } from '../../adapters/types.js';
import type { AgentEvent, Card } from '../../agent/events.js';

export interface PostedCard {
  handle: string;
  key: string;
  card: Card;
  /** Every replacement, last one current. */
  updates: Card[];
}

export class RecordingAdapter implements Adapter {
  readonly platform = 'console' as const;
  /** Records `text` events, so runs stream unless a test turns this off. */
  streamsText = true;
  sink?: AdapterSink;
  readonly events: Array<{ key: string; event: AgentEvent }> = [];
  readonly cards: PostedCard[] = [];
  readonly texts: Array<{ key: string; text: string }> = [];
  private nextId = 1;

  async start(sink: AdapterSink): Promise<void> {
    this.sink = sink;
  }
  async stop(): Promise<void> {}

  decodeKey(key: string): ConversationRef {
    return { platform: 'console', key, channelId: key.slice('console:'.length) };
  }

  async render(ref: ConversationRef, event: AgentEvent): Promise<void> {
    this.events.push({ key: ref.key, event });
  }
  async postCard(ref: ConversationRef, card: Card): Promise<string> {
    const handle = `card-${this.nextId++}`;
    this.cards.push({ handle, key: ref.key, card, updates: [] });
    return handle;
  }
  async updateCard(_ref: ConversationRef, handle: string, card: Card): Promise<void> {
    const c = this.cards.find((x) => x.handle === handle);
    if (!c) throw new Error(`updateCard on unknown handle ${handle}`);
    c.updates.push(card);
  }
  async postText(ref: ConversationRef, text: string): Promise<void> {
    this.texts.push({ key: ref.key, text });
  }

  send(text: string, opts: { user?: string; conversation?: string; attachments?: InboundMessage['attachments'] } = {}): Promise<MessageResult> {
    const key = `console:${opts.conversation ?? 'main'}`;
    return this.sink!.message({
      platform: 'console',
      conversation: this.decodeKey(key),
      sender: { id: opts.user ?? 'local', name: opts.user ?? 'local' },
      text,
      attachments: opts.attachments ?? [],
      isDirect: true,
      mentionsBot: true,
      eventId: randomUUID(),
    });
  }

  /** Clicks the button labelled `label` (prefix match) on card `card`. */
  click(card: PostedCard, label: string, opts: { user?: string; conversation?: string; eventId?: string } = {}): Promise<ActionResult> {
    const button = card.card.buttons.find((b) => b.label.startsWith(label));
    if (!button) throw new Error(`no button "${label}" on card "${card.card.title}"`);
    return this.clickToken(button.token, { ...opts, conversation: opts.conversation ?? card.key.slice('console:'.length) });
  }

  clickToken(token: string, opts: { user?: string; conversation?: string; eventId?: string } = {}): Promise<ActionResult> {
    const key = `console:${opts.conversation ?? 'main'}`;
    return this.sink!.action({
      platform: 'console',
      conversation: this.decodeKey(key),
      token,
      user: { id: opts.user ?? 'local', name: opts.user ?? 'local' },
      eventId: opts.eventId ?? randomUUID(),
    });
  }

  eventsOf(key: string, type?: AgentEvent['type']): AgentEvent[] {
    return this.events.filter((e) => e.key === key && (type === undefined || e.event.type === type)).map((e) => e.event);
  }

  answers(key = 'console:main'): string[] {
    return this.eventsOf(key).flatMap((e) => (e.type === 'answer' ? [e.text] : e.type === 'error' ? [`ERROR: ${e.message}`] : []));
  }
}
