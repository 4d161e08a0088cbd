/**
 * What the approvalDelivery end-to-end tests share: a bot started through the real start path
 * (bot/cli/index.ts startBot) against the fake model, with its log and its audit file readable.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBot, type RunningBot } from '../../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../../fakes/anthropic.js';
import { startFakeSlack, type FakeSlack } from '../../fakes/slack.js';
import { testStoreUrl } from '../../helpers/harness.js';

const SLACK_TOKEN = 'xoxb-1111-2222-fakeBotTokenValue';
const SLACK_SECRET = 'fake-signing-secret-0123456789';

/** The model asks to write plan.md, then answers `answer` once the tool result is back. */
export const writePlan = { toolUses: [{ name: 'write_file', input: { path: 'plan.md', content: '# plan\n' } }] };

export class DeliveryBed {
  dir = '';
  logged = '';
  bot: RunningBot | undefined;
  model!: FakeAnthropic;
  readonly queue: FakeReply[] = [];

  async setUp(): Promise<void> {
    this.dir = mkdtempSync(join(tmpdir(), 'gatehouse-delivery-'));
    this.model = await startFakeAnthropic({ apiKey: 'test-key' });
    this.queue.length = 0;
    this.logged = '';
    this.model.setHandler(() => this.queue.shift() ?? { text: '(no scripted reply)' });
  }

  async tearDown(): Promise<void> {
    await this.bot?.stop();
    this.bot = undefined;
    await this.model.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  get ws(): string {
    return join(this.dir, 'ws');
  }

  /** gatehouse.yaml for one agent `default` with write_file above its tier: its approvers, approvalDelivery, access. */
  yaml(a: { approvers: string; delivery: string; access: string; extra?: string }): string {
    return `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [write_file]
    tier: read-only
    workspace: "${this.ws}"
    approvers: ${a.approvers}
    approvalDelivery: ${a.delivery}${a.extra ?? ''}
access:
${a.access}
`;
  }

  /** Boots with Slack (HTTP mode) against `slack` (and `env` besides), and points the fake's events at the bot. */
  async bootSlack(slack: FakeSlack, yaml: string, env: Record<string, string> = {}): Promise<void> {
    await this.boot(yaml, { SLACK_BOT_TOKEN: SLACK_TOKEN, SLACK_SIGNING_SECRET: SLACK_SECRET, SLACK_API_URL: slack.apiUrl, ...env });
    slack.eventsUrl = `http://127.0.0.1:${this.bot!.http!.port}/slack/events`;
  }

  async boot(yaml: string, env: Record<string, string>): Promise<void> {
    writeFileSync(join(this.dir, 'gatehouse.yaml'), yaml);
    const out = new PassThrough();
    this.bot = await startBot(
      {
        env: {
          ANTHROPIC_API_KEY: 'test-key',
          ANTHROPIC_BASE_URL: this.model.url,
          GATEHOUSE_CONFIG: join(this.dir, 'gatehouse.yaml'),
          GATEHOUSE_STORE: await testStoreUrl('sqlite', this.dir),
          GATEHOUSE_HTTP_PORT: '0',
          ...env,
        },
        cwd: this.dir,
        stdout: out,
        stderr: out,
      },
      (_level, msg) => {
        this.logged += `${msg}\n`;
      },
    );
  }

  /** Every audit event the bot wrote (the audit file next to the SQLite store). */
  audit(): Array<Record<string, unknown>> {
    const auditDir = join(this.dir, 'audit');
    const out: Array<Record<string, unknown>> = [];
    for (const f of readdirSync(auditDir).filter((n) => n.endsWith('.jsonl'))) {
      for (const l of readFileSync(join(auditDir, f), 'utf8').split('\n')) if (l) out.push((JSON.parse(l) as { event: Record<string, unknown> }).event);
    }
    return out;
  }

  planWritten(): string | undefined {
    try {
      return readFileSync(join(this.ws, 'plan.md'), 'utf8');
    } catch {
      return undefined;
    }
  }
}

export function startSlack(): Promise<FakeSlack> {
  return startFakeSlack({ botToken: SLACK_TOKEN, appToken: 'xapp-1-A0APP-3333-fakeAppTokenValue', signingSecret: SLACK_SECRET });
}

/** A Slack message's text and blocks, as one string to match on. */
export const slackPlain = (m: { text: string; blocks?: unknown }): string => `${m.text} ${JSON.stringify(m.blocks ?? [])}`;

/** A Slack message's buttons: label -> value (token). */
export function slackButtons(m: { blocks?: Array<Record<string, unknown>> | undefined }): Array<{ label: string; value: string }> {
  const actions = (m.blocks ?? []).find((b) => b['type'] === 'actions') as { elements: Array<{ value: string; text: { text: string } }> } | undefined;
  return (actions?.elements ?? []).map((e) => ({ label: e.text.text, value: e.value }));
}
