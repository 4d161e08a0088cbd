/**
 * The conversations of the replica end-to-end tests: private Telegram chats sending numbered messages
 * through the fake Telegram (webhook mode), and one fake model per replica answering them, so each
 * model call tells which replica made it.
 *
 * Contract:
 * - A message is `please c<chat>-m<n>[-hold|-approve|-ask]`; the model of replica S answers
 *   `answer c<chat>-m<n> by r<S>`.
 *   `-ask`: first the model asks `which colour for c<chat>-m<n>?` (ask_user_question, one
 *   suggestion, typed replies allowed), then answers; the call after the answer records the tool
 *   result it got (`toolResult`). `sendText` sends a reply that is not a numbered message.
 *   `-approve`: first the model asks for `echo c<chat>-m<n> >> lines.txt` (execute_command, which
 *   needs an approval), then answers. `-hold`: when `holdAt(slot)` is true for the replica that
 *   got the call, the model does not answer it (that replica is about to be killed mid-run); a
 *   later call for the same message (the run resumed elsewhere) is answered.
 * - `send` keeps each chat's deliveries in the order of the calls (the next one is POSTed when the
 *   previous delivery got a 2xx, retries included), chats independent of each other.
 * - `problems()` lists every broken guarantee found: an answer missing, twice or out of order; a
 *   repeat is allowed only for an answer a replica in `killed` made: posting to Telegram is not
 *   idempotent, so a replica SIGKILLed after Telegram took its message and before it could record
 *   that (one store round trip) has it posted again by the replica taking over (`repeats` lists
 *   them); a
 *   model call whose transcript is not the chat's messages 0..n in order; a delivery that never got
 *   a 2xx; an approved command that ran other than once. Empty when all held.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import type { FakeTelegram, SentMessage } from '../fakes/telegram.js';
import { seededRandom } from './random.js';
import { waitFor } from './wait.js';

/** The answers' random delays (a failure names the seed; TEST_SEED replays it). */
export const replyDelays = seededRandom();

export const CLASSIFIER_MODEL = 'claude-haiku-5-5';
export const FIRST_CHAT = 2001;
export const CHAT_IDS = Array.from({ length: 400 }, (_, i) => FIRST_CHAT + i);

export type Kind = 'plain' | 'hold' | 'approve' | 'ask';

export interface ModelCall {
  slot: number;
  chat: number;
  n: number;
  kind: Kind;
  /** After the approved command's result (the second call of an -approve turn). */
  afterTool: boolean;
  /** The chat's message numbers in the call's user messages, in order. */
  seen: number[];
  held: boolean;
  /** The tool result the call's last user message carried (the question's answer, the command's output). */
  toolResult?: string;
}

/** A temp folder for a replica test: its workspace `ws` and its `gatehouse.yaml` (replicaConfig). */
export function replicaFolder(prefix: string): { dir: string; workspace: string; configFile: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755); // a root bot's commands run as 65534, which must get through to the workspace
  const workspace = join(dir, 'ws');
  mkdirSync(workspace);
  const configFile = join(dir, 'gatehouse.yaml');
  writeFileSync(configFile, replicaConfig(workspace));
  return { dir, workspace, configFile };
}

/** The agent config for the tests: execute_command asks a bound approver (every chat's user). */
export function replicaConfig(workspace: string): string {
  const ids = CHAT_IDS.map((id) => `"${id}"`).join(', ');
  return [
    'agents:',
    '  default:',
    '    model: claude-sonnet-5-5',
    `    classifierModel: ${CLASSIFIER_MODEL}`,
    '    tools: [execute_command, ask_user_question]',
    '    tier: read-only',
    `    workspace: "${workspace}"`,
    `    approvers: { telegram: [${ids}] }`,
    // Each chat's user approves their own command (the requester rule is tested in test/agent/requester-approval*).
    '    requesterMayApprove: true',
    'access:',
    `  telegram: { users: [${ids}] }`,
    '  rateLimit: { messages: 10000, perSeconds: 1 }',
    '',
  ].join('\n');
}

const TOKEN = /\bc(\d+)-m(\d+)(?:-(hold|approve|ask))?\b/g;

function userTexts(body: unknown): { texts: string[]; lastIsToolResult: boolean; toolResult?: string } {
  const messages = ((body as { messages?: unknown }).messages ?? []) as Array<{ role: string; content: unknown }>;
  const texts: string[] = [];
  let lastIsToolResult = false;
  let toolResult: string | undefined;
  for (const m of messages) {
    if (m.role !== 'user') continue;
    const blocks =
      typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : ((m.content ?? []) as Array<{ type: string; text?: string; content?: unknown }>);
    const result = blocks.find((b) => b.type === 'tool_result');
    lastIsToolResult = result !== undefined;
    toolResult = result === undefined ? undefined : typeof result.content === 'string' ? result.content : JSON.stringify(result.content);
    for (const b of blocks) if (b.type === 'text' && typeof b.text === 'string') texts.push(b.text);
  }
  return { texts, lastIsToolResult, ...(toolResult !== undefined ? { toolResult } : {}) };
}

