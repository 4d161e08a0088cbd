import { describe, expect, it } from '@jest/globals';
import { requestBody } from '../../agent/model/request-body.js';
import { freezeMessage } from '../../agent/context/transcript-diff.js';
import type { Message } from '../../agent/context/messages.js';

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
/** The body is the UTF-8 bytes of JSON.stringify, exactly. */
const bytesOf = (v: unknown) => Buffer.from(JSON.stringify(v));

describe('requestBody', () => {
  it('is exactly JSON.stringify of the params, whatever keys come before and after the messages', () => {
    const messages = [
      freezeMessage(user('hi "there"\u2028')),
      user('unfrozen'),
      freezeMessage({ role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'x', input: { a: [1, null, 'b'] } }] }),
    ];
    const cases: Array<{ messages: readonly unknown[] } & Record<string, unknown>> = [
      { model: 'm', max_tokens: 10, messages, stream: true, system: 'sys', tools: [{ name: 't', input_schema: { type: 'object' } }] },
      { model: 'm', max_tokens: 10, messages },
      { messages, stream: false },
      { messages },
      { model: 'm', messages: [] },
    ];
    for (const c of cases) expect(requestBody(c)).toEqual(bytesOf(c));
  });

  it('encodes a frozen message once and reuses it; an unfrozen one is encoded afresh each time', () => {
    const frozen = freezeMessage(user('a'));
    const loose = user('b');
    expect(requestBody({ messages: [frozen, loose] })).toEqual(bytesOf({ messages: [frozen, loose] }));
    (loose.content[0] as { text: string }).text = 'changed';
    expect(requestBody({ messages: [frozen, loose] })).toEqual(bytesOf({ messages: [frozen, loose] }));
  });

  it('does not remember a message frozen only at the top (its blocks could still change)', () => {
    const block = { type: 'text' as const, text: 'x' };
    const shallow = Object.freeze({ role: 'user' as const, content: [block] });
    expect(requestBody({ messages: [shallow] })).toEqual(bytesOf({ messages: [shallow] }));
    block.text = 'y';
    expect(requestBody({ messages: [shallow] })).toEqual(bytesOf({ messages: [shallow] }));
  });
});

describe('requestBody over a long transcript sent again and again', () => {
  const msg = (i: number, frozen = true): Message => {
    const m: Message = { role: i % 2 ? 'assistant' : 'user', content: [{ type: 'text', text: `m${i}` }] };
    return frozen ? freezeMessage(m) : m;
  };
  const same = (messages: readonly unknown[]) =>
    expect(requestBody({ model: 'm', messages, stream: false })).toEqual(bytesOf({ model: 'm', messages, stream: false }));
  it('is JSON.stringify after appends, a replaced message, a truncation, an unfrozen message and a shorter slice', () => {
    const ms: Message[] = Array.from({ length: 100 }, (_, i) => msg(i));
    same(ms);
    ms.push(msg(100), msg(101));
    same(ms);
    ms[50] = msg(1000);
    same(ms);
    ms.length = 80;
    same(ms);
    const loose = msg(2000, false);
    ms.splice(70, 0, loose);
    same(ms);
    (loose.content[0] as { text: string }).text = 'changed';
    same(ms);
    same(ms.slice(0, 75));
    same(ms);
    ms.push(msg(3000));
    same(ms);
  });

  it('a body handed out stays as it was while the same chat is encoded again', () => {
    const ms: Message[] = Array.from({ length: 100 }, (_, i) => msg(i));
    const first = requestBody({ messages: ms });
    const want = bytesOf({ messages: [...ms] });
    ms.push(msg(100), msg(101));
    for (let i = 0; i < 3000; i++) ms.push(msg(200 + i)); // the cached prefix grows (a bigger copy)
    same(ms);
    expect(first).toEqual(want);
  });
});
