/**
 * Benchmark (not a test): what the secret checks cost. Prints, in CPU microseconds (process.cpuUsage,
 * so a busy machine inflates it less than wall time):
 * - building the matcher for a secret set (once per set: it is cached while the set stays the same);
 * - the web tools' check (policies/secrets.ts requestSecretHit) per request: a small GET, a JSON POST,
 *   a 256 KB text body, a 1 MB base64 body;
 * - sanitizeEnv over a 60-variable environment (once per command).
 *
 * Run: npm run build && node dist/bench/secret-check.js
 */
import { randomBytes } from 'node:crypto';
import { sanitizeEnv } from '../policies/env.js';
import { matcherFor } from '../policies/secret-match.js';
import { requestSecretHit } from '../policies/secrets.js';

const secrets = [
  `sk-ant-api03-${randomBytes(70).toString('base64url')}AA`,
  `7123456789:AA${randomBytes(26).toString('base64url')}`,
  `xoxb-1234567890-1234567890123-${randomBytes(18).toString('base64url')}`,
  `xapp-1-A0123456789-1234567890123-${randomBytes(32).toString('hex')}`,
  randomBytes(16).toString('hex'),
  randomBytes(32).toString('hex'),
  `St-${randomBytes(10).toString('hex')}`,
];

function cpuMicros(fn: () => void, times: number): number {
  fn(); // warm up
  const start = process.cpuUsage();
  for (let i = 0; i < times; i++) fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / times;
}

let salt = 0;
const build = cpuMicros(() => matcherFor([...secrets, `fresh-secret-${salt++}-value`], { chunks: true }), 50);
const buildWhole = cpuMicros(() => matcherFor([...secrets, `fresh-secret-${salt++}-value`], { chunks: false }), 50);

const small = { url: 'https://www.example.com/search?q=node+streams&page=2', headers: { accept: 'text/html' } };
const json = {
  url: 'https://api.github.com/repos/o/r/issues',
  headers: { 'content-type': 'application/json', accept: 'application/vnd.github+json' },
  body: JSON.stringify({ title: 'Build fails', body: 'log: '.repeat(400), labels: ['bug', 'ci'] }),
};
const text = { url: 'https://paste.example/', body: 'The quick brown fox jumps over the lazy dog. '.repeat(5_800) };
const blob = { url: 'https://upload.example/', body: randomBytes(768 * 1024).toString('base64') };

const env: Record<string, string> = { ANTHROPIC_API_KEY: secrets[0]!, TELEGRAM_BOT_TOKEN: secrets[1]!, SLACK_BOT_TOKEN: secrets[2]! };
for (let i = 0; i < 57; i++) env[`VAR_${i}`] = `/usr/local/lib/thing-${i}:/opt/${randomBytes(8).toString('hex')}`;

const rows: Array<[string, number]> = [
  [`build matcher, ${secrets.length + 1} secrets, chunks (web)`, build],
  [`build matcher, ${secrets.length + 1} secrets, whole forms (env)`, buildWhole],
  ['request check: small GET', cpuMicros(() => requestSecretHit(secrets, small), 2000)],
  [`request check: JSON POST (${json.body.length} chars)`, cpuMicros(() => requestSecretHit(secrets, json), 500)],
  [`request check: text body (${text.body.length} chars)`, cpuMicros(() => requestSecretHit(secrets, text), 20)],
  [`request check: base64 body (${blob.body.length} chars)`, cpuMicros(() => requestSecretHit(secrets, blob), 10)],
  ['sanitizeEnv, 60 variables', cpuMicros(() => sanitizeEnv(env, []), 500)],
];
for (const [what, us] of rows) console.log(`${what.padEnd(52)} ${us.toFixed(1).padStart(10)} us`);
