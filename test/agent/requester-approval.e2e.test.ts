/**
 * Issue 24 end to end, "nobody approves their own request": through the real start path (bot/cli/index.ts
 * startBot), the real grammy against the fake Bot API and real Bolt against the fake Slack, the real
 * Anthropic SDK against the fake model. The attack: the person who asked taps Approve on their own
 * card. What they see (a private notice), what the other approver sees, that nothing ran before the
 * other approver's tap, the audit record of the refusal, and the start-log line.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBot, type RunningBot } from '../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack.js';
import { startFakeTelegram, type FakeChat, type FakeTelegram, type FakeUser } from '../fakes/telegram.js';
import { TOKEN as TG_TOKEN } from '../adapters/telegram/helpers.js';
import { testStoreUrl, waitFor } from '../helpers/harness.js';
import { askReply } from '../helpers/questions.js';

const SLACK_TOKEN = 'xoxb-1111-2222-fakeBotTokenValue';
const SECRET = 'fake-signing-secret-0123456789';

let model: FakeAnthropic;
let bot: RunningBot | undefined;
let dir: string;
let logged = '';
const queue: FakeReply[] = [];
const plan = { toolUses: [{ name: 'write_file', input: { path: 'plan.md', content: '# plan\n' } }] };

async function boot(yaml: string, env: Record<string, string>): Promise<void> {
  writeFileSync(join(dir, 'gatehouse.yaml'), yaml);
  const out = new PassThrough();
  bot = await startBot(
    {
      env: {
        ANTHROPIC_API_KEY: 'test-key',
        ANTHROPIC_BASE_URL: model.url,
        GATEHOUSE_CONFIG: join(dir, 'gatehouse.yaml'),
        GATEHOUSE_STORE: await testStoreUrl('sqlite', dir),
        GATEHOUSE_HTTP_PORT: '0',
        ...env,
      },
      cwd: dir,
      stdout: out,
      stderr: out,
    },
    (_level, msg) => {
      logged += `${msg}\n`;
    },
  );
}

/** The audit file (next to the SQLite store): every audit event the bot wrote. */
function auditRecords(): Array<Record<string, unknown>> {
  const auditDir = join(dir, 'audit');
  const out: Array<Record<string, unknown>> = [];
  for (const f of readdirSync(auditDir).filter((n) => n.endsWith('.jsonl'))) {
    for (const l of readFileSync(join(auditDir, f), 'utf8').split('\n')) if (l) out.push((JSON.parse(l) as { event: Record<string, unknown> }).event);
  }
  return out;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-requester-'));
  model = await startFakeAnthropic({ apiKey: 'test-key' });
  queue.length = 0;
  logged = '';
  model.setHandler(() => queue.shift() ?? { text: '(no scripted reply)' });
});

afterEach(async () => {
  await bot?.stop();
  bot = undefined;
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Telegram', () => {
  const ada: FakeUser = { id: 501, first_name: 'Ada' };
  const bob: FakeUser = { id: 502, first_name: 'Bob' };
  const group: FakeChat = { id: -100200, type: 'supergroup', title: 'Team' };
  let tg: FakeTelegram;
  beforeEach(async () => {
    tg = await startFakeTelegram({ token: TG_TOKEN });
  });
  afterEach(async () => {
    await tg.close();
  });
  const yaml = (approvers: string) => `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [write_file, ask_user_question]
    tier: read-only
    workspace: "${join(dir, 'ws')}"
    approvers: { telegram: [${approvers}] }
access:
  telegram: { users: ["501", "502"], chats: ["-100200"] }
`;
  const start = (approvers: string) => boot(yaml(approvers), { TELEGRAM_BOT_TOKEN: TG_TOKEN, TELEGRAM_API_ROOT: tg.apiRoot });
  const card = () => tg.visible(-100200).find((m) => m.replyMarkup !== undefined);
  const texts = () => tg.visible(-100200).map((m) => m.plain);

  test('two approvers bound (the default: false): the requester’s tap is refused privately; the command runs only after the other approver’s tap', async () => {
    await start('"501", "502"');
    expect(logged).toContain('requester may approve their own request: default: telegram no (default: 2 bound)');
    queue.push(plan, { text: 'Wrote plan.md.' });
    await tg.sendText({ chat: group, from: bob, text: `@${tg.bot.username} write the plan` });
    await tg.waitFor(() => card() !== undefined, 10_000, 'approval card');
    const c = card()!;

    // Bob asked, and Bob is an approver: his own tap gets the private notice and changes nothing.
    await tg.press(-100200, c.messageId, 0, bob);
    await tg.waitFor(() => tg.callbackAnswers.length === 1, 10_000, 'callback answered');
    expect(tg.callbackAnswers[0]!.text).toMatch(/You started this request, so another approver must decide it/);
    expect(c.edits).toHaveLength(0);
    expect(c.replyMarkup!.inline_keyboard.flat().length).toBeGreaterThan(0); // the buttons stay for Ada
    expect(existsSync(join(dir, 'ws', 'plan.md'))).toBe(false);
    expect(texts()).not.toContain('Wrote plan.md.');
    expect(auditRecords()).toContainEqual(
      expect.objectContaining({ event: 'approval_refused', platform: 'telegram', userId: '502', reason: 'requester_may_not_approve' }),
    );

    // Ada, the other approver, approves: now it runs, and the card says who decided.
    await tg.press(-100200, c.messageId, 0, ada);
    await tg.waitFor(() => texts().includes('Wrote plan.md.'), 10_000, 'answer after approval');
    await tg.waitFor(() => /Approved once by Ada/.test(c.plain), 10_000, 'decided card');
    expect(readFileSync(join(dir, 'ws', 'plan.md'), 'utf8')).toBe('# plan\n');
    expect(tg.callbackAnswers[1]!.text).not.toMatch(/another approver/);
  });

  test('the asker still answers their own question with two approvers bound', async () => {
    await start('"501", "502"');
    queue.push(
      askReply('Which region?', [
        { value: 'eu', label: 'eu' },
        { value: 'us', label: 'us' },
      ]),
      { text: 'Going with eu.' },
    );
    await tg.sendText({ chat: group, from: bob, text: `@${tg.bot.username} deploy` });
    await tg.waitFor(() => card() !== undefined, 10_000, 'question card');
    await tg.press(-100200, card()!.messageId, 0, bob);
    await tg.waitFor(() => texts().includes('Going with eu.'), 10_000, 'answer');
  });

  test('one approver bound (the default: true): the requester who is that approver approves their own request', async () => {
    await start('"502"');
    expect(logged).toContain('requester may approve their own request: default: telegram yes (default: 1 bound)');
    queue.push(plan, { text: 'Wrote plan.md.' });
    await tg.sendText({ chat: group, from: bob, text: `@${tg.bot.username} write the plan` });
    await tg.waitFor(() => card() !== undefined, 10_000, 'approval card');
    await tg.press(-100200, card()!.messageId, 0, bob);
    await tg.waitFor(() => texts().includes('Wrote plan.md.'), 10_000, 'answer after approval');
    expect(readFileSync(join(dir, 'ws', 'plan.md'), 'utf8')).toBe('# plan\n');
  });
});

