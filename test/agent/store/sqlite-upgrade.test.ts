/**
 * A store written by the keyv build (test/fixtures/store-v0.sqlite, see the README there) opens in
 * the SQLite engine, is backed up to `<store>.pre-1` (0600) and migrated once; everything it held
 * reads back through the repositories.
 */
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqliteStore } from '../../../agent/store/sqlite/index.js';
import { SCHEMA_VERSION } from '../../../agent/store/sqlite/schema.js';

const fixture = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'store-v0.sqlite');
let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-upgrade-'));
  path = join(dir, 'gatehouse.sqlite');
  copyFileSync(fixture, path);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('the keyv store is migrated once, after a 0600 backup, and nothing is lost', async () => {
  const logs: string[] = [];
  const now = Date.now();
  let store = await openSqliteStore({ path, log: (_level, m) => logs.push(m) });
  try {
    expect(logs.join('\n')).toMatch(new RegExp(`copied it to ${path}\\.pre-${SCHEMA_VERSION}`));
    expect(logs.join('\n')).toMatch(/upgraded the store from the keyv format.*3 conversations/);
    expect(logs.join('\n')).not.toMatch(/not understood/);
    const backup = statSync(`${path}.pre-${SCHEMA_VERSION}`);
    expect(backup.mode & 0o777).toBe(0o600);

    // Transcripts: messages, state, agent, the big tool result; recency from updatedAt.
    const tg = await store.transcripts.load('telegram:100');
    expect(tg).toMatchObject({ agent: 'main', baseSeq: 0, base: [], revision: 1 });
    expect(tg?.rows.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    expect(tg?.rows[1]?.message).toEqual({ role: 'assistant', content: [{ type: 'tool_use', id: 'tu_1', name: 'read_file', input: { path: 'log.txt' } }] });
    expect(await store.transcripts.getToolResult('telegram:100', 'tr_9_fTyOtTMzQUW5Dn')).toBe('x'.repeat(60_000));
    expect((await store.transcripts.load('slack:T1:C1'))?.state).toEqual({ todos: [{ content: 'tag v1', status: 'pending' }], lastInputTokens: 1234 });
    expect((await store.transcripts.load('discord:G1:C2'))?.agent).toBe('helper');
    expect((await store.transcripts.listRecent({ agent: 'main', limit: 10 })).map((l) => [l.conversation, l.lastSeq]).sort()).toEqual([
      ['slack:T1:C1', 2],
      ['telegram:100', 4],
    ]);

    // The pending approval and question, their buttons (tokens) and card handle.
    expect(await store.approvals.pending('telegram:100', now)).toEqual(['req-approval-1']);
    expect(await store.approvals.pending('slack:T1:C1', now)).toEqual(['req-question-1']);
    const approval = await store.approvals.get('req-approval-1', now);
    expect(approval?.decision).toBeUndefined();
    const request = approval?.request as { kind: string; cardHandle: string; card: { buttons: Array<{ token: string; label: string }> } };
    expect(request).toMatchObject({ kind: 'approval', cardHandle: 'card-handle-1', conversationKey: 'telegram:100' });
    const choices = await Promise.all(request.card.buttons.map(async (b) => (await store.approvals.byToken(b.token, now))?.choice));
    expect(choices).toEqual(['once', 'always', 'deny']);
    const question = (await store.approvals.get('req-question-1', now))?.request as {
      suggestions: unknown;
      allowCustom: boolean;
      card: { buttons: Array<{ token: string }> };
    };
    expect(question.suggestions).toEqual([
      { label: 'main', value: 'main' },
      { label: 'dev', value: 'develop' },
    ]);
    expect(question.allowCustom).toBe(true);
    expect(await store.approvals.byToken(question.card.buttons[1]!.token, now)).toEqual({ requestId: 'req-question-1', choice: 'answer:1' });
    // Kept an hour: the reopening below purges what is past keepUntil by the real clock, and a loaded machine took over a second to get there.
    expect(await store.approvals.decideOnce('req-question-1', { answer: 'develop' }, now, now + 3_600_000)).toBe(true);

    expect(await store.allowlists.list('main')).toEqual([
      { kind: 'command', value: 'git status' },
      { kind: 'tool', value: 'web_fetch' },
    ]);
    expect((await store.memory.list('a:main')).map((e) => [e.id, (e.entry as { text: string }).text])).toEqual([
      ['a1', 'the team ships on fridays'],
      ['a2', 'prod is eu-west-1'],
    ]);
    expect((await store.memory.list('c:main:telegram:100')).map((e) => e.id)).toEqual(['c1']);

    const reminders = await store.reminders.all();
    expect(
      reminders.map((r) => [r.conversation, r.rev, (r.reminder as { text: string; repeatMs?: number }).text, (r.reminder as { repeatMs?: number }).repeatMs]),
    ).toEqual([
      ['slack:T1:C1', 1, 'standup', 86_400_000],
      ['telegram:100', 1, 'check the build', undefined],
    ]);

    expect(await store.runs.queuedTurns()).toEqual([
      { conversation: 'discord:G1:C2', id: 'turn-1', turn: expect.objectContaining({ text: 'queued while busy' }) },
    ]);
    expect((await store.runs.records()).map((r) => [r.conversation, (r.record as { runId: string }).runId])).toEqual([['telegram:100', 'run-1']]);
    expect(await store.events.claim('m:telegram:777', 60_000, now)).toBe(false);
    expect(await store.cache.get('tools:main\u0000files')).toEqual({
      tools: [{ name: 'read', description: 'reads a file', inputSchema: { type: 'object' } }],
      at: 1_700_000_000_000,
    });
  } finally {
    await store.close();
  }

  // Opened again: no second migration, the backup untouched, the decision made above still there.
  const backupTime = statSync(`${path}.pre-${SCHEMA_VERSION}`).mtimeMs;
  logs.length = 0;
  store = await openSqliteStore({ path, log: (_level, m) => logs.push(m) });
  try {
    expect(logs.join('\n')).not.toMatch(/upgraded|copied/);
    expect(statSync(`${path}.pre-${SCHEMA_VERSION}`).mtimeMs).toBe(backupTime);
    expect((await store.approvals.get('req-question-1', now))?.decision).toEqual({ answer: 'develop' });
    expect((await store.transcripts.load('telegram:100'))?.rows).toHaveLength(4);
  } finally {
    await store.close();
  }
});

test('mustExist never creates a store: the message names the path, GATEHOUSE_STORE and the folder', async () => {
  const missing = join(dir, 'elsewhere', 'gatehouse.sqlite');
  await expect(openSqliteStore({ path: missing, mustExist: true })).rejects.toThrow(new RegExp(`no Gatehouse store at ${missing}.*GATEHOUSE_STORE`));
  await expect(openSqliteStore({ path: missing, mustExist: true })).rejects.toThrow(/run this from the folder/);
  expect(() => statSync(dirname(missing))).toThrow();
});
