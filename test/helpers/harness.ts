/**
 * End-to-end harness: a real Gatehouse (config from YAML, a SQLite or PostgreSQL store, the real
 * Anthropic SDK client) against the fake Anthropic server, with a RecordingAdapter (or any adapters)
 * on the seam.
 *
 * Model replies are scripted in order with `script(...)`; classifier requests (recognised by the
 * classifier's system prompt) are answered separately by `classifierReply`, so the two never steal
 * each other's replies. `restart()` builds a new Gatehouse on the same store (the same SQLite file
 * or the same PostgreSQL database), as a process restart. Nothing here reads the store's files: the
 * folder `dir` holds gatehouse.yaml, the workspace and (on SQLite) the store, on either engine.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Adapter } from '../../adapters/types.js';
import { createAnthropicModel } from '../../agent/model/anthropic.js';
import { builtinToolNames } from '../../agent/tools/catalog.js';
import type { AnyTool } from '../../agent/tools/types.js';
import { createGatehouse, type Gatehouse, type Log } from '../../bot/service/app.js';
import type { RunClock } from '../../agent/run/limits.js';
import { loadConfig, type Config } from '../../bot/config/index.js';
import { openStore } from '../../bot/service/storage.js';
import type { Store } from '../../agent/store/types.js';
import { CLASSIFIER_SYSTEM_PROMPT } from '../../policies/classifier.js';
import { startFakeAnthropic, type FakeAnthropic, type FakeReply, type RecordedRequest } from '../fakes/anthropic.js';
import { RecordingAdapter } from './recording-adapter.js';

export interface HarnessOptions {
  /** gatehouse.yaml content; `{{workspace}}` is replaced by the temp workspace path. */
  yaml?: string;
  extraTools?: AnyTool[];
  /** Build adapters other than the recording one (e.g. the console adapter). */
  adapters?: (h: { dir: string }) => Adapter[];
  classifierTimeoutMs?: number;
  /** The clock of run deadlines (test/helpers/fake-clock.ts); default the real one. */
  runClock?: RunClock;
  env?: Record<string, string>;
  /** Receives the log (default: dropped); audit events arrive as info lines with their fields. */
  log?: Log;
  /**
   * The store's engine (default sqlite): 'postgres' runs the same test on a PostgreSQL database from
   * test/helpers/postgres.ts `testPostgresUrl()`.
   */
  engine?: TestEngine;
}

export type TestEngine = 'sqlite' | 'postgres';

/** The engines every end-to-end file that goes through the store runs on. */
export const ENGINES: readonly TestEngine[] = ['sqlite', 'postgres'];

/**
 * A NEW store's GATEHOUSE_STORE for a test on `engine`: a file in the test's folder `dir`, or a
 * fresh PostgreSQL database. Call it once per test and keep the URL (a second call on postgres is
 * another, empty database).
 */
export async function testStoreUrl(engine: TestEngine, dir: string): Promise<string> {
  if (engine === 'sqlite') return `sqlite://${join(dir, 'store.sqlite')}`;
  // Loaded on first use: a SQLite-only test file never loads the PostgreSQL engine (nor pg).
  const { testPostgresUrl } = await import('./postgres.js');
  return testPostgresUrl();
}

/** `Harness.start` with the engine set, for a file parametrized with `describe.each(ENGINES)`. */
export function harnessOn(engine: TestEngine): { start(opts?: HarnessOptions): Promise<Harness> } {
  return { start: (opts = {}) => Harness.start({ ...opts, engine }) };
}

/** The classifier's requests are recognised by its system prompt. */
function isClassifierRequest(req: RecordedRequest): boolean {
  return JSON.stringify((req.body as { system?: unknown }).system ?? '').includes(CLASSIFIER_SYSTEM_PROMPT.slice(0, 40));
}

export const DEFAULT_YAML = `
agents:
  default:
    model: claude-sonnet-5-5
    tools: [read_file, ls, write_file, edit_file, ask_user_question, execute_command, get_time]
    tier: read-only
    workspace: "{{workspace}}"
    approvers: { console: [local] }
    approvalTimeoutMs: 60000
`;

/** A one-agent gatehouse.yaml: `agent` lines are YAML under agents.default (model and workspace are set). */
export function agentYaml(...lines: string[]): string {
  return ['agents:', '  default:', '    model: claude-sonnet-5-5', '    workspace: "{{workspace}}"', ...lines.map((l) => `    ${l}`)].join('\n') + '\n';
}

