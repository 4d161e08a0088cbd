/** Transcript invariants: trimming never separates a tool_use from its tool_result; repair answers orphans. */
import { fitToContext, estimateTokens } from '../../agent/context/fit.js';
import { appendUserTurn, repairTranscript } from '../../agent/context/conversation-store.js';
import type { Message } from '../../agent/context/messages.js';
import { freezeMessage } from '../../agent/context/transcript-diff.js';

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const assistant = (text: string): Message => ({ role: 'assistant', content: [{ type: 'text', text }] });
const toolCall = (id: string, payload: string): Message => ({
  role: 'assistant',
  content: [{ type: 'tool_use', id, name: 'read_file', input: { path: payload } }],
});
const toolResult = (id: string, text: string): Message => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: text }] });

function assertPaired(messages: Message[]): void {
  expect(messages[0]?.role).toBe('user');
  expect(messages[0]?.content.some((b) => b.type === 'tool_result')).toBe(false);
  for (let i = 0; i < messages.length; i++) {
    const uses = messages[i]!.content.filter((b) => b.type === 'tool_use');
    if (uses.length === 0) continue;
    const next = messages[i + 1];
    for (const u of uses) {
      expect(next?.content.some((b) => b.type === 'tool_result' && b.tool_use_id === (u as { id: string }).id)).toBe(true);
    }
  }
}

test('a transcript that fits is returned whole', () => {
  const t = [user('hi'), assistant('hello')];
  expect(fitToContext(t, 1000)).toEqual(t);
});

test('trimming drops whole old turns and never splits a tool_use from its result', () => {
  const big = 'x'.repeat(4000); // ~1000 tokens
  const t: Message[] = [];
  for (let i = 0; i < 20; i++) {
    t.push(user(`question ${i}`), toolCall(`t${i}`, big), toolResult(`t${i}`, big), assistant(`answer ${i}`));
  }
  const budget = 5000;
  const fitted = fitToContext(t, budget);
  expect(estimateTokens(fitted)).toBeLessThanOrEqual(budget);
  expect(fitted.length).toBeLessThan(t.length);
  assertPaired(fitted);
  // The newest turn is kept, in full.
  expect(fitted.slice(-4)).toEqual(t.slice(-4));
});

test('the newest turn is kept even when it alone is over the budget', () => {
  const t = [user('old'), assistant('old answer'), user('x'.repeat(10_000))];
  expect(fitToContext(t, 100)).toEqual([t[2]]);
});

test('repair answers every unanswered tool_use with an error result', () => {
  const t: Message[] = [
    user('go'),
    {
      role: 'assistant',
      content: [
        { type: 'tool_use', id: 'a', name: 'ls', input: {} },
        { type: 'tool_use', id: 'b', name: 'ls', input: {} },
      ],
    },
  ];
  const repaired = repairTranscript(t);
  assertPaired(repaired);
  const results = repaired[2]!.content.filter((b) => b.type === 'tool_result');
  expect(results).toHaveLength(2);
  expect(results.every((r) => r.type === 'tool_result' && r.is_error)).toBe(true);
});

test('repair fills in a partly answered batch and keeps roles alternating', () => {
  const t: Message[] = [
    user('go'),
    {
      role: 'assistant',
      content: [
        { type: 'tool_use', id: 'a', name: 'ls', input: {} },
        { type: 'tool_use', id: 'b', name: 'ls', input: {} },
      ],
    },
    toolResult('a', 'done'),
    user('and then?'),
  ];
  const repaired = repairTranscript(t);
  assertPaired(repaired);
  expect(repaired.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  // tool_results first, then the user's text, in one user message.
  expect(repaired[2]!.content.map((b) => b.type)).toEqual(['tool_result', 'tool_result', 'text']);
});

test('a user turn after tool results merges into that message', () => {
  const t: Message[] = [user('go'), toolCall('a', 'f'), toolResult('a', 'r')];
  appendUserTurn(t, [{ type: 'text', text: 'next' }]);
  expect(t.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  expect(t[2]!.content.map((b) => b.type)).toEqual(['tool_result', 'text']);
});

describe('estimateTokens over a long transcript measured again and again', () => {
  const naive = (ms: readonly Message[]) =>
    Math.ceil(ms.reduce((n, m) => n + m.content.reduce((k, b) => k + (b.type === 'text' ? b.text.length : 0), 0), 0) / 4);
  const msg = (i: number, frozen = true): Message => {
    const m: Message = { role: i % 2 ? 'assistant' : 'user', content: [{ type: 'text', text: 'x'.repeat(1 + (i % 7)) }] };
    return frozen ? freezeMessage(m) : m;
  };
  it('equals the plain sum after appends, a replaced message, a truncation and an unfrozen message', () => {
    const ms: Message[] = Array.from({ length: 100 }, (_, i) => msg(i));
    expect(estimateTokens(ms)).toBe(naive(ms));
    ms.push(msg(100), msg(101));
    expect(estimateTokens(ms)).toBe(naive(ms));
    ms[50] = msg(3); // a new object in the middle
    expect(estimateTokens(ms)).toBe(naive(ms));
    ms.length = 80;
    expect(estimateTokens(ms)).toBe(naive(ms));
    const loose = msg(5, false);
    ms.splice(70, 0, loose);
    expect(estimateTokens(ms)).toBe(naive(ms));
    (loose.content[0] as { text: string }).text = 'y'.repeat(400); // unfrozen: never remembered
    expect(estimateTokens(ms)).toBe(naive(ms));
    expect(estimateTokens(ms.slice(0, 90))).toBe(naive(ms.slice(0, 90)));
    expect(estimateTokens(ms)).toBe(naive(ms));
  });
});
