import type { Card } from '../../../agent/events.js';
import { callbackData, renderCard } from '../../../adapters/telegram/cards.js';
import { chunkPlain } from '../../../adapters/telegram/chunk.js';
import { htmlToPlain } from '../../../adapters/telegram/format.js';
import { decodeKey, encodeKey, refFor } from '../../../adapters/telegram/keys.js';
import { parseTelegramHtml } from '../../fakes/telegram.js';

const squash = (s: string) => s.replace(/\s+/g, '');

describe('chunkPlain', () => {
  test('splits at line breaks under the limit', () => {
    const text = Array.from({ length: 300 }, (_, i) => `row ${i} ${'y'.repeat(30)}`).join('\n');
    const pieces = chunkPlain(text);
    expect(pieces.length).toBe(3);
    for (const p of pieces) expect(p.length).toBeLessThanOrEqual(4096);
    expect(pieces.join('\n')).toBe(text);
  });
});

describe('renderCard', () => {
  const base: Card = {
    kind: 'approval',
    title: 'Run a command?',
    body: 'execute_command wants to run:',
    preview: 'rm -rf /tmp/<build> && echo "done"',
    buttons: [
      { token: 'tok_Approve0123456789abcdefghijklmnopqrs', label: 'Approve once', style: 'primary' },
      { token: 'tok_Always0123456789abcdefghijklmnopqrst', label: 'Always approve `rm`', style: 'default' },
      { token: 'tok_Deny0123456789abcdefghijklmnopqrstuv', label: 'Deny', style: 'danger' },
    ],
    tier: 'high-risk',
  };

  test('escaped HTML, one button per row, callback_data within 64 bytes', () => {
    const r = renderCard(base);
    expect(parseTelegramHtml(r.html)).toEqual({
      ok: true,
      plain: 'Run a command?\nexecute_command wants to run:\n\nrm -rf /tmp/<build> && echo "done"\n\nRated: high-risk',
    });
    expect(r.lead).toEqual([]);
    expect(r.keyboard?.inline_keyboard).toEqual(base.buttons.map((b) => [{ text: b.label, callback_data: `g:${b.token}` }]));
    for (const [b] of r.keyboard?.inline_keyboard ?? []) expect(Buffer.byteLength(b?.callback_data ?? '')).toBeLessThanOrEqual(64);
  });

  test('decided card: outcome shown, no keyboard', () => {
    const r = renderCard({ ...base, buttons: [], outcome: 'Approved once by Ada at 12:03' });
    expect(r.keyboard).toBeUndefined();
    expect(htmlToPlain(r.html)).toMatch(/Approved once by Ada at 12:03$/);
  });

  test('a huge preview is cut (and says so); body and question are whole', () => {
    const body = 'Q: ' + 'why? '.repeat(300);
    const preview = Array.from({ length: 2000 }, (_, i) => `+ added line ${i}`).join('\n');
    const r = renderCard({ ...base, body, preview });
    const parsed = parseTelegramHtml(r.html);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.plain.length).toBeLessThanOrEqual(4096);
    expect(parsed.plain).toContain(body.trim());
    expect(parsed.plain).toMatch(/\(preview cut: \d+ more characters\)/);
    // decided version of the same card fits too (room for the outcome is reserved)
    const decided = renderCard({ ...base, body, preview, buttons: [], outcome: 'Denied by Ada: '.padEnd(250, 'x') });
    const d = parseTelegramHtml(decided.html);
    expect(d.ok && d.plain.length <= 4096).toBe(true);
  });

  test('a body longer than one message is sent whole: head first, tail on the card', () => {
    const body = Array.from({ length: 900 }, (_, i) => `sentence ${i}.`).join(' ');
    const r = renderCard({ ...base, body });
    expect(r.lead.length).toBeGreaterThanOrEqual(1);
    const all = [...r.lead, r.html].map((h) => parseTelegramHtml(h));
    for (const p of all) expect(p.ok && p.plain.length <= 4096).toBe(true);
    expect(all[0]?.ok && all[0].plain.startsWith('Run a command?\n')).toBe(true);
    const text = all.map((p) => (p.ok ? p.plain.replace(/^Run a command\?( \(continued\))?\n/, '') : '')).join(' ');
    expect(squash(text)).toContain(squash(body));
  });

  test('labels are cut to 64 characters; a token too long for callback_data throws', () => {
    const r = renderCard({ ...base, buttons: [{ token: 'short', label: 'L'.repeat(100), style: 'default' }] });
    expect(r.keyboard?.inline_keyboard[0]?.[0]?.text.length).toBe(64);
    expect(() => callbackData('x'.repeat(63))).toThrow(/65 bytes.*1-64 bytes/);
    expect(() => renderCard({ ...base, buttons: [{ token: 'é'.repeat(40), label: 'x', style: 'default' }] })).toThrow(/callback_data/);
  });
});

describe('conversation keys', () => {
  test('chat and forum topic round-trip', () => {
    expect(refFor(-1001234567890)).toEqual({ platform: 'telegram', key: 'telegram:-1001234567890', channelId: '-1001234567890' });
    expect(refFor(-100123, 42)).toEqual({ platform: 'telegram', key: 'telegram:-100123:42', channelId: '-100123', threadId: '42' });
    for (const ref of [refFor(55), refFor(-100123, 42)]) expect(decodeKey(ref.key)).toEqual(ref);
    expect(encodeKey(7, 9)).toBe('telegram:7:9');
  });

  test('malformed keys are refused', () => {
    for (const bad of ['telegram:', 'telegram:abc', 'slack:T1:C1', 'telegram:1:2:3', 'telegram:1:-2', 'telegram:01']) {
      expect(() => decodeKey(bad)).toThrow(/not a Telegram conversation key/);
    }
  });
});
