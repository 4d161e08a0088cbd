import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAnthropicModel, USER_MESSAGES, WHOLE_REPLY_MAX_TOKENS } from '../../agent/model/anthropic.js';
import type { RetryInfo } from '../../agent/model/anthropic.js';
import { ModelError } from '../../agent/model/types.js';
import type { ModelRequest } from '../../agent/model/types.js';
import type { Message } from '../../agent/context/messages.js';
import { addUsage, emptyUsage, priceFor, priceUsage } from '../../agent/model/pricing.js';
import { startFakeAnthropic, NO_SCRIPT_TEXT } from '../fakes/anthropic.js';
import type { FakeAnthropic } from '../fakes/anthropic.js';

const KEY = 'sk-ant-api03-TESTKEY-0123456789abcdef';
const MODEL = 'claude-sonnet-4-6';

let fake: FakeAnthropic;
beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: KEY });
});
afterEach(async () => {
  await fake.close();
});

function model(extra: { maxRetries?: number; timeoutMs?: number; maxRetryWaitMs?: number; onRetry?: (i: RetryInfo) => void } = {}) {
  return createAnthropicModel({ apiKey: KEY, baseURL: fake.url, retryBaseMs: 5, ...extra });
}

function ask(text: string, extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: MODEL,
    system: 'You are a test.',
    messages: [{ role: 'user', content: [{ type: 'text', text }] }],
    tools: [],
    maxTokens: 256,
    ...extra,
  };
}

async function failure(p: Promise<unknown>): Promise<ModelError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ModelError) return err;
    throw err;
  }
  throw new Error('expected a ModelError, the call succeeded');
}

const bodyOf = (i: number) => fake.requests[i]?.body as Record<string, unknown>;
/** A listener for text deltas: the call streams (without one it asks for the whole reply). */
const streamed = (extra: Partial<ModelRequest> = {}): Partial<ModelRequest> => ({ onText: () => undefined, ...extra });

describe('streaming', () => {
  test('text deltas arrive in order and add up to the answer', async () => {
    const answer = 'The quick brown fox jumps over the lazy dog, twice.';
    fake.enqueue({ text: answer });
    const deltas: string[] = [];
    const res = await model().complete(ask('hello', { onText: (d) => deltas.push(d) }));
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(answer);
    expect(res.content).toEqual([{ type: 'text', text: answer }]);
    expect(res.stopReason).toBe('end_turn');
    const body = bodyOf(0);
    expect(body.stream).toBe(true);
    expect(body.model).toBe(MODEL);
    expect(body.system).toBe('You are a test.');
    expect(body).not.toHaveProperty('tools');
    expect(fake.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  test('tool_use round trip: parsed input, then the tool_result turn is accepted', async () => {
    const input = { path: 'src/a.ts', range: { from: 1, to: 20 }, note: 'ünïcode "quotes"' };
    fake.enqueue({ text: 'Let me look.', toolUses: [{ name: 'read_file', input }] }, { text: 'It is a module.' });
    const tools = [{ name: 'read_file', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }];
    const m = model();
    const first = await m.complete(ask('what is in a.ts?', streamed({ tools })));
    expect(first.stopReason).toBe('tool_use');
    expect(first.content[0]).toEqual({ type: 'text', text: 'Let me look.' });
    const use = first.content[1];
    expect(use?.type).toBe('tool_use');
    if (use?.type !== 'tool_use') throw new Error('no tool_use');
    expect(use.name).toBe('read_file');
    expect(use.input).toEqual(input);
    expect(bodyOf(0).tools).toEqual(tools);

    const messages: Message[] = [
      { role: 'user', content: [{ type: 'text', text: 'what is in a.ts?' }] },
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'export const a = 1;' }] },
    ];
    const second = await m.complete(ask('', streamed({ messages, tools })));
    expect(second.content).toEqual([{ type: 'text', text: 'It is a module.' }]);
    expect(fake.unscripted).toBe(0);
  });

  test('a transcript with an unanswered tool_use is refused as the API would, and not retried', async () => {
    fake.enqueue({ text: 'never sent' });
    const messages: Message[] = [
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'ls', input: {} }] },
      { role: 'user', content: [{ type: 'text', text: 'and?' }] },
    ];
    const err = await failure(model().complete(ask('', { messages })));
    expect(err.code).toBe('bad_request');
    expect(err.message).toContain('toolu_1');
    expect(err.userMessage).toBe(USER_MESSAGES.bad_request);
    expect(fake.requests).toHaveLength(1);
    expect(fake.remaining()).toBe(1); // a refused request does not consume the script
  });

  test('an unscripted request is answered visibly', async () => {
    const res = await model().complete(ask('anyone?'));
    expect(res.content).toEqual([{ type: 'text', text: NO_SCRIPT_TEXT }]);
    expect(fake.unscripted).toBe(1);
  });
});