export class ReplicaChats {
  readonly models: FakeAnthropic[] = [];
  readonly calls: ModelCall[] = [];
  /** Per chat: the message numbers sent, in order, and their kinds. */
  readonly sentKinds = new Map<number, Kind[]>();
  private readonly chains = new Map<number, Promise<unknown>>();
  readonly failedDeliveries: string[] = [];
  /** The update id each message went out as (to follow it through the front's deliveries). */
  readonly updateOf = new Map<string, number>();
  /** Which replica slot is to hold -hold messages; undefined: none holds. */
  holdAt: (slot: number) => boolean = () => false;
  private readonly heldOnce = new Set<string>();
  private nextChat = FIRST_CHAT;

  constructor(
    private readonly tg: FakeTelegram,
    private readonly workspace: string,
  ) {}

  async startModels(count: number): Promise<void> {
    for (let slot = 0; slot < count; slot++) {
      const model = await startFakeAnthropic({ apiKey: 'sk-test' });
      model.setHandler((req) => this.reply(slot, req));
      this.models.push(model);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.models.map((m) => m.close()));
  }

  newChat(): number {
    const id = this.nextChat++;
    if (!CHAT_IDS.includes(id)) throw new Error(`out of chat ids (${CHAT_IDS.length} allowed in the config)`);
    return id;
  }

  private reply(slot: number, req: RecordedRequest): FakeReply {
    const body = req.body as { model?: string };
    if (body.model === CLASSIFIER_MODEL) return { text: 'high-risk' };
    const { texts, lastIsToolResult, toolResult } = userTexts(req.body);
    const tokens = [...texts.join('\n').matchAll(TOKEN)].map((m) => ({ chat: Number(m[1]), n: Number(m[2]), kind: (m[3] ?? 'plain') as Kind }));
    const last = tokens.at(-1);
    if (!last) return { text: 'no token in this call' };
    const seen = tokens.filter((t) => t.chat === last.chat).map((t) => t.n);
    const key = `c${last.chat}-m${last.n}`;
    const call: ModelCall = {
      slot,
      chat: last.chat,
      n: last.n,
      kind: last.kind,
      afterTool: lastIsToolResult,
      seen,
      held: false,
      ...(toolResult !== undefined ? { toolResult } : {}),
    };
    this.calls.push(call);
    if (last.kind === 'approve' && !lastIsToolResult) {
      return { toolUses: [{ name: 'execute_command', input: { command: `echo ${key} >> lines.txt` } }] };
    }
    if (last.kind === 'ask' && !lastIsToolResult) {
      const question = { question: `which colour for ${key}?`, suggestions: [{ value: 'green', label: 'Green' }], allowCustom: true };
      return { toolUses: [{ name: 'ask_user_question', input: question }] };
    }
    if (last.kind === 'hold' && !this.heldOnce.has(key) && this.holdAt(slot)) {
      this.heldOnce.add(key);
      call.held = true;
      // Longer than any test: the replica is killed while it waits (close() cancels the delay).
      return { text: `answer ${key} by r${slot}`, delayMs: 600_000 };
    }
    return { text: `answer ${key} by r${slot}`, delayMs: replyDelays.int(0, 150) };
  }

  /** Sends the chat's next message (after its previous one was delivered); resolves when delivered. */
  send(chat: number, kind: Kind = 'plain'): { n: number; delivered: Promise<void> } {
    const kinds = this.sentKinds.get(chat) ?? [];
    this.sentKinds.set(chat, kinds);
    const n = kinds.push(kind) - 1;
    const text = `please c${chat}-m${n}${kind === 'plain' ? '' : `-${kind}`}`;
    const delivered = (this.chains.get(chat) ?? Promise.resolve()).then(async () => {
      const r = await this.tg.sendText({ chat: { id: chat, type: 'private', first_name: `U${chat}` }, from: { id: chat, first_name: `U${chat}` }, text });
      this.updateOf.set(`c${chat}-m${n}`, r.updateId);
      if (r.status === undefined || r.status < 200 || r.status >= 300) this.failedDeliveries.push(`c${chat}-m${n}: last status ${r.status}`);
    });
    this.chains.set(
      chat,
      delivered.catch(() => undefined),
    );
    return { n, delivered };
  }

  /** Sends a text that is not a numbered message (a typed reply), after the chat's earlier sends; resolves with its update id once delivered. */
  sendText(chat: number, text: string): Promise<number> {
    const delivered = (this.chains.get(chat) ?? Promise.resolve()).then(async () => {
      const r = await this.tg.sendText({ chat: { id: chat, type: 'private', first_name: `U${chat}` }, from: { id: chat, first_name: `U${chat}` }, text });
      if (r.status === undefined || r.status < 200 || r.status >= 300)
        this.failedDeliveries.push(`${JSON.stringify(text)} in chat ${chat}: last status ${r.status}`);
      return r.updateId;
    });
    this.chains.set(
      chat,
      delivered.catch(() => undefined),
    );
    return delivered;
  }

