/**
 * The terminal adapter: a chat in the terminal, through the same seam as the chat platforms.
 * One conversation, `console:<name>` (default `console:local`); the local user's id is `local`,
 * which the default config binds as the console approver.
 *
 * Cards are shown as numbered choices ([1] Approve once ...). Numbers count up for the life of the
 * process, so a number means one button of one card and is never reused. A line that is exactly the
 * number of an open card's button clicks it; a number that is not an open choice while a card is open,
 * or that belonged to a card already closed, gets a notice and is not sent to the model. Any other
 * line is a message (and answers an open question that allows typed answers).
 *
 * The screen: a `you> ` prompt shows where to type when the bot is not writing; on a terminal (TTY)
 * a working indicator shows while the model thinks and is erased before anything else is written.
 * While a card is open the prompt shows, never the indicator: the run waits on the person (this holds
 * after a restart too, where the card is shown again before its run continues).
 * Ctrl-C (`interrupt()`, called by the CLI on SIGINT): a turn running or waiting on a card is
 * cancelled (as /stop); with nothing running it only says how to quit. A second Ctrl-C with no line
 * typed in between returns "quit" (the CLI stops the bot, as Ctrl-D does).
 * Card handles are unique across restarts: a card shown before a restart is decided silently here
 * (its copy shown again after the restart carries the outcome). Streams are injectable so tests
 * drive it like a person at a keyboard.
 */
import { randomUUID } from 'node:crypto';
import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { AgentEvent, Card } from '../../agent/events.js';
import type { Adapter, AdapterSink, ConversationRef } from '../types.js';
import { AdapterError } from '../kit/errors.js';

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

