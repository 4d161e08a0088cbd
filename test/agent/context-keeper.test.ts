/** Where a summary may cut a transcript: never between a tool_use and its tool_result. */
import { chooseCut } from '../../agent/context/keeper.js';
import { estimateTokens } from '../../agent/context/fit.js';
import type { Message } from '../../agent/context/messages.js';

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const said = (text: string): Message => ({ role: 'assistant', content: [{ type: 'text', text }] });
const call = (id: string): Message => ({ role: 'assistant', content: [{ type: 'tool_use', id, name: 'read_file', input: { path: id } }] });
const result = (id: string, size = 2000): Message => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'r'.repeat(size) }] });

function splitsAPair(messages: Message[], cut: number): boolean {
  const kept = messages[cut];
  return kept !== undefined && kept.role === 'user' && kept.content.some((b) => b.type === 'tool_result');
}

test('one long agentic turn: the cut falls before an assistant message, keeping what fits', () => {
  const messages: Message[] = [user('do the big job')];
  for (let i = 0; i < 20; i++) messages.push(call(`t${i}`), result(`t${i}`));
  for (const budget of [0, 600, 2000, 5000, 9000]) {
    const cut = chooseCut(messages, 4, budget);
    expect(cut).toBeGreaterThan(0);
    expect(messages[cut]!.role).toBe('assistant');
    expect(splitsAPair(messages, cut)).toBe(false);
    // Either the rest fits, or it is the smallest cut possible (the last call and its result).
    expect(estimateTokens(messages.slice(cut)) <= budget || cut === messages.length - 2).toBe(true);
  }
});

test('several turns: the last keepTurns turns stay verbatim when they fit', () => {
  const messages: Message[] = [];
  for (let t = 0; t < 8; t++) messages.push(user(`turn ${t}`), call(`c${t}`), result(`c${t}`, 100), said(`done ${t}`));
  const cut = chooseCut(messages, 4, 100_000);
  expect(messages[cut]).toEqual(user('turn 4'));
  // Too little room for four turns: a later cut, still at a whole exchange.
  const tight = chooseCut(messages, 4, 50);
  expect(tight).toBeGreaterThan(cut);
  expect(splitsAPair(messages, tight)).toBe(false);
});

test('nothing to summarize in a transcript of one message', () => {
  expect(chooseCut([user('hi')], 4, 0)).toBe(0);
});
