/**
 * Issue 9 §2 end to end: allowlist entries and "Always" keys admit only what was meant. The real stack
 * (router -> runner -> executor -> gate -> execute_command) against the fake model, in a temp
 * workspace where each attack, had it run, would leave a marker file. Every attack is also run once on
 * purpose (an approver's "Approve once") to show the marker would appear: the checks can fail.
 */
import { prepareWorkspace } from '../../agent/tools/sandbox/index.js';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordedRequest } from '../fakes/anthropic.js';
import { Harness, agentYaml, waitFor } from '../helpers/harness.js';
import type { PostedCard } from '../helpers/recording-adapter.js';

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const ENTRIES = 'autoApprovedCommands: ["git status", "git log", "npm test", "make test"]';

async function start(...lines: string[]): Promise<Harness> {
  const harness = await Harness.start({
    yaml: agentYaml('tools: [execute_command]', 'tier: read-only', 'approvers: { console: [local] }', 'approvalTimeoutMs: 60000', ...lines),
  });
  mkdirSync(harness.workspace, { recursive: true });
  // Had the gate asked the classifier, a card would follow; an auto-run never asks it.
  harness.classifierReply = { text: 'high-risk' };
  return harness;
}

/** A repository as the box's user would have made it (a root bot's workspace belongs to that user). */
async function gitRepo(dir: string): Promise<void> {
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', `safe.directory=${dir}`, ...args], { cwd: dir, stdio: 'ignore' });
  git('init', '-q');
  writeFileSync(join(dir, 'README.md'), 'hello\n');
  git('add', 'README.md');
  git('commit', '-q', '-m', 'first commit');
  await prepareWorkspace(dir);
}

function lastToolResult(req: RecordedRequest): { content: string; is_error?: boolean } {
  const msgs = (req.body as { messages: Array<{ content: Array<{ type: string; content?: unknown; is_error?: boolean }> | string }> }).messages;
  const last = msgs.at(-1)!.content;
  const block = (typeof last === 'string' ? [] : last).find((b) => b.type === 'tool_result')!;
  return { content: typeof block.content === 'string' ? block.content : JSON.stringify(block.content), ...(block.is_error ? { is_error: true } : {}) };
}

/**
 * One command through the stack. Returns whether it ran without a human, the card (when one was posted)
 * and the tool result. `decide` is the approver's click on the card, if any.
 */
async function run(
  command: string,
  decide: 'Deny' | 'Approve once' = 'Deny',
): Promise<{ auto: boolean; card?: PostedCard; result: { content: string; is_error?: boolean } }> {
  const cardsBefore = h.adapter.cards.length;
  const answersBefore = h.adapter.answers().length;
  const requestsBefore = h.modelRequests().length;
  h.script({ toolUses: [{ name: 'execute_command', input: { command } }] }, { text: `done: ${command}` });
  await h.adapter.send(`please run ${command}`);
  const card = await waitFor(
    'a card or an answer',
    () => h.adapter.cards[cardsBefore] ?? (h.adapter.answers().length > answersBefore ? 'answered' : undefined),
  );
  if (card !== 'answered') await h.adapter.click(card, decide, { user: 'local' });
  await waitFor('answer', () => h.adapter.answers()[answersBefore]);
  const result = lastToolResult(h.modelRequests()[requestsBefore + 1]!);
  return { auto: card === 'answered' && result.is_error === undefined, ...(card !== 'answered' ? { card } : {}), result };
}

/** The command did not run on the allowlist's say-so: it was asked (and denied here) or refused outright. */
function expectNotAutoRun(r: Awaited<ReturnType<typeof run>>): void {
  expect(r.auto).toBe(false);
  expect(r.result.is_error).toBe(true);
  expect(r.result.content).toMatch(/did not run|denied|Declined|Blocked/);
  // When it was asked, the card offers no "Always": no key covers this command.
  if (r.card) expect(r.card.card.buttons.map((b) => b.label).filter((l) => l.startsWith('Always'))).toEqual([]);
}

