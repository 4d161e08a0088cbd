import { isSecretName, sanitizeEnv, SECRET_NAME_PATTERN } from '../../policies/env.js';

describe('isSecretName', () => {
  it.each([
    'ANTHROPIC_API_KEY',
    'TELEGRAM_BOT_TOKEN',
    'SLACK_BOT_TOKEN',
    'SLACK_APP_TOKEN',
    'SLACK_SIGNING_SECRET',
    'DISCORD_TOKEN',
    'AWS_SECRET_ACCESS_KEY',
    'AWS_ACCESS_KEY_ID',
    'GITHUB_TOKEN',
    'PGPASSWORD',
    'GOOGLE_APPLICATION_CREDENTIALS',
    'NPM_CONFIG__AUTH',
    'openai_api_key',
    'Db_Password',
    'SSH_AUTH_SOCK',
    'SSH_AGENT_PID',
    'SSH_CONNECTION',
    'ssh_tty',
  ])('treats %s as secret', (name) => {
    expect(isSecretName(name)).toBe(true);
  });

  it.each(['PATH', 'HOME', 'LANG', 'NODE_ENV', 'TERM', 'PWD', 'USER', 'XSSH_NOT_PREFIX', 'TZ'])('passes %s', (name) => {
    expect(isSecretName(name)).toBe(false);
  });

  it('exports the documented pattern', () => {
    expect(SECRET_NAME_PATTERN.test('my_credential_file')).toBe(true);
  });
});

describe('sanitizeEnv', () => {
  const env: Record<string, string | undefined> = {
    PATH: '/usr/bin:/bin',
    HOME: '/home/bot',
    ANTHROPIC_API_KEY: 'sk-ant-secret',
    TELEGRAM_BOT_TOKEN: '123456:tg-secret',
    SLACK_BOT_TOKEN: 'xoxb-secret',
    SLACK_SIGNING_SECRET: 'slack-signing-secret',
    DISCORD_TOKEN: 'discord-secret',
    DEPLOY_TOKEN: 'deploy-value',
    SSH_AUTH_SOCK: '/tmp/ssh-agent.sock',
    EMPTY: '',
    UNSET: undefined,
  };

  it('removes every platform credential and SSH_* while keeping ordinary names', () => {
    const out = sanitizeEnv(env, []);
    expect(out).toEqual({ PATH: '/usr/bin:/bin', HOME: '/home/bot', EMPTY: '' });
    const values = Object.values(out).join('\n');
    for (const secret of ['sk-ant-secret', 'tg-secret', 'xoxb-secret', 'slack-signing-secret', 'discord-secret']) {
      expect(values).not.toContain(secret);
    }
  });

  it('un-hides an allowlisted name that exists, with its own value', () => {
    const out = sanitizeEnv(env, ['DEPLOY_TOKEN']);
    expect(out.DEPLOY_TOKEN).toBe('deploy-value');
    expect(out.ANTHROPIC_API_KEY).toBeUndefined();
  });

  it('never invents a value for an allowlisted name that is not set', () => {
    const out = sanitizeEnv(env, ['NOT_SET_TOKEN', 'UNSET']);
    expect(Object.keys(out)).not.toContain('NOT_SET_TOKEN');
    expect(Object.keys(out)).not.toContain('UNSET');
  });

  it('never un-hides SSH_*, whatever the allowlist says', () => {
    const out = sanitizeEnv({ ...env, ssh_lower: 'x' }, ['SSH_AUTH_SOCK', 'ssh_lower']);
    expect(out.SSH_AUTH_SOCK).toBeUndefined();
    expect(out.ssh_lower).toBeUndefined();
  });

  it('matches allowlist entries by exact name only', () => {
    const out = sanitizeEnv(env, ['deploy_token', 'DEPLOY_', 'TOKEN']);
    expect(out.DEPLOY_TOKEN).toBeUndefined();
  });

  it('drops undefined values and does not mutate its input', () => {
    const input = { ...env };
    const out = sanitizeEnv(input, ['DEPLOY_TOKEN']);
    expect('UNSET' in out).toBe(false);
    expect(input).toEqual(env);
  });

  it('keeps a name like __proto__ as data, not as the prototype', () => {
    const hostile = JSON.parse('{"__proto__": "x", "PATH": "/bin"}') as Record<string, string>;
    const out = sanitizeEnv(hostile, []);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toBe('x');
  });
});
