/**
 * bot/config/env.ts: unknown GATEHOUSE_* names are refused with the closest known name; every GATEHOUSE_*
 * name the code reads is on the known list; secrets also come from NAME_FILE (bot/config/secret-files.ts).
 */
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GATEHOUSE_VARS, readEnv, SECRET_VARS, storeFromEnv } from '../../bot/config/env.js';
import { secretValues } from '../../bot/service/log.js';
import { collectSecrets } from '../../policies/secrets.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gh-env-names-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const KEY = { ANTHROPIC_API_KEY: 'sk-test' };
/** Deliberately wrong names, used to show the refusal. */
const MISSPELT = ['GATEHOUSE_STROE', 'GATEHOUSE_LOG_LEVL', 'GATEHOUSE_HTTP_PROT', 'GATEHOUSE_NOT_A_THING'];
const problemAt = (problems: Array<{ path: string; message: string }>, path: string) => problems.find((p) => p.path === path)?.message;

describe('GATEHOUSE_* names', () => {
  test('an unknown one is refused, naming it and the closest known name', () => {
    const { problems } = readEnv({ ...KEY, GATEHOUSE_STROE: 'sqlite://./x.sqlite', GATEHOUSE_LOG_LEVL: 'debug' }, dir);
    expect(problemAt(problems, 'GATEHOUSE_STROE')).toMatch(/^is not a variable Gatehouse reads \(a typo\?\) \(did you mean "GATEHOUSE_STORE"\?\)/);
    expect(problemAt(problems, 'GATEHOUSE_LOG_LEVL')).toMatch(/did you mean "GATEHOUSE_LOG_LEVEL"/);
  });

  test('every known one is accepted, and so is NAME_FILE of a secret one; an empty value is unset', () => {
    const env: Record<string, string> = { ...KEY, GATEHOUSE_NOT_A_THING: '' };
    for (const v of GATEHOUSE_VARS) env[v.name] = v.name === 'GATEHOUSE_STORE' ? 'sqlite://:memory:' : 'x';
    const { problems } = readEnv(env, dir);
    expect(problems.map((p) => p.path).filter((p) => p.startsWith('GATEHOUSE_') && /not a variable/.test(problemAt(problems, p) ?? ''))).toEqual([]);
  });

  test('test-only names (GATEHOUSE_TEST_*) are refused in production: they are not knobs', () => {
    const { problems } = readEnv({ ...KEY, GATEHOUSE_TEST_POSTGRES_URL: 'postgres://u:p@h/db' }, dir);
    expect(problemAt(problems, 'GATEHOUSE_TEST_POSTGRES_URL')).toMatch(/not a variable Gatehouse reads/);
    // The value (it has a password) is never in the message.
    expect(JSON.stringify(problems)).not.toContain('u:p@');
  });

  /** GATEHOUSE_* words in the files under `dirs` (and `extra` files) that are not on the known list. */
  const unknownNamesIn = (dirs: string[], extra: string[] = []): string[] => {
    const files: string[] = [...extra.map((f) => join(root, f))];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.(ts|mjs|js|ya?ml|md|service|json)$/.test(e.name) || e.name === 'Dockerfile') files.push(p);
      }
    };
    for (const d of dirs) walk(join(root, d));
    const used = new Set<string>();
    // Not followed by `_*`: "GATEHOUSE_TEST_*" in prose is a family, not a name.
    for (const f of files) for (const m of readFileSync(f, 'utf8').matchAll(/GATEHOUSE_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_*])/g)) used.add(m[0]);
    // Error codes spelled like variables (agent/store/sqlite) and this list's own identifier: never read from the environment.
    // And the misspellings that tests and docs/troubleshooting.md show being refused.
    const notVariables = new Set(['GATEHOUSE_LOCKED', 'GATEHOUSE_PRECONDITION', 'GATEHOUSE_VARS', ...MISSPELT]);
    const known = new Set(GATEHOUSE_VARS.flatMap((v) => (v.secret ? [v.name, `${v.name}_FILE`] : [v.name])));
    return [...used].filter((n) => !notVariables.has(n) && !known.has(n)).sort();
  };

  test('every GATEHOUSE_* name the product reads or documents is on the list (the code, README, .env.example, deploy files, docs)', () => {
    expect(unknownNamesIn(['bot', 'agent', 'adapters', 'policies', 'deploy', 'docs', 'bin'], ['README.md', '.env.example', 'gatehouse.example.yaml'])).toEqual(
      [],
    );
  });

  test('the names only tests and benches use are these (each refused by a production start; tests hand the CLI a clean environment)', () => {
    // A new one here needs a decision: a documented knob goes on GATEHOUSE_VARS, a test-only one here.
    expect(unknownNamesIn(['test', 'bench'])).toEqual(
      [
        'GATEHOUSE_E2E_STORE',
        'GATEHOUSE_TEST_CANARY',
        'GATEHOUSE_TEST_KEEP',
        'GATEHOUSE_TEST_KILL_ROUNDS',
        'GATEHOUSE_TEST_PG_RUN_DIR',
        'GATEHOUSE_TEST_POSTGRES_URL',
      ].sort(),
    );
  });

  test('platform names get the suggestion too, and their secrets NAME_FILE', () => {
    const { problems } = readEnv({ ...KEY, TELEGRAM_BOT_TOKN: '1:a', TELEGRAM_BOT_TOKEN_FILE: join(dir, 'missing') }, dir);
    expect(problemAt(problems, 'TELEGRAM_BOT_TOKN')).toMatch(/did you mean "TELEGRAM_BOT_TOKEN"/);
    expect(problemAt(problems, 'TELEGRAM_BOT_TOKEN_FILE')).toMatch(/cannot read .*missing \(no such file\)/);
  });
});