test('an allowlisted `git status` does not run `git -c core.fsmonitor=...`; plain `git status` still runs on its own', async () => {
  h = await start(ENTRIES);
  await gitRepo(h.workspace);
  const pwned = join(h.workspace, 'PWNED');

  for (const attack of [
    `git -c core.fsmonitor='touch PWNED' status`,
    `git -ccore.fsmonitor='touch PWNED' status`,
    `git --config-env=core.fsmonitor=HOOK status`,
  ]) {
    expectNotAutoRun(await run(attack));
    expect(existsSync(pwned)).toBe(false);
  }

  const plain = await run('git status --short');
  expect(plain.auto).toBe(true);
  expect(plain.result.content).toMatch(/^exit code: 0/);
  expect(existsSync(pwned)).toBe(false);

  // The attack is real: approved once by a human, it leaves the marker.
  const approved = await run(`git -c core.fsmonitor='touch PWNED' status`, 'Approve once');
  if (approved.card) expect(existsSync(pwned)).toBe(true);
});

test('an allowlisted `npm test` does not run `npm test --script-shell=./x.sh` (nor its abbreviation); plain `npm test` runs', async () => {
  h = await start(ENTRIES);
  writeFileSync(join(h.workspace, 'package.json'), JSON.stringify({ name: 'w', version: '1.0.0', scripts: { test: 'echo npm-test-ran' } }));
  writeFileSync(join(h.workspace, 'x.sh'), '#!/bin/sh\ntouch PWNED\n', { mode: 0o755 });
  const pwned = join(h.workspace, 'PWNED');

  for (const attack of ['npm test --script-shell=./x.sh', 'npm test --script-sh ./x.sh', 'npm test --node-options=--require=./x.js']) {
    expectNotAutoRun(await run(attack));
    expect(existsSync(pwned)).toBe(false);
  }

  const plain = await run('npm test -- --watch=false');
  expect(plain.auto).toBe(true);
  expect(plain.result.content).toContain('npm-test-ran');
  expect(existsSync(pwned)).toBe(false);

  const approved = await run('npm test --script-shell=./x.sh', 'Approve once');
  if (approved.card) expect(existsSync(pwned)).toBe(true);
});

test('an allowlisted `make test` does not run `make test --eval=...`, `-f`, or a variable override; plain `make test` runs', async () => {
  h = await start(ENTRIES);
  writeFileSync(join(h.workspace, 'Makefile'), 'test:\n\t@echo make-test-ran $(EXTRA)\n');
  writeFileSync(join(h.workspace, 'evil.mk'), 'test:\n\ttouch PWNED\n');
  const pwned = join(h.workspace, 'PWNED');

  for (const attack of [`make test '--eval=$(shell touch PWNED)'`, 'make -f evil.mk test', `make test 'EXTRA=$(shell touch PWNED)'`]) {
    expectNotAutoRun(await run(attack));
    expect(existsSync(pwned)).toBe(false);
  }

  const plain = await run('make -s test');
  expect(plain.auto).toBe(true);
  expect(plain.result.content).toContain('make-test-ran');
  expect(existsSync(pwned)).toBe(false);

  const approved = await run('make -f evil.mk test', 'Approve once');
  if (approved.card) expect(existsSync(pwned)).toBe(true);
});

test('`git log --output=FILE` does not ride on `git log`; `git log --oneline` does', async () => {
  h = await start(ENTRIES);
  await gitRepo(h.workspace);
  const out = join(h.workspace, 'LEAKED');
  expectNotAutoRun(await run('git log --output=LEAKED -1'));
  expect(existsSync(out)).toBe(false);
  const plain = await run('git log --oneline -1');
  expect(plain.auto).toBe(true);
  expect(plain.result.content).toContain('first commit');
});

