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
  ])("never un-hides Gatehouse's own %s, even when allowlisted", (name) => {
    expect(isOwnName(name)).toBe(true);
    const out = sanitizeEnv({ [name]: 'postgres://u:p@h/db-or-secret' }, [name]);
    expect(out).toEqual({});
  });

  it('an allowlist entry un-hides a non-own secret name or a URL with a password on purpose', () => {
    const env = { DATABASE_URL: 'postgres://u:p@h/db', GITHUB_PAT: 'ghp_x', DB_PWD: 'pw' };
    expect(sanitizeEnv(env, ['DATABASE_URL', 'GITHUB_PAT'])).toEqual({ DATABASE_URL: 'postgres://u:p@h/db', GITHUB_PAT: 'ghp_x' });
  });
});

describe("issue 18: the bot's own secret values are scrubbed by VALUE, whatever the name", () => {
  const KEY = 'sk-ant-api03-Zr8QmT2vXk9LpW4sY7nB3cJ6hF1dG5aE0uIo';
  const TG = '7012345678:AAHk2LmN9pQrS4tUvW6xYz8aBcDeFgHiJk';
  const ATTACH = 'a3f9c2e18b7d4056a3f9c2e18b7d4056a3f9c2e18b7d4056';
  const base = { PATH: '/bin', ANTHROPIC_API_KEY: KEY, TELEGRAM_BOT_TOKEN: TG, GATEHOUSE_STORE: 'postgres://gh:St0re-Passw0rd-9@db/gh' };

  it.each([
    ['CANARY_EXTRA', KEY],
    ['NOTES', `my key is ${KEY} ok`],
    ['B64', Buffer.from(KEY).toString('base64')],
    ['HEXED', Buffer.from(TG).toString('hex')],
    ['UPPER', TG.toUpperCase()],
    ['ENCODED', encodeURIComponent(`x=${KEY}`).replace(/-/g, '%2D')],
    ['MIRROR', 'St0re-Passw0rd-9'],
    ['ATTACH_COPY', ATTACH],
  ])("drops %s (a copy of one of the bot's secrets), even when allowlisted", (name, value) => {
    const env = { ...base, [name]: value };
    expect(sanitizeEnv(env, [], [ATTACH])).toEqual({ PATH: '/bin' });
    expect(sanitizeEnv(env, [name], [ATTACH])).toEqual({ PATH: '/bin' });
  });

  it('control: under the old by-name rule every one of those copies passes', () => {
    for (const value of [KEY, Buffer.from(KEY).toString('base64'), TG.toUpperCase(), 'St0re-Passw0rd-9', ATTACH]) {
      expect(isSecretName('CANARY_EXTRA')).toBe(false);
      expect(/[a-z][a-z0-9+.-]*:\/\/[^\s/?#@:]*:[^\s/?#@]*@/i.test(value)).toBe(false);
    }
  });

  it.each([
    ['SENTRY_DSN', 'https://abc@o1.ingest.sentry.io/1'],
    ['WEBHOOK_URL', 'https://example.com/hook/123'],
    ['DB_PW', 'hunter22'],
    ['PW', 'hunter22'],
    ['ADMIN_PW2', 'hunter22'],
    ['SOME_JWT', 'x'],
    ['BEARER', 'x'],
    ['HMAC_KEY_B', 'x'],
  ])('drops %s by name', (name, value) => {
    expect(sanitizeEnv({ [name]: value, PATH: '/bin' }, [])).toEqual({ PATH: '/bin' });
    expect(sanitizeEnv({ [name]: value }, [name])).toEqual({ [name]: value });
  });

  it.each([
    ['PEM', '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----'],
    ['RSA', '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----'],
    ['ID', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'],
    ['OPENAI', 'sk-proj-abcdefghijklmnopqrstuvwxyz012345'],
    ['SLACKISH', 'xoxb-1234567890-abcdefghijklmnop'],
    ['GH', 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'],
    ['AWSID', 'AKIAIOSFODNN7EXAMPLE'],
    ['GKEY', 'AIzaSyA-abcdefghijklmnopqrstuvwxyz01234'],
    ['TG_COPY', '123456789:AAHk2LmN9pQrS4tUvW6xYz8aBcDeFgHiJk'],
    ['HOOK', 'https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX'],
    ['DSN', 'https://0123456789abcdef0123456789abcdef@o0.ingest.sentry.io/42'],
  ])('drops %s (a value shaped like a credential) unless allowlisted', (name, value) => {
    expect(isSecretValue(value)).toBe(true);
    expect(sanitizeEnv({ [name]: value, PATH: '/bin' }, [])).toEqual({ PATH: '/bin' });
    expect(sanitizeEnv({ [name]: value }, [name])).toEqual({ [name]: value });
  });

  it.each([
    ['CERT', '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----'],
    ['PWA_MODE', 'on'],
    ['PATHS', '/a:/b'],
    ['TASK', 'ask-ant-colony'],
    ['SHA', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
  ])('keeps %s=%s', (name, value) => {
    expect(sanitizeEnv({ ...base, [name]: value }, [])).toEqual({ PATH: '/bin', [name]: value });
  });

  it("another secret variable's value copied elsewhere is dropped, unless that variable is allowlisted", () => {
    const env = { PATH: '/bin', GITHUB_TOKEN: 'gho-like-Abc123Def456Ghi789', COPY: 'gho-like-Abc123Def456Ghi789' };
    expect(sanitizeEnv(env, [])).toEqual({ PATH: '/bin' });
    expect(sanitizeEnv(env, ['COPY'])).toEqual({ PATH: '/bin', COPY: env.COPY });
    expect(sanitizeEnv(env, ['GITHUB_TOKEN'])).toEqual({ PATH: '/bin', GITHUB_TOKEN: env.GITHUB_TOKEN, COPY: env.COPY });
  });

  it('a value that only points at a secret (a path, a socket) does not make copies of it secret', () => {
    const env = { PATH: '/bin', GOOGLE_APPLICATION_CREDENTIALS: '/etc/gcp/creds.json', CONFIG_FILE: '/etc/gcp/creds.json' };
    expect(sanitizeEnv(env, [])).toEqual({ PATH: '/bin', CONFIG_FILE: '/etc/gcp/creds.json' });
  });

  it('run-time secrets come from the registry by default', async () => {
    const { registerOwnSecret } = await import('../../policies/secrets.js');
    const forget = registerOwnSecret(ATTACH);
    try {
      expect(sanitizeEnv({ PATH: '/bin', X: ATTACH }, ['X'])).toEqual({ PATH: '/bin' });
    } finally {
      forget();
    }
    expect(sanitizeEnv({ PATH: '/bin', X: ATTACH }, [])).toEqual({ PATH: '/bin', X: ATTACH });
  });
});

describe('issue 18: addresses are not secrets', () => {
  it('a plain URL under an API name is hidden from commands by name, but copies of it are not secrets', async () => {
    const { collectSecrets } = await import('../../policies/secrets.js');
    const env = { SLACK_API_URL: 'https://slack.example.com/api/', API_BASE: 'https://api.example.com/v1', DOCS: 'see https://api.example.com/v1' };
    expect(collectSecrets(env, [], [])).toEqual({ own: [], other: [] });
    expect(sanitizeEnv(env, [], [])).toEqual({ DOCS: env.DOCS });
  });
});