describe('whole replies (no text listener)', () => {
  test('the same result as streaming, asked for with stream: false', async () => {
    const input = { path: 'src/a.ts', note: 'ünïcode "quotes"' };
    fake.enqueue({ text: 'Let me look.', toolUses: [{ name: 'read_file', input }] }, { text: 'Let me look.', toolUses: [{ name: 'read_file', input }] });
    const whole = await model().complete(ask('what is in a.ts?'));
    const stream = await model().complete(ask('what is in a.ts?', streamed()));
    expect(bodyOf(0).stream).toBe(false);
    expect(bodyOf(1).stream).toBe(true);
    expect(whole.stopReason).toBe('tool_use');
    expect(whole.content[0]).toEqual({ type: 'text', text: 'Let me look.' });
    expect(whole.content[1]).toMatchObject({ type: 'tool_use', name: 'read_file', input });
    expect({ ...whole, content: whole.content.map((b) => (b.type === 'tool_use' ? { ...b, id: 'x' } : b)) }).toEqual({
      ...stream,
      content: stream.content.map((b) => (b.type === 'tool_use' ? { ...b, id: 'x' } : b)),
    });
  });

  test('above WHOLE_REPLY_MAX_TOKENS the call streams anyway (the API wants long requests streamed)', async () => {
    fake.enqueue({ text: 'long' });
    const res = await model().complete(ask('hi', { maxTokens: WHOLE_REPLY_MAX_TOKENS + 1 }));
    expect(res.content).toEqual([{ type: 'text', text: 'long' }]);
    expect(bodyOf(0).stream).toBe(true);
  });

  test('a reply cut off mid-body is a network error and is retried', async () => {
    let calls = 0;
    const cut = http.createServer((req, res) => {
      req.resume();
      calls++;
      if (calls === 1) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
        res.write('{"id":"msg_1","type":"message","content":[{"type":"te');
        setTimeout(() => res.socket?.destroy(), 10);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'msg_2',
          type: 'message',
          role: 'assistant',
          content: [{ type: 'text', text: 'second try' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 1, output_tokens: 2 },
        }),
      );
    });
    await new Promise<void>((r) => cut.listen(0, '127.0.0.1', r));
    try {
      const retries: RetryInfo[] = [];
      const m = createAnthropicModel({
        apiKey: KEY,
        baseURL: `http://127.0.0.1:${(cut.address() as AddressInfo).port}`,
        retryBaseMs: 1,
        onRetry: (i) => retries.push(i),
      });
      const res = await m.complete(ask('hi'));
      expect(res.content).toEqual([{ type: 'text', text: 'second try' }]);
      expect(retries.map((r) => r.code)).toEqual(['network']);
    } finally {
      cut.closeAllConnections();
      await new Promise<void>((r) => cut.close(() => r()));
    }
  });

  test('a 200 reply that is not a Messages API message is a server error, not a crash', async () => {
    const odd = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'message', content: 'not a list', usage: {} }));
    });
    await new Promise<void>((r) => odd.listen(0, '127.0.0.1', r));
    try {
      const m = createAnthropicModel({ apiKey: KEY, baseURL: `http://127.0.0.1:${(odd.address() as AddressInfo).port}`, retryBaseMs: 1, maxRetries: 1 });
      const err = await failure(m.complete(ask('hi')));
      expect(err.code).toBe('server');
      expect(err.message).toMatch(/not a Messages API message/);
    } finally {
      odd.closeAllConnections();
      await new Promise<void>((r) => odd.close(() => r()));
    }
  });
});