  /** The message numbers answered in a chat, in the order the answers reached Telegram. */
  answers(chat: number): number[] {
    return this.copies(chat).map((c) => c.n);
  }

  /** Each answer that reached Telegram, in order, with the replica whose model made it. */
  copies(chat: number): Array<{ n: number; slot: number }> {
    const re = new RegExp(`^answer c${chat}-m(\\d+) by r(\\d+)$`);
    return this.tg.sent
      .filter((m) => m.chatId === chat && !m.deleted)
      .flatMap((m) => {
        const x = re.exec(m.plain);
        return x ? [{ n: Number(x[1]), slot: Number(x[2]) }] : [];
      });
  }

  /** Replicas SIGKILLed so far (the test adds them): their last answers may be posted twice. */
  readonly killed = new Set<number>();
  /** Answers posted twice because the replica that made them was killed (see problems()). */
  readonly repeats: string[] = [];

  waitAnswered(chat: number, n: number, ms = 120_000): Promise<void> {
    return this.tg.waitFor(() => this.answers(chat).includes(n), ms, `the answer to c${chat}-m${n}`);
  }

  /** The card (approval or question) of an -approve or -ask message, once the replica running it posted it. */
  async card(chat: number, n: number, ms = 120_000): Promise<SentMessage> {
    const find = () =>
      this.tg.sent.find(
        (m) => m.chatId === chat && !m.deleted && m.plain.includes(`c${chat}-m${n}`) && (m.replyMarkup?.inline_keyboard.flat().length ?? 0) > 0,
      );
    await this.tg.waitFor(() => find() !== undefined, ms, `the approval card of c${chat}-m${n}`);
    return find()!;
  }

  /** Resolves once a model call matches (the fake model does not wake the fake Telegram's waiters). */
  async untilCall(pred: (c: ModelCall) => boolean, ms: number, what: string): Promise<ModelCall> {
    return waitFor(what, () => this.calls.find(pred), { timeoutMs: ms, intervalMs: 20 });
  }

  /** The replica that asked the model for the command (the one running the turn). */
  runnerOf(chat: number, n: number): number | undefined {
    return this.calls.find((c) => c.chat === chat && c.n === n && !c.afterTool)?.slot;
  }

  /** Lines `c<chat>-m<n>` the approved commands appended to the workspace's lines.txt. */
  linesOf(key: string): number {
    let text = '';
    try {
      text = readFileSync(join(this.workspace, 'lines.txt'), 'utf8');
    } catch {
      return 0;
    }
    return text.split('\n').filter((l) => l === key).length;
  }

  /** Waits until every message sent has been delivered and answered. */
  async settle(ms = 180_000): Promise<void> {
    await Promise.all([...this.chains.values()]);
    const missing = () =>
      [...this.sentKinds].flatMap(([chat, kinds]) =>
        kinds
          .map((_, n) => n)
          .filter((n) => !this.answers(chat).includes(n))
          .map((n) => `c${chat}-m${n}`),
      );
    await this.tg
      .waitFor(() => missing().length === 0, ms, 'every message answered')
      .catch((err: Error) => {
        throw new Error(`${err.message}; unanswered: ${missing().slice(0, 20).join(', ')}`);
      });
  }

  problems(): string[] {
    const out = [...this.failedDeliveries.map((d) => `never delivered: ${d}`)];
    for (const [chat, kinds] of this.sentKinds) {
      const first = new Map<number, number>();
      const got: number[] = [];
      for (const c of this.copies(chat)) {
        const by = first.get(c.n);
        if (by === undefined) first.set(c.n, c.slot);
        else if (this.killed.has(by)) {
          this.repeats.push(`c${chat}-m${c.n} (made by killed replica ${by}; again ${c.slot === by ? 'from its outbox' : `made by replica ${c.slot}`})`);
          continue;
        }
        got.push(c.n);
      }
      const want = kinds.map((_, n) => n);
      if (JSON.stringify(got) !== JSON.stringify(want)) out.push(`chat ${chat}: answers ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
      kinds.forEach((kind, n) => {
        if (kind !== 'approve') return;
        const lines = this.linesOf(`c${chat}-m${n}`);
        if (lines !== 1) out.push(`c${chat}-m${n}: the approved command ran ${lines} times`);
      });
    }
    for (const c of this.calls) {
      const want = Array.from({ length: c.n + 1 }, (_, i) => i);
      if (JSON.stringify(c.seen) !== JSON.stringify(want))
        out.push(`model call for c${c.chat}-m${c.n} on replica ${c.slot} saw messages ${JSON.stringify(c.seen)}`);
    }
    return out;
  }
}
