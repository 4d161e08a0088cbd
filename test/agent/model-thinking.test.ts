/**
 * The model client's extended thinking (agent/model/anthropic.ts, agent/model/thinking.ts), the real SDK against
 * the fake Messages API: thinking streams to onThinking and comes back as signed blocks, streamed or
 * whole; a tool-use turn that began without thinking is continued without it (the API would refuse);
 * a changed thinking text is refused as the API refuses it.
 */
import { createAnthropicModel } from '../../agent/model/anthropic.js';
import { ModelError, type ModelRequest } from '../../agent/model/types.js';
import type { Message } from '../../agent/context/messages.js';
import { freezeMessage } from '../../agent/context/transcript-diff.js';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.js';

const KEY = 'sk-ant-api03-TESTKEY-thinking';
let fake: FakeAnthropic;
beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: KEY });
});
afterEach(async () => {
  await fake.close();
});

const model = () => createAnthropicModel({ apiKey: KEY, baseURL: fake.url, retryBaseMs: 5 });
const ask = (messages: Message[], extra: Partial<ModelRequest> = {}): ModelRequest => ({
  model: 'claude-sonnet-4-6',
  system: 'You are a test.',
  messages,
  tools: [{ name: 'get_time', description: 'the time', input_schema: { type: 'object', properties: {} } }],
  maxTokens: 4096,
  thinking: { budgetTokens: 2048 },
  ...extra,
});
const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const bodyOf = (i: number) => fake.requests[i]!.body as { thinking?: unknown; messages: unknown[] };

test('streamed: thinking deltas reach onThinking, text deltas onText, and the block comes back signed', async () => {
  fake.enqueue({ thinking: 'Let me think about the weather here.', text: 'It is sunny.' });
  const thinking: string[] = [];
  const text: string[] = [];
  const res = await model().complete(ask([user('weather?')], { onText: (d) => text.push(d), onThinking: (d) => thinking.push(d) }));
  expect(bodyOf(0).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  expect(thinking.length).toBeGreaterThan(1);
  expect(thinking.join('')).toBe('Let me think about the weather here.');
  expect(text.join('')).toBe('It is sunny.');
  expect(res.content[0]).toEqual({ type: 'thinking', thinking: 'Let me think about the weather here.', signature: expect.any(String) });
  expect(res.content[1]).toEqual({ type: 'text', text: 'It is sunny.' });
});

test('whole reply (nobody streams): the thinking block is kept too', async () => {
  fake.enqueue({ thinking: 'quietly', text: 'ok' });
  const res = await model().complete(ask([user('hi')], { maxTokens: 2049 }));
  expect((fake.requests[0]!.body as { stream?: boolean }).stream).toBe(false);
  expect(res.content.map((b) => b.type)).toEqual(['thinking', 'text']);
});

test('a tool-use turn that began without thinking is continued without it; the next turn has it again', async () => {
  const turn: Message[] = [
    user('what time is it?'),
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_time', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '12:00' }] },
  ];
  fake.enqueue({ thinking: 'not asked for', text: 'Noon.' });
  const res = await model().complete(ask(turn));
  expect(bodyOf(0).thinking).toBeUndefined();
  expect(res.content).toEqual([{ type: 'text', text: 'Noon.' }]);

  fake.enqueue({ thinking: 'now on', text: 'Hi.' });
  const next = await model().complete(ask([...turn, { role: 'assistant', content: res.content }, user('thanks')]));
  expect(bodyOf(1).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  expect(next.content[0]).toMatchObject({ type: 'thinking', thinking: 'now on' });
});

test('a thinking block whose text was changed is refused (the API checks the signature), and no retry hides it', async () => {
  fake.enqueue({ thinking: 'original reasoning', toolUses: [{ name: 'get_time', input: {} }] });
  const first = await model().complete(ask([user('time?')]));
  const tampered = first.content.map((b) => (b.type === 'thinking' ? { ...b, thinking: 'edited reasoning' } : b));
  const toolUse = first.content.find((b) => b.type === 'tool_use')!;
  const err = await model()
    .complete(
      ask([
        user('time?'),
        { role: 'assistant', content: tampered },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: (toolUse as { id: string }).id, content: '12:00' }] },
      ]),
    )
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(ModelError);
  expect((err as ModelError).code).toBe('bad_request');
  expect((err as ModelError).message).toMatch(/Invalid `signature` in `thinking` block/);
  expect(fake.requests).toHaveLength(2);
});

test('without thinking, earlier thinking blocks are left out of the request', async () => {
  fake.enqueue({ text: 'fine' });
  await model().complete(
    ask(
      [
        user('a'),
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'old', signature: 'sig' },
            { type: 'text', text: 'b' },
          ],
        },
        user('c'),
      ],
      { thinking: undefined },
    ),
  );
  expect(bodyOf(0).thinking).toBeUndefined();
  expect(JSON.stringify(bodyOf(0).messages)).not.toContain('thinking');
});

test('stored (frozen) messages: thinking is left out at every call of a long chat, and a message still being built is looked at afresh', async () => {
  const stored: Message[] = [];
  for (let i = 0; i < 200; i++) {
    const reply: Message =
      i === 100
        ? {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'old', signature: 'sig' },
              { type: 'text', text: `r${i}` },
            ],
          }
        : { role: 'assistant', content: [{ type: 'text', text: `r${i}` }] };
    stored.push(freezeMessage(user(`q${i}`)), freezeMessage(reply));
  }
  // Not frozen: a message the run is still putting together, which gains a thinking block later.
  const building: Message = { role: 'assistant', content: [{ type: 'text', text: 'draft' }] };
  for (let call = 0; call < 2; call++) {
    fake.enqueue({ text: 'fine' });
    await model().complete(ask([...stored, user('and?'), building, user(`next ${call}`)], { thinking: undefined }));
    const sent = JSON.stringify(bodyOf(call).messages);
    expect(sent).not.toContain('"thinking"');
    expect(sent).toContain('"r100"');
    expect(bodyOf(call).messages).toHaveLength(stored.length + 3);
    building.content = [{ type: 'thinking', thinking: 'new', signature: 'sig2' }, ...building.content];
  }
  // The second call saw the block the unfrozen message gained (left out too), and kept its text.
  expect(JSON.stringify(bodyOf(1).messages)).toContain('"draft"');
});