describe('Slack', () => {
  let slack: FakeSlack;
  beforeEach(async () => {
    slack = await startFakeSlack({ botToken: SLACK_TOKEN, appToken: 'xapp-1-A0APP-3333-fakeAppTokenValue', signingSecret: SECRET });
  });
  afterEach(async () => {
    await slack.close();
  });

  test('requesterMayApprove: false: the requester is told privately, nothing runs; the other approver’s click runs it', async () => {
    await boot(
      `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [write_file]
    tier: read-only
    workspace: "${join(dir, 'ws')}"
    approvers: { slack: ["U0ADA", "U0BOB"] }
    requesterMayApprove: false
access:
  slack: { users: ["U0ADA", "U0BOB"], channels: ["C0TEAM"] }
`,
      { SLACK_BOT_TOKEN: SLACK_TOKEN, SLACK_SIGNING_SECRET: SECRET, SLACK_API_URL: slack.apiUrl },
    );
    slack.eventsUrl = `http://127.0.0.1:${bot!.http!.port}/slack/events`;
    expect(logged).toContain('requester may approve their own request: default: slack no');
    queue.push(plan, { text: 'Written.' });
    const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> write the plan` });
    const isCard = (m: { blocks?: Array<Record<string, unknown>> }) => (m.blocks ?? []).some((b) => b['type'] === 'actions');
    const card = await waitFor('the card', () => slack.visible('C0TEAM', ts).find(isCard));
    const actions = card.blocks!.find((b) => b['type'] === 'actions') as { elements: Array<{ value: string; text: { text: string } }> };
    const approve = actions.elements.find((e) => e.text.text.startsWith('Approve'))!.value;

    await slack.click({ user: 'U0BOB', message: card, value: approve });
    const notice = await waitFor('notice to Bob', () => slack.ephemerals.find((e) => e.user === 'U0BOB'));
    expect(notice.text).toMatch(/You started this request, so another approver must decide it/);
    expect(existsSync(join(dir, 'ws', 'plan.md'))).toBe(false);
    expect(isCard(card)).toBe(true); // still undecided, buttons there for Ada
    expect(slack.ephemerals.filter((e) => e.user === 'U0ADA')).toHaveLength(0);

    await slack.click({ user: 'U0ADA', message: card, value: approve });
    await waitFor('answer', () => slack.visible('C0TEAM', ts).some((m) => m.text === 'Written.'));
    expect(readFileSync(join(dir, 'ws', 'plan.md'), 'utf8')).toBe('# plan\n');
    expect(isCard(card)).toBe(false);
    expect(JSON.stringify(card.blocks)).toMatch(/U0ADA|ada/i);
    expect(auditRecords()).toContainEqual(
      expect.objectContaining({ event: 'approval_refused', platform: 'slack', userId: 'U0BOB', reason: 'requester_may_not_approve' }),
    );
  });
});
