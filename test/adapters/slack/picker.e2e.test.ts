/**
 * A picker (an approval whose request carries options) with more options than fit as buttons: a
 * Block Kit select menu, end to end in both modes. The real core (createGatehouse: config, SQLite
 * store, router, runner, broker, the real Anthropic SDK against the fake model) with the real Slack
 * adapter (Bolt, @slack/web-api, socket-mode) against the fake Slack. Through the test harness rather
 * than bot/cli/index.ts, because only the harness can add the picker tool (no built-in tool proposes options).
 */
import { z } from 'zod';
import { createSlackAdapter } from '../../../adapters/slack/adapter.js';
import type { Tool } from '../../../agent/tools/types.js';
import { startHttpServer, type HttpServer } from '../../../bot/service/http.js';
import { startFakeSlack, type FakeSlack, type FakeSlackMessage } from '../../fakes/slack.js';
import { Harness, waitFor } from '../../helpers/harness.js';

const BOT_TOKEN = 'xoxb-1111-2222-fakeBotTokenValue';
const SECRET = 'fake-signing-secret-0123456789';
const APP_TOKEN = 'xapp-1-A0APP-3333-fakeAppTokenValue';
const REGIONS = ['eu-west', 'eu-north', 'us-east', 'us-west', 'ap-south', 'ap-east', 'sa-east'];

function regionPicker(): Tool<{ service: string }> {
  return {
    name: 'pick_region',
    description: 'Deploys a service to a region an approver picks (test tool).',
    input: z.strictObject({ service: z.string() }),
    tier: 'low-risk',
    async propose(input) {
      return { summary: `deploy ${input.service}: pick a region`, options: REGIONS.map((id) => ({ id, label: `Region ${id}` })) };
    },
    async execute(input, _ctx, prepared) {
      return { content: `deployed ${input.service} to ${prepared.selectedOptionId ?? '(none)'}` };
    },
  };
}

const YAML = `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [pick_region]
    tier: high-risk
    workspace: "{{workspace}}"
    approvers: { slack: ["U0ADA"] }
access:
  slack: { users: ["U0ADA", "U0BOB"], channels: ["C0TEAM"] }
`;

let slack: FakeSlack;
let h: Harness | undefined;
let http: HttpServer | undefined;

afterEach(async () => {
  await h?.close();
  await http?.close();
  await slack.close();
  h = undefined;
  http = undefined;
});

const selectOf = (m: FakeSlackMessage) =>
  (
    (m.blocks ?? []).find((b) => b['type'] === 'actions') as
      | { elements: Array<{ type: string; options?: Array<{ value: string; text: { text: string } }> }> }
      | undefined
  )?.elements[0];

for (const mode of ['http', 'socket'] as const) {
  test(`${mode === 'http' ? 'HTTP mode' : 'Socket Mode'}: a picker with 7 options is a select menu; a non-approver's choice changes nothing, the approver's reaches the tool`, async () => {
    slack = await startFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN, signingSecret: SECRET });
    slack.mode = mode;
    const adapter = createSlackAdapter({
      botToken: BOT_TOKEN,
      ...(mode === 'socket' ? { appToken: APP_TOKEN } : { signingSecret: SECRET }),
      apiUrl: slack.apiUrl,
      log: () => {},
    });
    http = await startHttpServer({ host: '127.0.0.1', port: 0, routes: adapter.httpRoutes(), health: () => ({}) });
    slack.eventsUrl = `http://127.0.0.1:${http.port}/slack/events`;
    h = await Harness.start({ yaml: YAML, extraTools: [regionPicker()], adapters: () => [adapter] });
    h.script({ toolUses: [{ name: 'pick_region', input: { service: 'web' } }] }, { text: 'Deployed.' });

    const { ts } = await slack.userMessage({ user: 'U0BOB', channel: 'C0TEAM', text: `<@${slack.botUserId}> deploy web` });
    const card = await waitFor('the picker', () => slack.visible('C0TEAM', ts).find((m) => selectOf(m)?.type === 'static_select'));
    const select = selectOf(card)!;
    expect(select.options!.map((o) => o.text.text)).toEqual([...REGIONS.map((r) => `Region ${r}`), 'Deny']);
    const tokenOf = (label: string) => select.options!.find((o) => o.text.text === label)!.value;
    expect(new Set(select.options!.map((o) => o.value)).size).toBe(REGIONS.length + 1);
    expect(JSON.stringify(select.options!.map((o) => o.value))).not.toMatch(/eu-|us-|ap-|sa-/); // tokens only

    expect((await slack.click({ user: 'U0BOB', message: card, value: tokenOf('Region ap-south') })).status).toBe(200);
    await waitFor('notice to Bob', () => slack.ephemerals.find((e) => e.user === 'U0BOB'));
    expect(selectOf(card)).toBeDefined(); // still open

    expect((await slack.click({ user: 'U0ADA', message: card, value: tokenOf('Region ap-south') })).status).toBe(200);
    await waitFor('the answer', () => slack.visible('C0TEAM', ts).some((m) => m.text === 'Deployed.'));
    expect(JSON.stringify(h.modelRequests()[1]!.body)).toContain('deployed web to ap-south');
    expect(selectOf(card)).toBeUndefined(); // replaced in place with the outcome
    expect(JSON.stringify(card.blocks)).toMatch(/ap-south/);
    expect(JSON.stringify(card.blocks)).toMatch(/U0ADA|u0ada/i);
  });
}
