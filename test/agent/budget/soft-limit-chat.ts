/**
 * Soft spending limits on a chat surface, end to end (issue 24): the real start path (BotE2e), the
 * real SDK against the fake model, whose usage numbers are what gets settled, and the platform's
 * fake, whose approval card a user clicks. Each surface file gives the driver; both engines run.
 *
 * The budget: this conversation soft at $0.05 (hard $1). Every answer costs 1000 in + 1000 out on
 * Sonnet = $0.018 and reserves at most $0.015 (1000 output tokens) plus its small input: two fit,
 * the third would pass $0.05 and asks.
 */
import { join } from 'node:path';
import { BotE2e } from '../../helpers/bot-e2e.js';
import type { TestEngine } from '../../helpers/harness.js';
import { waitFor } from '../../helpers/wait.js';

interface ChatCard {
  /** Everything the card says (title, body, outcome once decided). */
  text(): string;
  /** Whether it still has buttons. */
  open(): boolean;
  press(button: 'Approve once' | 'Deny'): Promise<void>;
}

export interface ChatSurface {
  boot(h: BotE2e): Promise<void>;
  /** The approver writes in their DM with the bot. */
  send(text: string): Promise<void>;
  /** What the bot shows in that DM, cards included. */
  texts(): string[];
  cards(): ChatCard[];
  stop?(): Promise<void>;
}

/** How the approver is shown on a decided card and in "denied by". */
export interface SurfaceInfo {
  platform: string;
  approverId: string;
  approverName: RegExp;
  access: string;
}

const yaml = (dir: string, s: SurfaceInfo, approvers: boolean, timeoutMs: number) => `
agents:
  default:
    model: claude-sonnet-4-6
    maxTokens: 1000
    tier: read-only
    workspace: "${join(dir, 'ws')}"
    ${approvers ? `approvers: { ${s.platform}: ["${s.approverId}"] }` : ''}
    requesterMayApprove: true
    approvalTimeoutMs: ${timeoutMs}
    budget:
      conversation: { usd: { soft: 0.05, hard: 1 } }
access:
  ${s.access}
`;

export function softLimitChatSuite(engine: TestEngine, info: SurfaceInfo, surface: () => ChatSurface): void {
  let h: BotE2e | undefined;
  let chat: ChatSurface;
  let answers = 0;
  const start = async (approvers: boolean, timeoutMs = 600_000) => {
    h = await BotE2e.start({ engine, prefix: 'gh-soft-limit-', yaml: (d) => yaml(d, info, approvers, timeoutMs) });
    answers = 0;
    h.model.setHandler(() => ({ text: `answer ${++answers}`, usage: { input_tokens: 1000, output_tokens: 1000 } }));
    chat = surface();
    await chat.boot(h);
  };
  afterEach(async () => {
    await h?.stopBot();
    await chat?.stop?.();
    await h?.close();
    h = undefined;
  });
  const ask = async (text: string, shown: (t: string) => boolean, what: string) => {
    await chat.send(text);
    await waitFor(what, () => chat.texts().some(shown));
  };
  const twoAnswers = async () => {
    await ask('one', (t) => t.includes('answer 1'), 'the first answer');
    await ask('two', (t) => t.includes('answer 2'), 'the second answer');
  };
  const theCard = async () => {
    await waitFor('the soft-limit card', () => chat.cards().length === 1);
    const card = chat.cards()[0]!;
    expect(card.text()).toContain('Allow more spending?');
    expect(card.text()).toContain('This conversation has spent $0.04 of $0.05; allow $0.05 more? (the hard limit is $1.00)');
    return card;
  };

  test('approved: the run goes on, and the raised limit holds after a restart (the store kept it)', async () => {
    await start(true);
    await twoAnswers();
    await chat.send('three');
    const card = await theCard();
    expect(h!.model.requests).toHaveLength(2); // the third call waits for the decision, unsent
    await card.press('Approve once');
    await waitFor('the third answer', () => chat.texts().some((t) => t.includes('answer 3')));
    await waitFor('the decided card', () => !card.open());
    expect(card.text()).toMatch(info.approverName);
    // Restart: a new process reads the raised limit ($0.10) from the store; $0.054 spent, no new card.
    await h!.stopBot();
    await chat.boot(h!);
    await ask('four', (t) => t.includes('answer 4'), 'the fourth answer');
    expect(chat.cards()).toHaveLength(1);
    expect(h!.model.requests).toHaveLength(4);
  });

  test('denied: the run ends saying which limit, the spend, who denied and that it does not reset', async () => {
    await start(true);
    await twoAnswers();
    await chat.send('three');
    const card = await theCard();
    await card.press('Deny');
    await waitFor('the stop', () => chat.texts().some((t) => t.includes('Stopped: the spending limit is reached')));
    const stop = chat.texts().find((t) => t.includes('Stopped: the spending limit is reached'))!;
    expect(stop).toContain('this conversation has spent $0.04 of $0.05 (conversation, usd); allowing $0.05 more was denied by');
    expect(stop).toMatch(info.approverName);
    expect(stop).toContain('it does not reset (start a new conversation or ask an operator).');
    expect(h!.model.requests).toHaveLength(2);
  });

  test('not decided in time: the card expires and the run ends saying so', async () => {
    await start(true, 1500);
    await twoAnswers();
    await chat.send('three');
    const card = await theCard();
    await waitFor('the stop', () => chat.texts().some((t) => t.includes('Stopped: the spending limit is reached')));
    const stop = chat.texts().find((t) => t.includes('Stopped: the spending limit is reached'))!;
    expect(stop).toContain('this conversation has spent $0.04 of $0.05 (conversation, usd); allowing $0.05 more was not decided in time; it does not reset');
    await waitFor('the expired card', () => !card.open());
    expect(h!.model.requests).toHaveLength(2);
  });

  test('no approver bound: no card, the run ends with the same explained stop', async () => {
    await start(false);
    await twoAnswers();
    await ask('three', (t) => t.includes('Stopped: the spending limit is reached'), 'the stop');
    const stop = chat.texts().find((t) => t.includes('Stopped:'))!;
    expect(stop).toContain(
      'this conversation has spent $0.04 of $0.05 (conversation, usd); it is a soft limit, but no approver is bound here to allow $0.05 more; it does not reset',
    );
    expect(chat.cards()).toHaveLength(0);
    expect(h!.model.requests).toHaveLength(2);
  });
}