function encodeConsoleKey(name: string): string {
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
  /** Distinct from the handles of an earlier process (they are stored with pending cards). */
  private readonly handlePrefix = randomUUID().slice(0, 8);
  private nextHandle = 1;
  private nextNumber = 1;
  private streaming = false;
  /** The prompt is the last thing on the screen (the next write starts a new line first). */
  private promptShown = false;
  private readonly tty: boolean;
  private spinner: NodeJS.Timeout | undefined;
  private spinnerFrame = 0;
  /** A run is in progress (between run_started and run_finished): the indicator may show. */
  private running = false;
  /** A Ctrl-C came and no line was typed since: the next one quits. */
  private interrupted = false;

  constructor(private readonly opts: ConsoleAdapterOptions = {}) {
    this.out = opts.output ?? process.stdout;
    this.tty = (this.out as { isTTY?: boolean }).isTTY === true;
    const name = opts.name ?? 'local';
    this.ref = { platform: 'console', key: encodeConsoleKey(name), channelId: name };
  }

  async start(sink: AdapterSink): Promise<void> {
    this.sink = sink;
    this.rl = createInterface({ input: this.opts.input ?? process.stdin, terminal: false });
    this.rl.on('line', (line) => void this.onLine(line));
    this.rl.on('close', () => this.opts.onClose?.());
    this.write(
      'Gatehouse terminal chat. Type a message; ! cmd runs a shell command for context, /stop or Ctrl-C cancels a run, /reset starts over, /help lists the commands, Ctrl-D quits.\n',
    );
    this.prompt();
  }

  async stop(): Promise<void> {
    this.stopSpinner();
    this.rl?.close();
  }

  decodeKey(key: string): ConversationRef {
    if (!key.startsWith('console:') || key.length <= 'console:'.length) throw new AdapterError('bad_input', `not a console conversation key: ${key}`);
    const name = key.slice('console:'.length);
    return { platform: 'console', key, channelId: name };
  }

  /** Everything goes through here: the indicator and the prompt are taken off the line first. */
  private write(s: string): void {
    this.clearSpinnerLine();
    if (this.promptShown) {
      this.out.write(this.tty ? '\r\x1b[K' : '\n');
      this.promptShown = false;
    }
    this.out.write(s);
  }

  private prompt(): void {
    if (this.promptShown || this.streaming) return;
    this.stopSpinner();
    this.out.write('you> ');
    this.promptShown = true;
  }

  private startSpinner(): void {
    // An open card waits on the person at the keyboard: the prompt stays, not "thinking".
    if (!this.tty || this.spinner || !this.running || this.cards.size > 0) return;
    const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    const draw = () => {
      if (this.promptShown) {
        this.out.write('\r\x1b[K');
        this.promptShown = false;
      }
      this.out.write(`\r${frames[this.spinnerFrame++ % frames.length]} thinking…`);
    };
    draw();
    this.spinner = setInterval(draw, 120);
    this.spinner.unref();
  }

  private clearSpinnerLine(): void {
    if (!this.spinner) return;
    clearInterval(this.spinner);
    this.spinner = undefined;
    this.out.write('\r\x1b[K');
  }

  private stopSpinner(): void {
    this.clearSpinnerLine();
  }

  private endStream(): void {
    if (this.streaming) {
      this.write('\n');
      this.streaming = false;
    }
  }

  /**
   * Ctrl-C. "cancelled": the running turn (or the card it waits on) is being stopped; "hint": nothing
   * ran, the screen says how to quit; "quit": the second Ctrl-C in a row, the caller stops the bot.
   */
  interrupt(): 'cancelled' | 'hint' | 'quit' {
    if (this.interrupted) return 'quit';
    this.interrupted = true;
    if (!this.sink || (!this.running && this.cards.size === 0)) {
      this.write('  (Ctrl-C again or Ctrl-D to quit)\n');
      this.prompt();
      return 'hint';
    }
    this.write('  (cancelling the turn; Ctrl-C again or Ctrl-D to quit)\n');
    void this.send('/stop').catch(() => undefined);
    return 'cancelled';
  }

  private user() {
    return { id: this.opts.userId ?? 'local', ...(this.opts.userName ? { name: this.opts.userName } : {}) };
  }

  /** A line as the user's message; what the core replies is written, then the prompt when due. */
  private async send(text: string): Promise<void> {
    const r = await this.sink!.message({
      platform: 'console',
      conversation: this.ref,
      sender: this.user(),
      text,
      attachments: [],
      isDirect: true,
      mentionsBot: true,
      eventId: randomUUID(),
    });
    if (r.reply) this.write(`${r.reply}\n`);
    // An accepted message starts (or joins) a run, which prompts again when it is done.
    if (!r.accepted || r.reply) this.prompt();
  }

  private async onLine(raw: string): Promise<void> {
    // A typed line ends with the user's own newline on a terminal: the prompt line is used up.
    if (this.tty) this.promptShown = false;
    this.interrupted = false;
    const line = raw.trim();
    if (!this.sink || line === '') {
      this.prompt();
      return;
    }
    const user = this.user();
    if (/^\d+$/.test(line)) {
      const n = Number(line);
      const choice = this.buttonByNumber(n);
      if (choice) {
        const r = await this.sink.action({
          platform: 'console',
          conversation: this.ref,
          token: choice.token,
          user,
          eventId: randomUUID(),
        });
        if (r.notice) this.write(`  (${r.notice})\n`);
        // The run goes on when nothing else waits: the indicator, not the prompt.
        if (this.running && this.cards.size === 0) this.startSpinner();
        else this.prompt();
        return;
      }
      // A number meant as a choice must never reach the model as a message. An open question takes
      // typed answers, numbers included ("How many replicas?" "3").
      const questionOpen = [...this.cards.values()].some((c) => c.card.kind === 'question');
      if (!questionOpen && (this.cards.size > 0 || n < this.nextNumber)) {
        this.write(`  (${n} is not an open choice${this.openChoices()}; nothing was sent)\n`);
        this.prompt();
        return;
      }
    }
    await this.send(line);
  }

  private openChoices(): string {
    const open = [...this.cards.values()].flatMap((c) => c.card.buttons.map((b, i) => `[${c.numbers[i]}] ${b.label}`));
    return open.length > 0 ? `; open: ${open.join('  ')}` : '';
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
      case 'run_started':
        this.running = true;
        this.startSpinner();
        return;
      case 'text':
        if (!this.streaming) this.write('agent> ');
        this.streaming = true;
        this.write(e.delta);
        return;
      case 'tool_started':
        this.endStream();
        this.write(`  · ${e.summary}\n`);
        return;
      case 'tool_declined':
        this.endStream();
        this.write(`  ✗ ${e.tool} declined: ${e.reason.split('\n')[0]}\n`);
        return;
      case 'tool_finished':
        this.write(`  ${e.ok ? '✓' : '✗'} ${e.tool}${e.ok ? '' : `: ${e.summary}`}\n`);
        if (this.cards.size === 0) this.startSpinner(); // the model reads the results next
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
        const sub = e.subagents
          ? `; of which ${e.subagents.count} sub-agent(s) ${e.subagents.usage.inputTokens} in, ${e.subagents.usage.outputTokens} out`
          : '';
        this.write(`  (${u.inputTokens} tokens in, ${u.outputTokens} out, ${cost}${cls}${sub})\n`);
        return;
      }
      case 'run_finished':
        this.endStream();
        this.running = false;
        this.stopSpinner();
        this.prompt();
        return;
      default:
        return;
    }
  }

  async postCard(_ref: ConversationRef, card: Card): Promise<string> {
    this.endStream();
    const handle = `${this.handlePrefix}-${this.nextHandle++}`;
    const numbers = card.buttons.map(() => this.nextNumber++);
    this.cards.set(handle, { handle, card, numbers });
    const lines = [`┌ ${card.title}`, ...card.body.split('\n').map((l) => `│ ${l}`)];
    if (card.preview) lines.push(...card.preview.split('\n').map((l) => `│   ${l}`));
    lines.push(`└ ${card.buttons.map((b, i) => `[${numbers[i]}] ${b.label}`).join('  ')}`);
    this.write(lines.join('\n') + '\n');
    this.prompt();
    return handle;
  }

  async updateCard(_ref: ConversationRef, handle: string, card: Card): Promise<void> {
    const open = this.cards.get(handle);
    // A card shown by an earlier process: its copy shown again in this one reports the outcome.
    if (!open) return;
    this.cards.delete(handle);
    this.endStream();
    this.write(`  ⮑ ${open.card.title}: ${card.outcome ?? 'closed'}\n`);
    if (this.cards.size === 0 && this.running) this.startSpinner();
    else this.prompt();
  }

  async postText(_ref: ConversationRef, text: string): Promise<void> {
    this.endStream();
    this.write(`${text}\n`);
    this.prompt();
  }
}
