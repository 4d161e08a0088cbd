/**
 * Refusals by a limit are audit events (agent/audit.ts `limit_refused`), with the limit named:
 * a user over the rate limit, a run over its runTimeoutMs (on a fake clock), a tool call on a
 * workspace over workspaceMaxBytes. Through the whole stack (recording adapter -> router -> runner
 * -> executor), read back from the log the audit goes to.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_YAML, Harness, agentYaml, waitFor } from '../helpers/harness.js';
import { fakeClock } from '../helpers/fake-clock.js';
import type { Log } from '../../bot/service/app.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A log that keeps the audit events (info lines with an `event` field). */
function auditLog(): { log: Log; refused: () => Array<Record<string, unknown>> } {
  const events: Array<Record<string, unknown>> = [];
  const log: Log = (_level, _msg, fields) => {
    if (fields && typeof fields === 'object' && (fields as Record<string, unknown>)['event']) events.push(fields as Record<string, unknown>);
  };
  return { log, refused: () => events.filter((e) => e['event'] === 'limit_refused') };
}

test('a message over the rate limit is refused and audited with who and when to retry', async () => {
  const a = auditLog();
  h = await Harness.start({ yaml: `${DEFAULT_YAML}access:\n  rateLimit: { messages: 1, perSeconds: 3600 }\n`, log: a.log });
  h.script({ text: 'one' });
  expect((await h.adapter.send('first', { user: 'u1' })).accepted).toBe(true);
  await waitFor('answer', () => h!.adapter.answers()[0]);
  await h.adapter.send('second', { user: 'u1' });
  const refusal = await waitFor('limit_refused', () => a.refused()[0]);
  expect(refusal).toMatchObject({ limit: 'rate_limit', userId: 'u1' });
  expect(Number(refusal['retryAfterSec'])).toBeGreaterThan(0);
  expect(h.modelRequests()).toHaveLength(1); // the second message never reached the model
});

test('a run over runTimeoutMs is stopped and audited as run_timeout', async () => {
  const a = auditLog();
  const clock = fakeClock();
  h = await Harness.start({ yaml: agentYaml('tools: [get_time]', 'runTimeoutMs: 1000'), runClock: clock, log: a.log });
  h.script({ hang: true });
  await h.adapter.send('slow');
  await waitFor('the model call', () => (h!.modelRequests().length > 0 ? true : undefined));
  expect(a.refused()).toEqual([]);
  clock.advance(1001);
  const refusal = await waitFor('limit_refused', () => a.refused()[0]);
  expect(refusal).toMatchObject({ limit: 'run_timeout', agent: 'default' });
  expect(typeof refusal['runId']).toBe('string');
});

test('a write on a workspace over workspaceMaxBytes is refused and audited as workspace_limit', async () => {
  const a = auditLog();
  h = await Harness.start({ yaml: agentYaml('tools: [write_file]', 'tier: high-risk', 'workspaceMaxBytes: 1MiB'), log: a.log });
  mkdirSync(h.workspace, { recursive: true });
  writeFileSync(join(h.workspace, 'big.bin'), Buffer.alloc(2 * 1024 * 1024));
  h.script({ toolUses: [{ name: 'write_file', input: { path: 'more.txt', content: 'x' } }] }, { text: 'done' });
  await h.adapter.send('write more');
  await waitFor('answer', () => h!.adapter.answers()[0]);
  expect(a.refused()).toEqual([expect.objectContaining({ limit: 'workspace_limit', tool: 'write_file', agent: 'default' })]);
  expect(existsSync(join(h.workspace, 'more.txt'))).toBe(false);
});
