/**
 * The adapter conformance suite: what every platform adapter must do on the seam
 * (adapters/types.ts), checked through the real platform library against that platform's fake.
 * A platform passes by providing a `ContractDriver` (how to act as its users and read what they see)
 * and calling `adapterContract`. Not a test file itself.
 */
import type { Card } from '../../../agent/events.js';
import type { ActionResult, Adapter, AdapterSink, ConversationRef, InboundAction, InboundMessage, MessageResult } from '../../../adapters/types.js';
import { until } from '../../helpers/wait.js';

export class ContractSink implements AdapterSink {
  readonly messages: InboundMessage[] = [];
  readonly actions: InboundAction[] = [];
  onAction: (a: InboundAction) => ActionResult = () => ({ accepted: true });
  async message(m: InboundMessage): Promise<MessageResult> {
    this.messages.push(m);
    return { accepted: true };
  }
  async action(a: InboundAction): Promise<ActionResult> {
    this.actions.push(a);
    return this.onAction(a);
  }
}

/** What the users of a conversation see of one bot message. */
export interface SeenMessage {
  /** The visible text (markup parsed). */
  text: string;
  /** Button (or select option) tokens still offered on it. */
  tokens: string[];
  /** Link targets in it (formatted links, whose URL is not part of the visible text). */
  links: string[];
  /** The text of its preformatted (code) blocks. */
  code: string[];
}

export interface ContractDriver {
  readonly adapter: Adapter;
  readonly sink: ContractSink;
  /** The platform's message limit for an answer, as it counts it. */
  readonly textLimit: number;
  /** Refs the platform produces (DM, group/channel, thread/topic): each must survive decodeKey. */
  sampleRefs(): ConversationRef[];
  /** A conversation the bot can post in, with a user in it. */
  conversation(): ConversationRef;
  /** That user sends `text` (a command addressed to this bot by name when `toBot`). */
  sendCommand(ref: ConversationRef, command: string): Promise<void>;
  /** That user clicks the button carrying `token` on message `handle`; resolves when the click is answered. */
  click(ref: ConversationRef, handle: string, token: string): Promise<void>;
  /** Notices shown privately to the clicker (callback answer, ephemeral message), in order. */
  privateNotices(): string[];
  /** Bot messages currently visible in the conversation, oldest first. */
  visible(ref: ConversationRef): SeenMessage[];
  /** The message behind a card handle. */
  message(ref: ConversationRef, handle: string): SeenMessage;
  /** The next `times` edits of the status message get the platform's 429 with a retry-after. */
  rateLimitEdits(times: number): void;
  /** How many edits reached the platform and how many were refused by the rate limit. */
  editStats(): { accepted: number; limited: number; retryAfterViolations: number };
  close(): Promise<void>;
}

const squash = (s: string) => s.replace(/\s+/g, '');

