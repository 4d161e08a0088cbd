/**
 * The terminal adapter: a chat in the terminal, through the same seam as the chat platforms.
 * One conversation, `console:<name>` (default `console:local`); the local user's id is `local`,
 * which the default config binds as the console approver.
 *
 * Cards are shown as numbered choices ([1] Approve once ...). A line that is exactly the number of an
 * open card's button clicks it; any other line is a message (and answers an open question that
 * allows typed answers). Streams are injectable so tests drive it like a person at a keyboard.
 */
import { randomUUID } from 'node:crypto';
import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { AgentEvent, Card } from '../../agent/events.js';
import type { Adapter, AdapterSink, ConversationRef } from '../types.js';

export interface ConsoleAdapterOptions {
  input?: Readable;
  output?: Writable;
  /** The conversation's name (the key is console:<name>). */
  name?: string;
  userId?: string;
  userName?: string;
  /** Called when the input ends (Ctrl-D): the CLI stops the bot. */
  onClose?: () => void;
}

interface OpenCard {
  handle: string;
  card: Card;
  /** Global numbers of its buttons, in order. */
  numbers: number[];
}

export function encodeConsoleKey(name: string): string {
  return `console:${name}`;
}

export class ConsoleAdapter implements Adapter {
  readonly platform = 'console' as const;
  readonly streamsText = true;
  private rl?: Interface;
  private sink?: AdapterSink;
  private readonly out: Writable;
  private readonly ref: ConversationRef;
  private readonly cards = new Map<string, OpenCard>();
  private nextHandle = 1;
  private nextNumber = 1;
  private streaming = false;

  constructor(private readonly opts: ConsoleAdapterOptions = {}) {
    this.out = opts.output ?? process.stdout;
    const name = opts.name ?? 'local';
    this.ref = { platform: 'console', key: encodeConsoleKey(name), channelId: name };
  }

  async start(sink: AdapterSink): Promise<void> {
    this.sink = sink;
    this.rl = createInterface({ input: this.opts.input ?? process.stdin, terminal: false });
    this.rl.on('line', (line) => void this.onLine(line));
    this.rl.on('close', () => this.opts.onClose?.());
    this.write('Gatehouse terminal chat. Type a message; /stop cancels a run, /reset starts over, Ctrl-D quits.\n');
  }

  async stop(): Promise<void> {
    this.rl?.close();
  }

  decodeKey(key: string): ConversationRef {
    if (!key.startsWith('console:') || key.length <= 'console:'.length) throw new Error(`not a console conversation key: ${key}`);
    const name = key.slice('console:'.length);
    return { platform: 'console', key, channelId: name };
  }

  private write(s: string): void {
    this.out.write(s);
  }

  private endStream(): void {
    if (this.streaming) {
      this.write('\n');
      this.streaming = false;
    }
  }

  private async onLine(raw: string): Promise<void> {
    const line = raw.trim();
    if (!this.sink || line === '') return;
    const user = { id: this.opts.userId ?? 'local', ...(this.opts.userName ? { name: this.opts.userName } : {}) };
    const choice = /^\d+$/.test(line) ? this.buttonByNumber(Number(line)) : undefined;
    if (choice) {
      const r = await this.sink.action({
        platform: 'console',
        conversation: this.ref,
        token: choice.token,
        user,
        eventId: randomUUID(),
      });
      if (r.notice) this.write(`  (${r.notice})\n`);
      return;
    }
    const r = await this.sink.message({
      platform: 'console',
      conversation: this.ref,
      sender: user,
      text: line,
      attachments: [],
      isDirect: true,
      mentionsBot: true,
      eventId: randomUUID(),
    });
    if (r.reply) this.write(`${r.reply}\n`);
  }

  private buttonByNumber(n: number): { token: string } | undefined {
    for (const c of this.cards.values()) {
      const i = c.numbers.indexOf(n);
      if (i >= 0) return c.card.buttons[i];
    }
    return undefined;
  }

  async render(_ref: ConversationRef, e: AgentEvent): Promise<void> {
    switch (e.type) {
      case 'text':
        if (!this.streaming) this.write('agent> ');
        this.streaming = true;
        this.write(e.delta);
        return;
      case 'tool_started':
        this.endStream();
        this.write(`  · ${e.summary}\n`);
        return;
      case 'tool_finished':
        this.write(`  ${e.ok ? '✓' : '✗'} ${e.tool}${e.ok ? '' : `: ${e.summary}`}\n`);
        return;
      case 'answer':
        // The streamed text already showed the answer; print it only when nothing streamed.
        if (this.streaming) this.endStream();
        else this.write(`agent> ${e.text}\n`);
        return;
      case 'error':
        this.endStream();
        this.write(`agent! ${e.message}\n`);
        return;
      case 'usage': {
        this.endStream();
        const u = e.usage;
        if (u.inputTokens + u.outputTokens === 0) return; // nothing was spent (the model was not reached)
        const cost = u.costKnown ? `$${u.costUSD.toFixed(4)}` : 'cost unknown (no price for this model)';
        const cls = e.classifierUsage ? `; classifier ${e.classifierUsage.inputTokens + e.classifierUsage.outputTokens} tokens` : '';
        this.write(`  (${u.inputTokens} tokens in, ${u.outputTokens} out, ${cost}${cls})\n`);
        return;
      }
      case 'run_finished':
        this.endStream();
        return;
      default:
        return;
    }
  }

  async postCard(_ref: ConversationRef, card: Card): Promise<string> {
    this.endStream();
    const handle = String(this.nextHandle++);
    const numbers = card.buttons.map(() => this.nextNumber++);
    this.cards.set(handle, { handle, card, numbers });
    const lines = [`┌ ${card.title}`, ...card.body.split('\n').map((l) => `│ ${l}`)];
    if (card.preview) lines.push(...card.preview.split('\n').map((l) => `│   ${l}`));
    lines.push(`└ ${card.buttons.map((b, i) => `[${numbers[i]}] ${b.label}`).join('  ')}`);
    this.write(lines.join('\n') + '\n');
    return handle;
  }

  async updateCard(_ref: ConversationRef, handle: string, card: Card): Promise<void> {
    const open = this.cards.get(handle);
    this.cards.delete(handle);
    this.endStream();
    this.write(`  ⮑ ${open?.card.title ?? card.title}: ${card.outcome ?? 'closed'}\n`);
  }

  async postText(_ref: ConversationRef, text: string): Promise<void> {
    this.endStream();
    this.write(`${text}\n`);
  }
}
