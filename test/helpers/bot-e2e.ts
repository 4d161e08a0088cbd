/**
 * What a platform's end-to-end file sets up for each test, once: a temp folder with gatehouse.yaml, a
 * new store on the engine, the fake model answering from `queue`, and the bot started on the real
 * start path (bot/cli/index.ts startBot) with the platform's env, its output collected in `logged`.
 *
 * Use: `h = await BotE2e.start({ engine, prefix, yaml })` in beforeEach (after starting the fake
 * platform, or before: `boot` takes the platform's env), `h.boot({ DISCORD_TOKEN, ... })` in a
 * test, `await h.stopBot()`, close the fake platform, `await h.close()` in afterEach, then check
 * `h.logged` holds no secret.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBot, type RunningBot } from '../../bot/cli/index.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply } from '../fakes/anthropic.js';
import { type TestEngine, testStoreUrl } from './harness.js';

export interface BotE2eOptions {
  engine: TestEngine;
  /** The temp folder's name prefix, like 'gatehouse-discord-'. */
  prefix: string;
  /** gatehouse.yaml, given the test's folder. */
  yaml: (dir: string) => string;
}

export class BotE2e {
  /** Everything the bot wrote (stdout, stderr) and logged, in order. */
  logged = '';
  /** The bot `boot` started, until `stopBot`. */
  bot: RunningBot | undefined;
  /** The model's next replies, in order; '(no scripted reply)' when empty. */
  readonly queue: FakeReply[] = [];

  private constructor(
    readonly dir: string,
    /** This test's store: every boot of the test (a restart too) opens the same one. */
    readonly storeUrl: string,
    readonly model: FakeAnthropic,
  ) {}

  static async start(opts: BotE2eOptions): Promise<BotE2e> {
    const dir = mkdtempSync(join(tmpdir(), opts.prefix));
    const storeUrl = await testStoreUrl(opts.engine, dir);
    writeFileSync(join(dir, 'gatehouse.yaml'), opts.yaml(dir));
    const model = await startFakeAnthropic({ apiKey: 'test-key' });
    const h = new BotE2e(dir, storeUrl, model);
    model.setHandler(() => h.queue.shift() ?? { text: '(no scripted reply)' });
    return h;
  }

  /** The bot's env: the fake model, this test's config and store, any free HTTP port, then `platform`. */
  env(platform: Record<string, string>): Record<string, string> {
    return {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: this.model.url,
      GATEHOUSE_CONFIG: join(this.dir, 'gatehouse.yaml'),
      GATEHOUSE_STORE: this.storeUrl,
      GATEHOUSE_HTTP_PORT: '0',
      ...platform,
    };
  }

  /**
   * Starts the bot with `env(platform)`; its stdout and stderr go to `logged`, and so does its log
   * unless `log: false` (then only what it prints).
   */
  async boot(platform: Record<string, string>, opts: { log?: boolean } = {}): Promise<RunningBot> {
    const stderr = new PassThrough();
    const stdout = new PassThrough();
    for (const s of [stderr, stdout]) s.on('data', (c: Buffer) => (this.logged += c.toString()));
    const log = opts.log === false ? () => undefined : (level: string, msg: string) => (this.logged += `${level} ${msg}\n`);
    this.bot = await startBot({ env: this.env(platform), cwd: this.dir, stdout, stderr }, log);
    return this.bot;
  }

  async stopBot(): Promise<void> {
    await this.bot?.stop();
    this.bot = undefined;
  }

  /** Stops the bot (if still running) and the fake model, and removes the test's folder. */
  async close(): Promise<void> {
    await this.stopBot();
    await this.model.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
