import { conversationRef, matchKey } from '../../../adapters/kit/keys.js';
import { secretScrubber } from '../../../adapters/kit/secrets.js';

describe('secretScrubber', () => {
  test('every occurrence of every secret goes, empty and unset ones are ignored', () => {
    const { scrub } = secretScrubber(['xoxb-1', undefined, '', 'xapp-2']);
    expect(scrub('a xoxb-1 b xapp-2 c xoxb-1')).toBe('a <secret> b <secret> c <secret>');
    expect(scrub('nothing here')).toBe('nothing here');
  });

  test("describeError reads an API error's code (and the missing scope), else the message, scrubbed", () => {
    const { describeError } = secretScrubber(['T0K3N']);
    expect(describeError({ data: { error: 'missing_scope', needed: 'chat:write' } })).toBe('missing_scope (needs chat:write)');
    expect(describeError(new Error('GET https://x/T0K3N failed'))).toBe('GET https://x/<secret> failed');
    expect(describeError('T0K3N')).toBe('<secret>');
  });

  test("a platform's own mark and describer: what the describer returns is scrubbed too", () => {
    const { scrub, describeError } = secretScrubber(['123:abc'], { mark: '<token>', detail: (err) => `read ${String(err)}` });
    expect(scrub('/bot123:abc/getMe')).toBe('/bot<token>/getMe');
    expect(describeError('123:abc')).toBe('read <token>');
  });
});

describe('key codec pieces', () => {
  test('conversationRef sets spaceId and threadId only when given, so a round trip deep-equals', () => {
    expect(conversationRef('telegram', 'telegram:5', '5', { threadId: undefined })).toStrictEqual({ platform: 'telegram', key: 'telegram:5', channelId: '5' });
    expect(conversationRef('slack', 'slack:T1:C1:1.2', 'C1', { spaceId: 'T1', threadId: '1.2' })).toStrictEqual({
      platform: 'slack',
      key: 'slack:T1:C1:1.2',
      channelId: 'C1',
      spaceId: 'T1',
      threadId: '1.2',
    });
  });

  test('matchKey gives the captures or throws naming the form expected', () => {
    const re = /^x:(\d+)(?::(\d+))?$/;
    expect([...matchKey(re, 'x:1:2', 'X', 'x:<a>[:<b>]')].slice(1)).toEqual(['1', '2']);
    expect(() => matchKey(re, 'x:one', 'X', 'x:<a>[:<b>]')).toThrow('not a X conversation key: "x:one" (expected x:<a>[:<b>])');
  });
});
