import type { Card } from '../../../agent/events.js';
import { classifyAttachment, cutBefore, cutText, decodeText } from '../../../adapters/kit/attachments.js';
import { layoutCard } from '../../../adapters/kit/cards.js';
import type { CardLimits } from '../../../adapters/kit/cards.js';

const slackLike: CardLimits = { text: 3000, buttonLabel: 75, maxButtons: 5, optionLabel: 75 };
const button = (i: number, label = `Option ${i}`) => ({ token: `tok${i}`, label, style: 'default' as const });

describe('layoutCard', () => {
  const base: Card = { kind: 'approval', title: 'Run a command?', body: 'The agent wants to run this.', buttons: [button(1)] };

  test('more options than the platform shows as buttons become one select menu, tokens intact', () => {
    const card: Card = { ...base, kind: 'picker', buttons: Array.from({ length: 8 }, (_, i) => button(i)) };
    const l = layoutCard(card, slackLike);
    expect(l.controls.kind).toBe('select');
    if (l.controls.kind === 'select') expect(l.controls.options.map((o) => o.token)).toEqual(card.buttons.map((b) => b.token));
    expect(layoutCard({ ...card, buttons: card.buttons.slice(0, 5) }, slackLike).controls.kind).toBe('buttons');
  });

  test('labels are cut to the limit, surrogate-safe; an empty label shows the token', () => {
    const l = layoutCard({ ...base, buttons: [button(1, '😀'.repeat(60)), button(2, '  ')] }, slackLike);
    if (l.controls.kind !== 'buttons') throw new Error('expected buttons');
    const [a, b] = l.controls.buttons;
    expect(a?.label.length).toBeLessThanOrEqual(75);
    expect(a?.label.endsWith('…')).toBe(true);
    expect(a?.label).not.toMatch(/[\ud800-\udbff]…$/);
    expect(b?.label).toBe('tok2');
  });

  test('a huge preview is cut with a note saying how much; the body is never cut', () => {
    const preview = Array.from({ length: 400 }, (_, i) => `line ${i} ${'x'.repeat(30)}`).join('\n');
    const body = 'b'.repeat(5000);
    const l = layoutCard({ ...base, body, preview }, slackLike);
    expect(l.lead.join('') + l.body).toBe(body);
    const shown = l.preview?.text ?? '';
    expect(preview.startsWith(shown)).toBe(true);
    if (shown !== '') expect(l.preview?.note).toBe(`(preview cut: ${preview.length - shown.length} more characters)`);
    else expect(l.preview?.note).toMatch(/preview omitted: \d+ characters/);
    const small = layoutCard({ ...base, preview }, slackLike);
    expect(small.preview?.note).toBe(`(preview cut: ${preview.length - (small.preview?.text.length ?? 0)} more characters)`);
    expect((small.preview?.text.length ?? 0) + small.body.length + small.title.length).toBeLessThan(3000);
  });

  test('a decided card offers nothing and shows the outcome', () => {
    const l = layoutCard({ ...base, outcome: 'Approved once by Ann at 10:02' }, slackLike);
    expect(l.controls).toEqual({ kind: 'none' });
    expect(l.outcome).toBe('Approved once by Ann at 10:02');
  });
});

describe('attachments', () => {
  test('images, text, refused by kind and by size', () => {
    expect(classifyAttachment({ name: 'a.png', mimeType: 'image/png', size: 10 }, 100)).toEqual({ kind: 'image', mimeType: 'image/png' });
    expect(classifyAttachment({ name: 'shot.JPG', mimeType: 'application/octet-stream' }, 100)).toEqual({ kind: 'image', mimeType: 'image/jpeg' });
    expect(classifyAttachment({ name: 'notes.yaml', mimeType: undefined, size: 5 }, 100)).toMatchObject({ kind: 'text' });
    expect(classifyAttachment({ name: 'x.zip', mimeType: 'application/zip' }, 100)).toEqual({
      kind: 'refused',
      reason: 'x.zip (application/zip): I can read images and text files only',
    });
    expect(classifyAttachment({ name: 'big.txt', mimeType: 'text/plain', size: 6 * 1024 * 1024 }, 5 * 1024 * 1024)).toEqual({
      kind: 'refused',
      reason: 'big.txt is 6 MB; the limit is 5 MB',
    });
    expect(decodeText(new Uint8Array([104, 0, 105]))).toBeUndefined();
    expect(decodeText(new TextEncoder().encode('héllo'))).toBe('héllo');
  });

  test('cutting never leaves half a surrogate pair', () => {
    const s = 'a😀'.repeat(10);
    for (let max = 1; max < s.length; max++) {
      expect(cutBefore(s, max)).not.toMatch(/[\ud800-\udbff]$/);
      expect(cutText(s, max).length).toBeLessThanOrEqual(max);
      expect(cutText(s, max)).not.toMatch(/[\ud800-\udbff]…$/);
    }
    expect(cutText('short', 10)).toBe('short');
  });
});
