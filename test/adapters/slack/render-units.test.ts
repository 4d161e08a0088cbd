import type { Card } from '../../../agent/events.js';
import { ACTION_PREFIX, renderSlackCard } from '../../../adapters/slack/blocks.js';
import { decodeKey, refFor } from '../../../adapters/slack/keys.js';
import { markdownToMrkdwn, mrkdwnToPlain, slackAnswer, SLACK_TEXT_LIMIT } from '../../../adapters/slack/mrkdwn.js';

describe('Slack mrkdwn from the markdown tree', () => {
  test.each([
    ['bold', 'a **b** c', 'a *b* c'],
    ['italic', 'an *it* word', 'an _it_ word'],
    ['strike', '~~gone~~', '~gone~'],
    ['code', 'run `ls -la`', 'run `ls -la`'],
    ['fence', '```ts\nconst x = a < b;\n```', '```\nconst x = a &lt; b;\n```'],
    ['link', '[the docs](https://e.x/a?b=1&c=2)', '<https://e.x/a?b=1&c=2|the docs>'],
    ['unsafe link written out', '[x](javascript:alert(1))', 'x (javascript:alert(1))'],
    ['heading', '## Results', '*Results*'],
    ['list', '- one\n- two', '• one\n• two'],
    ['quote', '> a\n> b', '> a\n> b'],
    ['mentions cannot be forged', 'ping <!channel> and <@U123>', 'ping &lt;!channel&gt; and &lt;@U123&gt;'],
  ])('%s', (_n, md, out) => {
    expect(markdownToMrkdwn(md)).toBe(out);
  });

  test('a long answer: pieces within the limit, code blocks complete, nothing lost', () => {
    const code = Array.from({ length: 400 }, (_, i) => `row ${i}: x`).join('\n');
    const md = `${'Some words here. '.repeat(300)}\n\n\`\`\`\n${code}\n\`\`\`\n\nEnd.`;
    const pieces = slackAnswer(md);
    expect(pieces.length).toBeGreaterThan(2);
    for (const p of pieces) {
      expect(p.length).toBeLessThanOrEqual(SLACK_TEXT_LIMIT);
      expect((p.match(/```/g) ?? []).length % 2).toBe(0);
    }
    const squash = (s: string) => s.replace(/\s+|```/g, '');
    expect(squash(pieces.map(mrkdwnToPlain).join(''))).toBe(squash(`${'Some words here. '.repeat(300)}${code}End.`));
  });
});

describe('Slack keys', () => {
  test('DM, channel and thread round-trip; malformed keys throw', () => {
    for (const ref of [refFor('T1', 'D1'), refFor('T1', 'C1'), refFor('T1', 'C1', '1700000000.000100')]) {
      expect(decodeKey(ref.key)).toEqual(ref);
    }
    expect(refFor('T1', 'C1', '1700000000.000100')).toEqual({
      platform: 'slack',
      key: 'slack:T1:C1:1700000000.000100',
      channelId: 'C1',
      spaceId: 'T1',
      threadId: '1700000000.000100',
    });
    for (const bad of ['slack:T1', 'slack:t1:c1', 'slack:T1:C1:abc', 'telegram:1']) expect(() => decodeKey(bad)).toThrow();
  });
});

describe('Block Kit cards', () => {
  const card: Card = {
    kind: 'approval',
    title: 'Run a command?',
    body: 'execute_command in <#C1>',
    preview: 'rm -rf build && make',
    tier: 'high-risk',
    buttons: [
      { token: 'tokA', label: 'Approve once', style: 'primary' },
      { token: 'tokB', label: 'Always: ' + 'x'.repeat(100), style: 'default' },
      { token: 'tokC', label: 'Deny', style: 'danger' },
    ],
  };

  test('buttons carry only the token, styles primary/danger, labels within 75, text escaped', () => {
    const m = renderSlackCard(card);
    const actions = m.blocks.find((b) => b['type'] === 'actions') as { elements: Array<Record<string, unknown>> };
    expect(actions.elements.map((e) => e['value'])).toEqual(['tokA', 'tokB', 'tokC']);
    expect(actions.elements.map((e) => e['style'])).toEqual(['primary', undefined, 'danger']);
    for (const e of actions.elements) {
      expect(String(e['action_id']).startsWith(`${ACTION_PREFIX}:`)).toBe(true);
      expect((e['text'] as { text: string }).text.length).toBeLessThanOrEqual(75);
    }
    expect(JSON.stringify(m.blocks)).toContain('&lt;#C1&gt;');
    expect(JSON.stringify(m.blocks)).toContain('rm -rf build &amp;&amp; make');
  });

  test('a picker with more options than fit a row is one select menu; decided cards have no actions', () => {
    const picker: Card = {
      ...card,
      kind: 'picker',
      buttons: Array.from({ length: 9 }, (_, i) => ({ token: `t${i}`, label: `Option ${i}`, style: 'default' as const })),
    };
    const m = renderSlackCard(picker);
    const actions = m.blocks.find((b) => b['type'] === 'actions') as { elements: Array<Record<string, unknown>> };
    expect(actions.elements).toHaveLength(1);
    expect(actions.elements[0]?.['type']).toBe('static_select');
    expect((actions.elements[0]!['options'] as Array<{ value: string }>).map((o) => o.value)).toEqual(picker.buttons.map((b) => b.token));
    const decided = renderSlackCard({ ...card, buttons: [], outcome: 'Denied by Bob at 10:00' });
    expect(decided.blocks.some((b) => b['type'] === 'actions')).toBe(false);
    expect(JSON.stringify(decided.blocks)).toContain('Denied by Bob at 10:00');
  });

  test('every section stays under 3,000 characters even for huge bodies and previews', () => {
    const m = renderSlackCard({ ...card, body: 'b'.repeat(9000), preview: 'p\n'.repeat(5000) });
    expect(m.lead.length).toBeGreaterThan(0);
    for (const b of m.blocks) {
      const t = (b['text'] as { text?: string } | undefined)?.text ?? '';
      expect(t.length).toBeLessThanOrEqual(3000);
    }
    expect(m.blocks.length).toBeLessThanOrEqual(50);
  });
});