const approvalCard = (): Card => ({
  kind: 'approval',
  title: 'Run a command?',
  body: 'execute_command: deploy to production',
  preview: 'kubectl apply -f deploy.yaml',
  buttons: [
    { token: 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0', label: 'Approve once', style: 'primary' },
    { token: 'Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2H1g0', label: 'Always approve kubectl apply', style: 'default' },
    { token: 'd3nY-d3nY_d3nY-d3nY_d3nY-d3nY_d3nY-d3nY_', label: 'Deny', style: 'danger' },
  ],
  tier: 'high-risk',
});

export function adapterContract(name: string, makeDriver: () => Promise<ContractDriver>): void {
  describe(`${name} adapter conformance`, () => {
    let d: ContractDriver;
    beforeEach(async () => {
      d = await makeDriver();
    });
    afterEach(async () => {
      await d.close();
    });

    test('conversation keys round-trip through decodeKey', () => {
      const refs = d.sampleRefs();
      expect(refs.length).toBeGreaterThanOrEqual(2);
      for (const ref of refs) {
        expect(ref.key.startsWith(`${d.adapter.platform}:`)).toBe(true);
        expect(d.adapter.decodeKey(ref.key)).toEqual(ref);
      }
      expect(() => d.adapter.decodeKey(`${d.adapter.platform}:`)).toThrow();
      expect(() => d.adapter.decodeKey('elsewhere:1')).toThrow();
    });

    test('a command addressed to the bot by name arrives normalized ("/stop@bot" -> "/stop")', async () => {
      const ref = d.conversation();
      await d.sendCommand(ref, 'stop');
      await until(() => d.sink.messages.length === 1, 'the command');
      expect(d.sink.messages[0]?.text).toBe('/stop');
      expect(d.sink.messages[0]?.conversation).toEqual(ref);
    });

    test('a card is posted with its buttons, then updated in place without them', async () => {
      const ref = d.conversation();
      const card = approvalCard();
      const handle = await d.adapter.postCard(ref, card);
      const posted = d.message(ref, handle);
      expect(posted.tokens).toEqual(card.buttons.map((b) => b.token));
      expect(posted.text).toContain('kubectl apply -f deploy.yaml');
      await d.adapter.updateCard(ref, handle, { ...card, buttons: [], outcome: 'Approved once by Ada at 10:02' });
      const decided = d.message(ref, handle);
      expect(decided.tokens).toEqual([]);
      expect(decided.text).toContain('Approved once by Ada at 10:02');
      expect(d.visible(ref).filter((m) => m.text.includes('Run a command?'))).toHaveLength(1);
    });

    test("a click passes the button's token exactly; the notice is shown only to the clicker", async () => {
      const ref = d.conversation();
      const card = approvalCard();
      const handle = await d.adapter.postCard(ref, card);
      d.sink.onAction = () => ({ accepted: false, notice: 'Only the bound approvers can decide this.' });
      const token = card.buttons[2]!.token;
      await d.click(ref, handle, token);
      await until(() => d.privateNotices().length > 0, 'the private notice');
      expect(d.sink.actions.map((a) => a.token)).toEqual([token]);
      expect(d.sink.actions[0]?.conversation).toEqual(ref);
      expect(d.privateNotices()).toEqual(['Only the bound approvers can decide this.']);
      for (const m of d.visible(ref)) expect(m.text).not.toContain('Only the bound approvers');
      expect(d.message(ref, handle).tokens).toEqual(card.buttons.map((b) => b.token)); // nothing changed
    });

    test('a long answer is split under the limit with nothing lost and code blocks intact', async () => {
      const ref = d.conversation();
      const code = Array.from({ length: 300 }, (_, i) => `row ${i}: a < b && c > d`).join('\n');
      const md = ['Intro with a [link](https://example.com/x?a=1&b=2).', 'words '.repeat(900), `\`\`\`\n${code}\n\`\`\``, 'The end.'].join('\n\n');
      await d.adapter.render(ref, { type: 'run_started', runId: 'r1' });
      await d.adapter.render(ref, { type: 'answer', runId: 'r1', text: md });
      await d.adapter.render(ref, { type: 'run_finished', runId: 'r1', reason: 'completed' });
      const msgs = d.visible(ref);
      expect(msgs.length).toBeGreaterThanOrEqual(3);
      for (const m of msgs) expect(m.text.length).toBeLessThanOrEqual(d.textLimit);
      const all = squash(msgs.map((m) => m.text).join(''));
      expect(all).toContain(squash('Intro with a link'));
      expect(msgs.flatMap((m) => m.links)).toEqual(['https://example.com/x?a=1&b=2']);
      expect(all).toContain(squash('words '.repeat(900)));
      expect(all).toContain(squash(code));
      expect(all.endsWith('Theend.')).toBe(true);
      // the code block arrives as code blocks only, split at line breaks, each row once and whole
      expect(msgs.flatMap((m) => m.code).join('\n')).toBe(code);
      for (let i = 0; i < 300; i += 37) expect(all.split(squash(`row ${i}: a < b && c > d`)).length).toBe(2);
    });

    test('status edits are coalesced and wait out a 429 (retry-after honoured), then show the latest state', async () => {
      const ref = d.conversation();
      await d.adapter.render(ref, { type: 'run_started', runId: 'r1' });
      await d.adapter.render(ref, { type: 'tool_started', runId: 'r1', callId: 'c0', tool: 'shell', summary: 'step 0' });
      await until(() => d.visible(ref).length === 1, 'the status message');
      d.rateLimitEdits(1);
      for (let i = 1; i <= 20; i++) {
        await d.adapter.render(ref, { type: 'tool_started', runId: 'r1', callId: `c${i}`, tool: 'shell', summary: `step ${i}` });
      }
      await until(() => (d.visible(ref)[0]?.text ?? '').includes('step 20'), 'the latest state after the 429');
      const stats = d.editStats();
      expect(stats.limited).toBe(1);
      expect(stats.retryAfterViolations).toBe(0);
      expect(stats.accepted).toBeLessThan(20);
      expect(d.visible(ref)).toHaveLength(1);
      await d.adapter.render(ref, { type: 'answer', runId: 'r1', text: 'Done.' });
      await d.adapter.render(ref, { type: 'run_finished', runId: 'r1', reason: 'completed' });
      expect(d.visible(ref).map((m) => m.text)).toEqual(['Done.']);
    });
  });
}