export class Harness {
  readonly adapter = new RecordingAdapter();
  readonly mainQueue: Array<FakeReply | ((req: RecordedRequest) => FakeReply)> = [];
  classifierReply: FakeReply | ((req: RecordedRequest) => FakeReply) = { text: 'high-risk' };
  gh!: Gatehouse;
  config!: Config;
  /** The store's repositories (what the runner reads and writes). */
  store!: Store;
  adapters: Adapter[] = [];
  /** Store errors (expected only from an instance after its simulated crash). */
  storeErrors: string[] = [];
  /** GATEHOUSE_STORE, chosen once: every boot (the first and each restart) opens this same store. */
  storeUrl = '';

  private constructor(
    readonly fake: FakeAnthropic,
    readonly dir: string,
    readonly workspace: string,
    private readonly opts: HarnessOptions,
  ) {}

  static async start(opts: HarnessOptions = {}): Promise<Harness> {
    const fake = await startFakeAnthropic({ apiKey: 'test-key' });
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-test-'));
    // mkdtemp makes it 0700: the sandbox user (tests running as root) must be able to enter it to reach
    // the workspace; 0711 lets it pass through without listing.
    chmodSync(dir, 0o711);
    const workspace = join(dir, 'workspace');
    const h = new Harness(fake, dir, workspace, opts);
    fake.setHandler((req) => {
      const next = isClassifierRequest(req) ? h.classifierReply : h.mainQueue.shift();
      if (next === undefined) return { text: '(no scripted reply)' };
      return typeof next === 'function' ? next(req) : next;
    });
    writeFileSync(join(dir, 'gatehouse.yaml'), (opts.yaml ?? DEFAULT_YAML).replaceAll('{{workspace}}', workspace));
    h.storeUrl = await testStoreUrl(opts.engine ?? 'sqlite', dir);
    await h.boot();
    return h;
  }

  private async boot(): Promise<void> {
    const env = {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: this.fake.url,
      GATEHOUSE_STORE: this.storeUrl,
      ...this.opts.env,
    };
    this.config = loadConfig({ env, cwd: this.dir, knownTools: [...builtinToolNames(), ...(this.opts.extraTools ?? []).map((t) => t.name)] });
    // Exclusive, as `gatehouse serve` opens it: the app then trusts its caches as in production.
    this.store = await openStore(this.config.store, { exclusive: true, log: (_level, m) => this.storeErrors.push(m) });
    const model = createAnthropicModel({ apiKey: 'test-key', baseURL: this.fake.url, retryBaseMs: 5, maxRetryWaitMs: 2000 });
    this.adapters = this.opts.adapters ? this.opts.adapters({ dir: this.dir }) : [this.adapter];
    this.gh = await createGatehouse({
      config: this.config,
      store: this.store,
      model,
      adapters: this.adapters,
      log: this.opts.log ?? (() => undefined),
      ...(this.opts.extraTools ? { extraTools: this.opts.extraTools } : {}),
      ...(this.opts.classifierTimeoutMs !== undefined ? { classifierTimeoutMs: this.opts.classifierTimeoutMs } : {}),
      ...(this.opts.runClock ? { runClock: this.opts.runClock } : {}),
    });
    await this.gh.start();
  }

  /** Queues main-model replies, in order. */
  script(...replies: Array<FakeReply | ((req: RecordedRequest) => FakeReply)>): void {
    this.mainQueue.push(...replies);
  }

  /** Requests that were not the classifier's. */
  modelRequests(): RecordedRequest[] {
    return this.fake.requests.filter((r) => !isClassifierRequest(r));
  }

  classifierRequests(): RecordedRequest[] {
    return this.fake.requests.filter(isClassifierRequest);
  }

  /** Simulates a crash and a restart: the old instance stops, a new one opens the same store. */
  async restart(): Promise<void> {
    // A crash: the store goes first, so nothing the old instance does afterwards is persisted.
    await this.store.close();
    await this.gh.stop({ graceMs: 0 });
    (this as { adapter: RecordingAdapter }).adapter = new RecordingAdapter();
    await this.boot();
  }

  async close(): Promise<void> {
    await this.gh.stop({ graceMs: 2000 });
    await this.store.close();
    await this.fake.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The shared wait (test/helpers/wait.ts), exported here too for the tests that import it from the harness. */
export { waitFor } from './wait.js';
