import { isOwnName, isSecretName, isSecretValue, sanitizeEnv, SECRET_NAME_PATTERN } from '../../policies/env.js';

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

describe('the scrubbing closes classes, not examples (issue 9, section 4)', () => {
  // Each row: a name, a value, and why it must not reach a command.
  const dropped: Array<[string, string]> = [
    ['PASSWD', 'hunter2'],
    ['DB_PASSWD', 'hunter2'],
    ['MYSQL_PASS', 'hunter2'],
    ['SMTP_PASSWORD', 'hunter2'],
    ['PGPASSFILE', '/home/bot/.pgpass'],
    ['DB_PWD', 'hunter2'],
    ['MYSQL_PWD', 'hunter2'],
    ['redis_pwd', 'hunter2'],
    ['GITHUB_PAT', 'ghp_x'],
    ['GH_PAT', 'ghp_x'],
    ['PAT_GITLAB', 'glpat-x'],
    ['CLIENT_SECRET_V2', 's'],
    ['AZURE_CREDENTIALS', 'c'],
    ['DEPLOY_PRIVATE_KEY', '-----BEGIN'],
    ['SIGNING_PRIVATE', 'p'],
    ['COOKIE', 'sid=abc'],
    ['AUTH_COOKIE_JAR', 'x'],
    ['SESSION', 'abc'],
    ['SESSION_ID', 'abc'],
    ['GATEHOUSE_STORE', 'sqlite:///data/gatehouse.db'],
    ['GATEHOUSE_CONFIG', '/etc/gatehouse.yaml'],
    ['gatehouse_anything', 'x'],
    ['ANTHROPIC_BASE_URL', 'http://127.0.0.1:9999'],
    ['TELEGRAM_WEBHOOK_URL', 'https://bot.example'],
    ['SLACK_CHANNEL', 'C1'],
    ['DISCORD_GUILD', '1'],
    // A password inside a URL value, whatever the name says.
    ['DATABASE_URL', 'postgres://app:s3cret@db.internal:5432/app'],
    ['REDIS_URL', 'redis://:s3cret@cache:6379/0'],
    ['MONGO', 'mongodb+srv://u:p@cluster0.example.net/db'],
    ['http_proxy', 'http://user:pw@proxy.corp:3128'],
    ['HTTPS_PROXY', 'https://user:pw@proxy.corp:3128'],
    ['UPSTREAM', 'amqp://guest:guest@rabbit/vhost'],
    ['CONN', 'jdbc:postgresql://db/x then https://a:b@c'],
  ];
  const survive: Array<[string, string]> = [
    ['PATH', '/usr/local/bin:/usr/bin:/bin'],
    ['HOME', '/home/bot'],
    ['LANG', 'C.UTF-8'],
    ['LC_ALL', 'C.UTF-8'],
    ['TERM', 'xterm-256color'],
    ['PWD', '/work/ws'],
    ['OLDPWD', '/work'],
    ['USER', 'bot'],
    ['SHELL', '/bin/bash'],
    ['TZ', 'UTC'],
    ['NODE_ENV', 'production'],
    ['EDITOR', 'vim'],
    ['PATCH_LEVEL', '3'],
    ['MANPATH', '/usr/share/man'],
    ['PYTHONPATH', '/opt/lib'],
    ['http_proxy', 'http://proxy.corp:3128'],
    ['DATABASE_URL', 'postgres://app@db.internal:5432/app'],
    ['HOMEPAGE', 'https://example.com/a:b@c'],
    ['NOTES', 'mail me at a@b.c, port 80:90'],
  ];

  it.each(dropped)('drops %s=%s', (name, value) => {
    const out = sanitizeEnv({ [name]: value, PATH: '/bin' }, []);
    expect(out).toEqual({ PATH: '/bin' });
  });

  it.each(survive)('keeps %s=%s', (name, value) => {
    const out = sanitizeEnv({ [name]: value }, []);
    expect(out).toEqual({ [name]: value });
    expect(isSecretName(name)).toBe(false);
    expect(isSecretValue(value)).toBe(false);
  });

  it.each([
    'GATEHOUSE_STORE',
    'gatehouse_store',
    'ANTHROPIC_API_KEY',
    'ANTHROPIC_BASE_URL',
    'TELEGRAM_BOT_TOKEN',
    'TELEGRAM_WEBHOOK_SECRET',
    'SLACK_SIGNING_SECRET',
    'DISCORD_TOKEN',
    'SSH_AUTH_SOCK',
  ])('never un-hides Gatehouse\'s own %s, even when allowlisted', (name) => {
    expect(isOwnName(name)).toBe(true);
    const out = sanitizeEnv({ [name]: 'postgres://u:p@h/db-or-secret' }, [name]);
    expect(out).toEqual({});
  });

  it('an allowlist entry un-hides a non-own secret name or a URL with a password on purpose', () => {
    const env = { DATABASE_URL: 'postgres://u:p@h/db', GITHUB_PAT: 'ghp_x', DB_PWD: 'pw' };
    expect(sanitizeEnv(env, ['DATABASE_URL', 'GITHUB_PAT'])).toEqual({ DATABASE_URL: 'postgres://u:p@h/db', GITHUB_PAT: 'ghp_x' });
  });
});