test('"Always" decides its own card only: the other pending cards go through the gate again, and only those the new key covers run', async () => {
  h = await start(); // no allowlist: every command asks
  await gitRepo(h.workspace);
  const leaked = join(h.workspace, 'LEAKED');
  const commands = [
    'git log --oneline -1', // A: Always is clicked here (key `git log`)
    'git log --output=LEAKED -1', // B: same key, but an option that writes a file: stays pending
    'git log -1 --format=%s', // C: covered by the new `git log` key: approved by the re-check
    'git status --short', // D: another key: stays pending
  ];
  h.script({ toolUses: commands.map((command) => ({ name: 'execute_command', input: { command } })) }, { text: 'all handled' });
  await h.adapter.send('run these four');
  await waitFor('four cards and approve-all', () => h.adapter.cards.length === 5);
  const cardOf = (command: string): PostedCard => h.adapter.cards.find((c) => c.card.body.includes(command))!;
  const [a, b, c, d] = commands.map(cardOf);

  // Each card says what its Always would cover; the risky one offers none.
  const alwaysA = a!.card.buttons.find((x) => x.label.startsWith('Always'));
  expect(alwaysA?.label).toBe('Always allow “git log”');
  expect(a!.card.body).toContain("adds “git log” to this agent's allowlist");
  expect(a!.card.body).toMatch(/never with options that run other code, write files or change its directory or configuration/);
  expect(b!.card.buttons.some((x) => x.label.startsWith('Always'))).toBe(false);
  expect(b!.card.body).not.toContain('Always approve');

  await h.adapter.click(a!, 'Always', { user: 'local' });
  await waitFor('C approved by the re-check', () => c!.updates.at(-1));
  expect(a!.updates.at(-1)?.outcome).toMatch(/^Always approved by local/);
  expect(c!.updates.at(-1)?.outcome).toMatch(/covered by an Always/);
  // A runs only after the re-check of the others is over; once A and C have finished, B and D are
  // still waiting for a human: no outcome, buttons intact.
  await waitFor('A and C finished', () => h.adapter.eventsOf('console:main', 'tool_finished').length === 2);
  expect(b!.updates).toHaveLength(0);
  expect(d!.updates).toHaveLength(0);
  expect(h.adapter.answers()).toHaveLength(0);
  expect(existsSync(leaked)).toBe(false);

  await h.adapter.click(b!, 'Deny', { user: 'local' });
  await h.adapter.click(d!, 'Approve once', { user: 'local' });
  await waitFor('answer', () => h.adapter.answers()[0]);
  expect(existsSync(leaked)).toBe(false);
  const results = (h.modelRequests()[1]!.body as { messages: Array<{ content: Array<{ type: string; content?: unknown; is_error?: boolean }> }> }).messages
    .at(-1)!
    .content.filter((x) => x.type === 'tool_result')
    .map((x) => ({ text: typeof x.content === 'string' ? x.content : JSON.stringify(x.content), error: x.is_error === true }));
  expect(results.map((r) => r.error)).toEqual([false, true, false, false]);
  expect(results[0]!.text).toContain('first commit');
  expect(results[1]!.text).toMatch(/denied by local/);
  expect(results[2]!.text).toContain('first commit');

  // The new key covers later plain `git log` without a card, and never the risky spelling.
  expectNotAutoRun(await run('git log --output=LEAKED -1'));
  expect(existsSync(leaked)).toBe(false);
  const later = await run('git log --stat -1');
  expect(later.auto).toBe(true);
});

test('an "Always" in one conversation re-checks the cards waiting in the others: the covered one runs, the risky one stays pending', async () => {
  h = await start();
  await gitRepo(h.workspace);
  const leaked = join(h.workspace, 'LEAKED');
  const use = (command: string) => ({ toolUses: [{ name: 'execute_command', input: { command } }] });
  h.script(
    use('git log --oneline -1'),
    use('git log -1 --format=%s'),
    use('git log --output=LEAKED -1'),
    { text: 'finished' },
    { text: 'finished' },
    { text: 'finished' },
  );
  const cardIn = async (conversation: string, text: string): Promise<PostedCard> => {
    await h.adapter.send(text, { conversation });
    return waitFor(`card in ${conversation}`, () => h.adapter.cards.find((c) => c.key === `console:${conversation}`));
  };
  const a = await cardIn('a', 'log please');
  const b = await cardIn('b', 'log subject please');
  const c = await cardIn('c', 'log to a file please');

  await h.adapter.click(a, 'Always', { user: 'local' });
  await waitFor('a answered', () => h.adapter.answers('console:a')[0]);
  await waitFor('b answered', () => h.adapter.answers('console:b')[0]);
  expect(a.updates.at(-1)?.outcome).toMatch(/^Always approved by local/);
  expect(b.updates.at(-1)?.outcome).toMatch(/covered by an Always/);
  expect(c.updates).toHaveLength(0);
  expect(h.adapter.answers('console:c')).toHaveLength(0);
  expect(existsSync(leaked)).toBe(false);

  await h.adapter.click(c, 'Deny', { user: 'local' });
  await waitFor('c answered', () => h.adapter.answers('console:c')[0]);
  expect(c.updates.at(-1)?.outcome).toMatch(/^Denied by local/);
  expect(existsSync(leaked)).toBe(false);
});
