import { AdapterError, messageOf } from '../../../adapters/kit/errors.js';
import { outboundCaller } from '../../../adapters/kit/outbound.js';
import type { ConversationRef } from '../../../adapters/types.js';

const ref: ConversationRef = { platform: 'slack', key: 'slack:T1:C1', channelId: 'C1' };

describe('outbound errors keep their cause', () => {
  test('a failed call is logged once and rethrown as a coded AdapterError whose cause is the platform error', async () => {
    const logged: string[] = [];
    const outbound = outboundCaller(
      (_level, msg) => logged.push(msg),
      (err) => `described ${messageOf(err)}`,
    );
    const original = new Error('not_in_channel');
    const thrown = await outbound('chat.postMessage', ref, () => Promise.reject(original)).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(AdapterError);
    expect((thrown as AdapterError).code).toBe('outbound_failed');
    expect((thrown as AdapterError).message).toBe('chat.postMessage in slack:T1:C1 failed: described not_in_channel');
    expect((thrown as AdapterError).cause).toBe(original);
    expect(logged).toEqual(['chat.postMessage in slack:T1:C1 failed: described not_in_channel']);
  });

  test('a platform whose errors hold a token passes a scrubbed cause instead of the original', async () => {
    const outbound = outboundCaller(
      () => {},
      () => 'scrubbed',
      () => new Error('scrubbed'),
    );
    const thrown = await outbound('sendMessage', ref, () => Promise.reject(new Error('https://api/bot123:SECRET/sendMessage'))).catch((e: unknown) => e);
    expect(String((thrown as AdapterError).cause)).not.toContain('SECRET');
  });

  test('messageOf reads an Error and anything else', () => {
    expect(messageOf(new Error('boom'))).toBe('boom');
    expect(messageOf(42)).toBe('42');
  });
});