describe('retries', () => {
  test('429 with retry-after waits at least that long, then succeeds', async () => {
    fake.enqueue(
      { error: { status: 429, type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit', retryAfterSec: 0.4 } },
      { text: 'ok now' },
    );
    const retries: RetryInfo[] = [];
    const res = await model({ onRetry: (i) => retries.push(i) }).complete(ask('hi'));
    expect(res.content).toEqual([{ type: 'text', text: 'ok now' }]);
    expect(fake.requests).toHaveLength(2);
    expect(retries).toEqual([expect.objectContaining({ attempt: 1, delayMs: 400, code: 'rate_limited' })]);
    const gap = fake.requests[1]!.at - fake.requests[0]!.at;
    // Backoff alone would be ~5 ms; the gap proves the header was honoured (2 ms timer slack).
    expect(gap).toBeGreaterThanOrEqual(398);
  });

  test('retry-after-ms wins over retry-after', async () => {
    fake.enqueue({ error: { status: 429, type: 'rate_limit_error', message: 'slow down', retryAfterMs: 120, retryAfterSec: 300 } }, { text: 'ok' });
    const retries: RetryInfo[] = [];
    await model({ onRetry: (i) => retries.push(i) }).complete(ask('hi'));
    expect(retries.map((r) => r.delayMs)).toEqual([120]);
    expect(fake.requests[1]!.at - fake.requests[0]!.at).toBeGreaterThanOrEqual(118);
  });

  test('a retry-after beyond the cap fails now instead of holding the run', async () => {
    fake.enqueue({ error: { status: 429, type: 'rate_limit_error', message: 'slow down', retryAfterSec: 120 } }, { text: 'unused' });
    const err = await failure(model({ maxRetryWaitMs: 5000 }).complete(ask('hi')));
    expect(err.code).toBe('rate_limited');
    expect(err.userMessage).toBe('The model is rate-limited right now; try again in a minute.');
    expect(fake.requests).toHaveLength(1);
  });

  test('529 overloaded and 500 are retried with backoff', async () => {
    fake.enqueue(
      { error: { status: 529, type: 'overloaded_error', message: 'Overloaded' } },
      { error: { status: 500, type: 'api_error', message: 'Internal server error' } },
      { text: 'finally' },
    );
    const retries: RetryInfo[] = [];
    const res = await model({ onRetry: (i) => retries.push(i) }).complete(ask('hi'));
    expect(res.content).toEqual([{ type: 'text', text: 'finally' }]);
    expect(retries.map((r) => r.code)).toEqual(['overloaded', 'server']);
    // Exponential: the second wait's range (10 ms * 0.5..1) starts where the first's (5 ms * 0.5..1) ends.
    expect(retries[1]!.delayMs).toBeGreaterThanOrEqual(retries[0]!.delayMs);
    expect(fake.requests).toHaveLength(3);
  });

  test('retries exhausted: a chat-safe ModelError that never contains the key', async () => {
    // A misbehaving proxy that echoes the key it was given.
    const echo = { status: 529, type: 'overloaded_error', message: `Overloaded (key ${KEY})` };
    fake.enqueue({ error: echo }, { error: echo }, { error: echo }, { text: 'unused' });
    const err = await failure(model({ maxRetries: 2 }).complete(ask('hi')));
    expect(err).toBeInstanceOf(ModelError);
    expect(err.code).toBe('overloaded');
    expect(err.userMessage).toBe('The model is overloaded right now; try again in a minute.');
    expect(fake.requests).toHaveLength(3);
    expect(err.message).toContain('529');
    for (const text of [err.message, err.userMessage, String(err), JSON.stringify(err), err.stack ?? '']) {
      expect(text).not.toContain(KEY);
      expect(text).not.toContain('TESTKEY');
    }
  });

  test('a wrong key is an auth error, not retried, and not echoed', async () => {
    const wrong = 'sk-ant-api03-WRONGKEY-zzzz';
    const m = createAnthropicModel({ apiKey: wrong, baseURL: fake.url, retryBaseMs: 5 });
    const err = await failure(m.complete(ask('hi')));
    expect(err.code).toBe('auth');
    expect(err.userMessage).toBe(USER_MESSAGES.auth);
    expect(fake.requests).toHaveLength(1);
    expect(`${err.message} ${err.userMessage}`).not.toContain('WRONGKEY');
  });

  test('no retry once text was shown: a mid-stream overload surfaces instead of repeating text', async () => {
    fake.enqueue({ text: 'Here is the first half of', midStream: { type: 'overloaded_error', message: 'Overloaded' } }, { text: 'a retry would repeat this' });
    const deltas: string[] = [];
    const err = await failure(model().complete(ask('hi', { onText: (d) => deltas.push(d) })));
    expect(err.code).toBe('overloaded');
    expect(deltas.join('')).toBe('Here is the first half of');
    expect(fake.requests).toHaveLength(1);
    expect(fake.remaining()).toBe(1);
  });

  test('a mid-stream overload before any text is retried', async () => {
    fake.enqueue({ toolUses: [{ name: 'ls', input: { path: '.' } }], midStream: { type: 'overloaded_error', message: 'Overloaded' } }, { text: 'recovered' });
    const res = await model().complete(ask('hi', streamed()));
    expect(res.content).toEqual([{ type: 'text', text: 'recovered' }]);
    expect(fake.requests).toHaveLength(2);
    expect(bodyOf(0).stream).toBe(true);
  });

  test('connection refused is a network error after the retries', async () => {
    const dead = http.createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    const port = (dead.address() as AddressInfo).port;
    await new Promise<void>((r) => dead.close(() => r()));
    const retries: RetryInfo[] = [];
    const m = createAnthropicModel({ apiKey: KEY, baseURL: `http://127.0.0.1:${port}`, retryBaseMs: 1, maxRetries: 1, onRetry: (i) => retries.push(i) });
    const err = await failure(m.complete(ask('hi')));
    expect(err.code).toBe('network');
    // The user is told where it tried and why it failed.
    expect(err.userMessage).toBe(
      `Could not reach the model service at http://127.0.0.1:${port} (connection refused: is the server running?); try again in a moment.`,
    );
    expect(retries.map((r) => r.code)).toEqual(['network']);
  });
});

describe('abort and timeout', () => {
  test('abort mid-stream rejects with aborted and is not retried', async () => {
    fake.enqueue({ text: 'This answer will be cut off before the end', midStream: 'hang' }, { text: 'unused' });
    const ac = new AbortController();
    const deltas: string[] = [];
    const p = model().complete(
      ask('hi', {
        signal: ac.signal,
        onText: (d) => {
          deltas.push(d);
          ac.abort();
        },
      }),
    );
    const err = await failure(p);
    expect(err.code).toBe('aborted');
    expect(deltas.length).toBeGreaterThanOrEqual(1);
    expect(fake.requests).toHaveLength(1);
    expect(fake.remaining()).toBe(1);
  });

  test('abort while the server has not answered yet', async () => {
    const ac = new AbortController();
    fake.enqueue(() => {
      ac.abort(); // the user hits /stop while the request is in flight
      return { hang: true };
    });
    const err = await failure(model().complete(ask('hi', { signal: ac.signal })));
    expect(err.code).toBe('aborted');
  });

  test('an already-aborted signal makes no request', async () => {
    const ac = new AbortController();
    ac.abort();
    const err = await failure(model().complete(ask('hi', { signal: ac.signal })));
    expect(err.code).toBe('aborted');
    expect(fake.requests).toHaveLength(0);
  });

  test('a hanging server times out (per-request timeout) and is not retried', async () => {
    fake.enqueue({ hang: true }, { text: 'unused' });
    const err = await failure(model().complete(ask('hi', { timeoutMs: 1000 }))); // long enough to arrive even on a loaded CI machine
    expect(err.code).toBe('timeout');
    expect(err.userMessage).toBe(USER_MESSAGES.timeout);
    expect(fake.requests).toHaveLength(1);
  });
});

describe('usage and pricing', () => {
  const usage = { input_tokens: 1000, output_tokens: 500, cache_read_input_tokens: 2000, cache_creation_input_tokens: 100 };

  test.each([
    ['streamed', streamed()],
    ['whole', {}],
  ])('a known model is priced from the usage of a %s reply', async (_how, extra) => {
    fake.enqueue({ text: 'hi', usage });
    const res = await model().complete(ask('hi', { model: 'claude-sonnet-4-6', ...extra }));
    expect(res.usage).toMatchObject({ inputTokens: 1000, outputTokens: 500, cacheReadTokens: 2000, cacheWriteTokens: 100, costKnown: true });
    // 1000*3 + 500*15 + 2000*0.30 + 100*3.75 per million
    expect(res.usage.costUSD).toBeCloseTo(0.011475, 9);
  });

  test('an unknown model counts tokens but reports cost unknown, never free', async () => {
    fake.enqueue({ text: 'hi', usage });
    const res = await model().complete(ask('hi', { model: 'local-llama-3-70b' }));
    expect(res.usage).toMatchObject({ inputTokens: 1000, outputTokens: 500, costKnown: false, costUSD: 0 });
  });

  test('price table: snapshots and provider prefixes match, new versions do not inherit a price', () => {
    expect(priceFor('claude-opus-4-20250514')?.input).toBe(15);
    expect(priceFor('claude-opus-4-5')?.input).toBe(5);
    expect(priceFor('claude-opus-4-5-20251101')?.output).toBe(25);
    expect(priceFor('claude-haiku-4-5@20251001')?.input).toBe(1);
    expect(priceFor('us.anthropic.claude-sonnet-4-5-20250929-v1:0')?.input).toBe(3);
    expect(priceFor('claude-3-5-haiku-latest')?.input).toBe(0.8);
    expect(priceFor('claude-3-5-haiku-20241022')?.output).toBe(4);
    expect(priceFor('claude-opus-4-9')).toBeUndefined();
    expect(priceFor('claude-sonnet-4-5x')).toBeUndefined();
    expect(priceFor('gpt-4o')).toBeUndefined();
  });

  test('long prompts switch to the long-context rates where the model has them', () => {
    const small = priceUsage('claude-haiku-5-5', { inputTokens: 100_000, outputTokens: 1_000_000 });
    const big = priceUsage('claude-haiku-5-5', { inputTokens: 100_001, outputTokens: 1_000_000 });
    expect(small.costUSD).toBeCloseTo((100_000 * 0.1) / 1e6 + 0.5, 9);
    expect(big.costUSD).toBeCloseTo((100_001 * 0.5) / 1e6 + 2.5, 9);
  });

  test('addUsage sums and keeps costKnown=false sticky', () => {
    const known = priceUsage('claude-haiku-4-5', { inputTokens: 1_000_000, outputTokens: 0 });
    const unknown = priceUsage('mystery-model', { inputTokens: 10, outputTokens: 10 });
    const a = addUsage(emptyUsage(), known);
    expect(a).toMatchObject({ inputTokens: 1_000_000, costUSD: 1, costKnown: true });
    const b = addUsage(a, unknown);
    expect(b).toMatchObject({ inputTokens: 1_000_010, outputTokens: 10, costKnown: false, costUSD: 0 });
    expect(addUsage(b, known).costKnown).toBe(false);
  });
});

describe('fake Anthropic server behaves like the API', () => {
  async function post(body: unknown, headers: Record<string, string> = { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' }, path = '/v1/messages') {
    const res = await fetch(fake.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as { type: string; error?: { type: string; message: string } } & Record<string, unknown> };
  }
  const base = { model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

  test.each([
    ['first message from assistant', { ...base, messages: [{ role: 'assistant', content: 'hi' }] }, 'first message'],
    [
      'two user turns in a row',
      {
        ...base,
        messages: [
          { role: 'user', content: 'a' },
          { role: 'user', content: 'b' },
        ],
      },
      'alternate',
    ],
    ['missing max_tokens', { model: MODEL, messages: base.messages }, 'max_tokens'],
    ['missing model', { max_tokens: 10, messages: base.messages }, 'model'],
    ['empty messages', { ...base, messages: [] }, 'at least one'],
    ['orphan tool_result', { ...base, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'r' }] }] }, 'toolu_x'],
    ['bad tool name', { ...base, tools: [{ name: 'has space', input_schema: { type: 'object' } }] }, 'name'],
  ])('400 invalid_request_error: %s', async (_name, body, fragment) => {
    const { status, json } = await post(body);
    expect(status).toBe(400);
    expect(json.type).toBe('error');
    expect(json.error?.type).toBe('invalid_request_error');
    expect(json.error?.message).toContain(fragment);
  });

  test('401 without a key, 400 without anthropic-version or with bad JSON, 404 elsewhere', async () => {
    expect((await post(base, { 'anthropic-version': '2023-06-01' })).json.error?.type).toBe('authentication_error');
    expect((await post(base, { 'x-api-key': KEY })).status).toBe(400);
    expect((await post('{not json', { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' })).status).toBe(400);
    const nf = await post(base, undefined, '/v1/complete');
    expect(nf.status).toBe(404);
    expect(nf.json.error?.type).toBe('not_found_error');
  });

  test('non-streaming answers a Message; setHandler answers when the queue is empty', async () => {
    fake.setHandler(() => ({ text: 'from handler' }));
    fake.enqueue({ text: 'from queue' });
    const a = await post(base);
    const b = await post(base);
    expect(a.json).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'from queue' }], stop_reason: 'end_turn' });
    expect(b.json).toMatchObject({ content: [{ type: 'text', text: 'from handler' }] });
    expect(fake.unscripted).toBe(0);
    fake.recordRequests = false;
    await post(base);
    expect(fake.requests).toHaveLength(2);
  });
});
