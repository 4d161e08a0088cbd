import {
  approverConfigKey,
  checkAccess,
  createRateLimiter,
  createRefusalThrottle,
  floodLine,
  isApprover,
  OnceNotifier,
  rateLimitReply,
  type AccessInput,
  type PlatformAccess,
} from '../../policies/access.js';

const dm = (platform: AccessInput['platform'], senderId: string, channelId = senderId): AccessInput => ({
  platform,
  senderId,
  channelId,
  isDirect: true,
  addressed: false,
});
const group = (platform: AccessInput['platform'], senderId: string, channelId: string, addressed: boolean, spaceId?: string): AccessInput => ({
  platform,
  senderId,
  channelId,
  isDirect: false,
  addressed,
  ...(spaceId !== undefined ? { spaceId } : {}),
});

describe('checkAccess', () => {
  test('secure by default: with nothing configured a DM is refused with the id and the key that admits it', () => {
    expect(checkAccess(dm('telegram', '123'), undefined)).toEqual({
      allowed: false,
      silent: false,
      onceKey: 'telegram:user:123',
      reply:
        "Gatehouse doesn't know you yet. Your Telegram user id is 123. To let you in, add it to access.telegram.users in gatehouse.yaml. " +
        "To let you approve the agent's actions too, also add it to approvers.telegram under the agent (agents.<name>.approvers.telegram).",
    });
    // Empty lists are the same as nothing.
    expect(checkAccess(dm('slack', 'U9', 'D1'), { users: [], channels: [] })).toMatchObject({
      allowed: false,
      silent: false,
      reply: expect.stringContaining('Your Slack user id is U9. To let you in, add it to access.slack.users'),
    });
  });

  test('the reply names the config file the operator uses', () => {
    const r = checkAccess(dm('discord', '77'), undefined, { configName: '/etc/gatehouse/bot.yaml' });
    expect(r).toMatchObject({ reply: expect.stringContaining('access.discord.users in /etc/gatehouse/bot.yaml.') });
  });

  test('a listed user is served in DMs and, when addressing the bot, in groups', () => {
    const access: PlatformAccess = { users: ['123'], chats: [] };
    expect(checkAccess(dm('telegram', '123'), access)).toEqual({ allowed: true });
    expect(checkAccess(group('telegram', '123', '-100', true), access)).toEqual({ allowed: true });
    expect(checkAccess(dm('telegram', '1234'), access)).toMatchObject({ allowed: false, silent: false });
  });

  test('in a group, a message that does not address the bot is ignored silently, admitted or not', () => {
    const access: PlatformAccess = { users: ['123'], chats: ['-100'] };
    expect(checkAccess(group('telegram', '123', '-100', false), access)).toEqual({ allowed: false, silent: true });
    expect(checkAccess(group('telegram', '999', '-555', false), access)).toEqual({ allowed: false, silent: true });
  });

  test('in a group, addressed but not admitted: a reply naming the chat id and access.telegram.chats', () => {
    const r = checkAccess(group('telegram', '999', '-555', true), { users: ['123'], chats: ['-100'] });
    expect(r).toEqual({
      allowed: false,
      silent: false,
      onceKey: 'telegram:chat:-555',
      reply:
        "Gatehouse isn't enabled here. This chat's id is -555. To enable Gatehouse here, add it to access.telegram.chats " +
        'in gatehouse.yaml, or add your user id 999 to access.telegram.users.',
    });
  });

  test('a listed chat admits everyone in it, but never a DM (a listed chat is not a listed user)', () => {
    const access: PlatformAccess = { chats: ['-100', '42'] };
    expect(checkAccess(group('telegram', '999', '-100', true), access)).toEqual({ allowed: true });
    // In Telegram a DM's chat id equals the user's id: listing it under chats must not admit the DM.
    expect(checkAccess(dm('telegram', '42'), access)).toMatchObject({ allowed: false, silent: false });
  });

  test('Slack channels and Discord channels or guilds admit their members', () => {
    expect(checkAccess(group('slack', 'U1', 'C1', true, 'T1'), { channels: ['C1'] })).toEqual({ allowed: true });
    expect(checkAccess(group('slack', 'U1', 'C2', true, 'T1'), { channels: ['C1'] })).toMatchObject({
      allowed: false,
      reply: expect.stringContaining("This channel's id is C2. To enable Gatehouse here, add it to access.slack.channels"),
    });
    expect(checkAccess(group('discord', '5', '600', true, '700'), { guilds: ['700'] })).toEqual({ allowed: true });
    expect(checkAccess(group('discord', '5', '600', true, '700'), { channels: ['600'] })).toEqual({ allowed: true });
    const r = checkAccess(group('discord', '5', '601', true, '701'), { channels: ['600'], guilds: ['700'] });
    expect(r).toMatchObject({
      allowed: false,
      onceKey: 'discord:chat:601',
      reply: expect.stringMatching(/channel's id is 601 \(server id 701\)\. .*access\.discord\.channels \(or the server id to access\.discord\.guilds\)/),
    });
    // A Slack channel list does not admit by the chats key (wrong key for the platform).
    expect(checkAccess(group('slack', 'U1', 'C1', true), { chats: ['C1'] })).toMatchObject({ allowed: false });
  });

  test('the terminal is always served; bots never are', () => {
    expect(checkAccess(dm('console', 'local', 'local'), undefined)).toEqual({ allowed: true });
    expect(checkAccess({ ...dm('telegram', '123'), senderIsBot: true }, { users: ['123'] })).toEqual({ allowed: false, silent: true });
  });

  test('an empty sender id never matches an empty-string entry', () => {
    expect(checkAccess(dm('slack', ''), { users: [''] })).toMatchObject({ allowed: false });
  });
});

describe('OnceNotifier', () => {
  test('tells each stranger once', () => {
    const n = new OnceNotifier();
    const r = checkAccess(dm('telegram', '5'), undefined);
    const key = r.allowed ? '' : r.onceKey!;
    expect(n.first(key)).toBe(true);
    expect(n.first(key)).toBe(false);
    expect(n.first(key)).toBe(false);
    expect(n.first('telegram:user:6')).toBe(true);
    n.forget(key);
    expect(n.first(key)).toBe(true);
  });

  test('memory is bounded; the least recently seen key is forgotten first', () => {
    const n = new OnceNotifier(3);
    for (const k of ['a', 'b', 'c']) expect(n.first(k)).toBe(true);
    expect(n.first('a')).toBe(false); // a is now the most recent
    expect(n.first('d')).toBe(true); // evicts b
    expect(n.size).toBe(3);
    expect(n.first('a')).toBe(false);
    expect(n.first('b')).toBe(true);
    expect(() => new OnceNotifier(0)).toThrow(RangeError);
  });
});

describe('createRateLimiter', () => {
  test('a burst of `messages`, then one every perSeconds/messages, per user', () => {
    let t = 1_000_000;
    const rl = createRateLimiter({ messages: 3, perSeconds: 60 }, () => t);
    expect([rl.take('u1'), rl.take('u1'), rl.take('u1')]).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
    expect(rl.take('u1')).toEqual({ ok: false, retryAfterSec: 20 });
    expect(rl.take('u2')).toEqual({ ok: true }); // another user has their own bucket
    t += 5_000;
    expect(rl.take('u1')).toEqual({ ok: false, retryAfterSec: 15 });
    t += 15_000; // 20 s after the burst: exactly one message refilled
    expect(rl.take('u1')).toEqual({ ok: true });
    expect(rl.take('u1')).toEqual({ ok: false, retryAfterSec: 20 });
    t += 10 * 60_000; // long idle: the bucket is full again, never more than `messages`
    expect([rl.take('u1'), rl.take('u1'), rl.take('u1'), rl.take('u1')].map((d) => d.ok)).toEqual([true, true, true, false]);
  });

  test('refused attempts do not consume the budget, and the wait rounds up to whole seconds', () => {
    let t = 0;
    const rl = createRateLimiter({ messages: 20, perSeconds: 60 }, () => t);
    for (let i = 0; i < 20; i++) expect(rl.take('u').ok).toBe(true);
    for (let i = 0; i < 50; i++) expect(rl.take('u')).toEqual({ ok: false, retryAfterSec: 3 });
    t = 2_001;
    expect(rl.take('u')).toEqual({ ok: false, retryAfterSec: 1 });
    t = 3_000;
    expect(rl.take('u')).toEqual({ ok: true });
  });

  test('a clock that goes backwards refills nothing', () => {
    let t = 10_000;
    const rl = createRateLimiter({ messages: 1, perSeconds: 10 }, () => t);
    expect(rl.take('u').ok).toBe(true);
    t = 0;
    expect(rl.take('u')).toEqual({ ok: false, retryAfterSec: 10 });
    t = 10_000; // back where it was: still no time has passed for the bucket
    expect(rl.take('u')).toEqual({ ok: false, retryAfterSec: 10 });
    t = 20_000;
    expect(rl.take('u')).toEqual({ ok: true });
  });

  test('memory is bounded by maxKeys', () => {
    const t = 0;
    const rl = createRateLimiter({ messages: 1, perSeconds: 60 }, () => t, 100);
    for (let i = 0; i < 10_000; i++) rl.take(`user${i}`);
    expect(rl.size).toBe(100);
    expect(rl.take('user9999').ok).toBe(false); // recent users are still limited
  });

  test('bad limits are refused with the key name', () => {
    expect(() => createRateLimiter({ messages: 0, perSeconds: 60 })).toThrow(/rateLimit.messages/);
    expect(() => createRateLimiter({ messages: 1, perSeconds: 0.5 })).toThrow(/rateLimit.perSeconds/);
  });

  test('the reply says the limit and the wait', () => {
    expect(rateLimitReply({ messages: 20, perSeconds: 60 }, 3)).toBe(
      'Slow down: Gatehouse takes at most 20 messages per 60 s from one person. Try again in 3 s.',
    );
  });
});

describe('isApprover', () => {
  test.each<[string, { id: string; roles?: string[] }, string[] | undefined, boolean]>([
    ['listed id', { id: '123' }, ['123'], true],
    ['unlisted id', { id: '124' }, ['123'], false],
    ['id prefix is not a match', { id: '12' }, ['123'], false],
    ['role match', { id: '9', roles: ['5678'] }, ['1234', 'role:5678'], true],
    ['other role', { id: '9', roles: ['5679'] }, ['role:5678'], false],
    ['no roles', { id: '9' }, ['role:5678'], false],
    ['a role entry never matches a user id', { id: 'role:5678' }, ['role:5678'], false],
    ['a role id is not a user id', { id: '5678' }, ['role:5678'], false],
    ['empty list', { id: '123' }, [], false],
    ['undefined list (nobody bound)', { id: '123' }, undefined, false],
    ['empty role entry', { id: '9', roles: [''] }, ['role:'], false],
  ])('%s', (_name, user, approvers, expected) => {
    expect(isApprover(user, approvers)).toBe(expected);
  });
});

test('approverConfigKey names the key an operator edits', () => {
  expect(approverConfigKey('ops', 'telegram')).toBe('agents.ops.approvers.telegram');
});

describe('createRefusalThrottle (issue 18: a stranger flood)', () => {
  test('the budget is per platform, refills 10 a minute, and a told stranger is not told again within the day', () => {
    let t = 0;
    const th = createRefusalThrottle({ repliesPerMinute: 10, strangerIntervalSeconds: 86_400 }, () => t);
    const told = (platform: string, from: number, n: number) =>
      Array.from({ length: n }, (_, i) => th.refuse(platform, `s${from + i}`, `s${from + i}`).reply).filter(Boolean).length;
    expect(told('telegram', 0, 100)).toBe(10);
    expect(told('slack', 0, 100)).toBe(10); // another platform has its own budget
    t += 30_000;
    expect(told('telegram', 100, 100)).toBe(5); // half a minute: half the budget back
    expect(th.refuse('telegram', 's0', 's0').reply).toBe(false); // told already today
    t += 86_400_000;
    expect(th.refuse('telegram', 's0', 's0').reply).toBe(true);
  });

  test('a flood line at the first unanswered refusal, then at most one a minute, with the counts since the last', () => {
    let t = 0;
    const limits = { repliesPerMinute: 2, strangerIntervalSeconds: 86_400 };
    const th = createRefusalThrottle(limits, () => t);
    const floods = [];
    for (let i = 0; i < 600; i++) {
      const v = th.refuse('discord', `s${i}`, `s${i}`);
      if (v.flood) floods.push({ at: t, ...v.flood });
      t += 500; // 600 strangers over 5 minutes
    }
    expect(floods.map((f) => f.at)).toEqual([1_000, 61_000, 121_000, 181_000, 241_000]);
    expect(floods[0]).toMatchObject({ refused: 3, told: 2, senders: 3 });
    expect(floods[1]).toMatchObject({ refused: 120, told: 2, senders: 120, windowMs: 60_000 });
    expect(floodLine(floods[1]!, limits)).toBe(
      'stranger flood on discord: 120 refused messages from 120 senders in the last 60 s, 2 told, 118 not answered (access.refusals.repliesPerMinute: 2, one per stranger every 86400 s)',
    );
  });

  test('repliesPerMinute 0: nobody is told, the flood is still reported', () => {
    const th = createRefusalThrottle({ repliesPerMinute: 0, strangerIntervalSeconds: 60 }, () => 0);
    const v = th.refuse('telegram', 'a', 'a');
    expect(v.reply).toBe(false);
    expect(v.flood).toMatchObject({ refused: 1, told: 0 });
  });
});
