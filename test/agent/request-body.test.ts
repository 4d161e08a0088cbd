import { describe, expect, it } from '@jest/globals';
import { requestBody } from '../../agent/request-body.js';
import { freezeMessage } from '../../agent/transcript-diff.js';
import type { Message } from '../../agent/messages.js';

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });

describe('requestBody', () => {
  it('is exactly JSON.stringify of the params, whatever keys come before and after the messages', () => {
    const messages = [freezeMessage(user('hi "there"\u2028')), user('unfrozen'), freezeMessage({ role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'x', input: { a: [1, null, 'b'] } }] })];
    const cases: Array<{ messages: readonly unknown[] } & Record<string, unknown>> = [
      { model: 'm', max_tokens: 10, messages, stream: true, system: 'sys', tools: [{ name: 't', input_schema: { type: 'object' } }] },
      { model: 'm', max_tokens: 10, messages },
      { messages, stream: false },
      { messages },
      { model: 'm', messages: [] },
    ];
    for (const c of cases) expect(requestBody(c)).toBe(JSON.stringify(c));
  });

  it('encodes a frozen message once and reuses it; an unfrozen one is encoded afresh each time', () => {
    const frozen = freezeMessage(user('a'));
    const loose = user('b');
    expect(requestBody({ messages: [frozen, loose] })).toBe(JSON.stringify({ messages: [frozen, loose] }));
    (loose.content[0] as { text: string }).text = 'changed';
    expect(requestBody({ messages: [frozen, loose] })).toBe(JSON.stringify({ messages: [frozen, loose] }));
  });

  it('does not remember a message frozen only at the top (its blocks could still change)', () => {
    const block = { type: 'text' as const, text: 'x' };
    const shallow = Object.freeze({ role: 'user' as const, content: [block] });
    expect(requestBody({ messages: [shallow] })).toBe(JSON.stringify({ messages: [shallow] }));
    block.text = 'y';
    expect(requestBody({ messages: [shallow] })).toBe(JSON.stringify({ messages: [shallow] }));
  });
});