describe('NAME_FILE', () => {
  test('every secret variable reads its file, one trailing newline trimmed; the value reaches the secret registries', () => {
    expect(SECRET_VARS).toEqual(
      expect.arrayContaining([
        'ANTHROPIC_API_KEY',
        'TELEGRAM_BOT_TOKEN',
        'TELEGRAM_WEBHOOK_SECRET',
        'SLACK_BOT_TOKEN',
        'SLACK_APP_TOKEN',
        'SLACK_SIGNING_SECRET',
        'DISCORD_TOKEN',
        'GATEHOUSE_STORE',
      ]),
    );
    const write = (name: string, text: string) => {
      const f = join(dir, name);
      writeFileSync(f, text, { mode: 0o600 });
      return f;
    };
    const env: Record<string, string | undefined> = {
      ANTHROPIC_API_KEY_FILE: write('key', 'sk-ant-from-a-file-1234567890\n'),
      TELEGRAM_BOT_TOKEN_FILE: write('tg', '123456:AAfromfile_abcdefghijklmnopqrstuvwxyz\r\n'),
      // Only one newline goes: a value that really ends in a newline keeps the rest.
      SLACK_BOT_TOKEN_FILE: write('slack', 'xoxb-1-2-fromfile\n'),
      SLACK_APP_TOKEN_FILE: write('app', 'xapp-1-A-3-fromfile'),
      DISCORD_TOKEN_FILE: write('dc', 'discord-token-from-file\n\n'),
      GATEHOUSE_STORE_FILE: write('store', 'postgres://gh:pw-from-file@db.example:5432/gh\n'),
    };
    const { settings, problems } = readEnv(env, dir);
    expect(problems.filter((p) => p.path !== 'DISCORD_TOKEN')).toEqual([]);
    expect(settings.anthropic.apiKey).toBe('sk-ant-from-a-file-1234567890');
    expect(settings.platforms.telegram?.token).toBe('123456:AAfromfile_abcdefghijklmnopqrstuvwxyz');
    expect(settings.platforms.slack?.botToken).toBe('xoxb-1-2-fromfile');
    expect(settings.platforms.slack?.appToken).toBe('xapp-1-A-3-fromfile');
    expect(env.DISCORD_TOKEN).toBe('discord-token-from-file\n');
    expect(settings.store.kind).toBe('postgres');
    // NAME is now in env (process.env in production) and NAME_FILE gone: read again, nothing conflicts.
    expect(Object.keys(env).filter((k) => k.endsWith('_FILE'))).toEqual([]);
    expect(readEnv(env, dir).problems.filter((p) => p.path !== 'DISCORD_TOKEN')).toEqual([]);
    // The log scrub and the command/web secret registry know the file's values.
    expect(secretValues(env)).toEqual(expect.arrayContaining(['sk-ant-from-a-file-1234567890', 'pw-from-file']));
    const own = collectSecrets(env, []).own;
    expect(own).toEqual(expect.arrayContaining(['sk-ant-from-a-file-1234567890', '123456:AAfromfile_abcdefghijklmnopqrstuvwxyz']));
  });

  test('NAME and NAME_FILE both set is an error naming both; nothing is read', () => {
    const f = join(dir, 'key');
    writeFileSync(f, 'sk-from-file-should-not-win\n');
    const env = { ANTHROPIC_API_KEY: 'sk-direct', ANTHROPIC_API_KEY_FILE: f };
    const { problems, settings } = readEnv(env, dir);
    expect(problemAt(problems, 'ANTHROPIC_API_KEY, ANTHROPIC_API_KEY_FILE')).toMatch(/both are set; keep one/);
    expect(settings.anthropic.apiKey).toBe('sk-direct');
  });

  test('an unreadable, empty or huge file is an error naming the variable and the path, never the content', () => {
    const secret = 'sk-ant-very-secret-value-0987654321';
    const locked = join(dir, 'locked');
    writeFileSync(locked, secret);
    chmodSync(locked, 0o000);
    const empty = join(dir, 'empty');
    writeFileSync(empty, '\n');
    const big = join(dir, 'big');
    writeFileSync(big, secret.repeat(5000));
    const cases: Array<[string, RegExp]> = [
      [join(dir, 'nope'), /cannot read .*nope \(no such file\)/],
      [dir, /cannot read .* \(it is a folder\)/],
      [empty, /empty is empty; put the value of ANTHROPIC_API_KEY in it/],
      [big, /too big for a secret/],
    ];
    // root reads a 0000 file anyway: only a non-root run can check the permission case.
    if (process.getuid?.() !== 0) cases.push([locked, /cannot read .*locked \(permission denied/]);
    for (const [path, message] of cases) {
      const { problems } = readEnv({ ANTHROPIC_API_KEY_FILE: path }, dir);
      expect(problemAt(problems, 'ANTHROPIC_API_KEY_FILE')).toMatch(message);
      expect(JSON.stringify(problems)).not.toContain(secret);
    }
    expect(statSync(locked).mode & 0o777).toBe(0);
  });

  test("gatehouse backup's store-only reading takes GATEHOUSE_STORE_FILE too", () => {
    const f = join(dir, 'store');
    writeFileSync(f, `sqlite://${join(dir, 's.sqlite')}\n`);
    const { store, problems } = storeFromEnv({ GATEHOUSE_STORE_FILE: f }, dir);
    expect(problems).toEqual([]);
    expect(store).toMatchObject({ kind: 'sqlite', path: join(dir, 's.sqlite') });
  });
});
