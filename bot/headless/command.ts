/**
 * `gatehouse run`: one message to an agent, for scripts, CI and home-made bridges.
 *
 *   gatehouse run [--agent NAME] [--conversation KEY] [--json] [--events CATS] [--interactive-stdin]
 *                 [--approval-policy read-only|low-risk|high-risk] [--timeout SECONDS] [--with-image MODEL] [--no-stream] [--] "message"
 *
 * Contract:
 * - stdout carries the result and nothing else: with --json exactly one JSON object
 *   `{ok, answer?, error?, costUSD, costKnown, usage, conversation, declined, subagents?}` and a newline (`declined`:
 *   `[{tool, reason}]`, the calls the gate or an approver did not let run); without it, the answer
 *   text. Logs, prompts and events go to stderr.
 * - Attached to a service whose loaded gatehouse.yaml is not the file on disk now (edited, created or
 *   removed since its start or last reload), a note on stderr says so and how to apply it.
 * - Exit 0: answered. 1: the run failed (model error, timeout, stopped). 2: usage or config error.
 * - The message is the arguments after the options (joined by spaces), or stdin when there are none
 *   and stdin is not used for answers.
 * - --events CATS (comma list of tools, text, reasoning, usage, approval, question, all): NDJSON on
 *   stderr, one event a line; the model's streamed text as `text_start` {runId, segment} once per
 *   model reply, then `text_chunk` {runId, segment, delta}; `error` events are always written. String fields longer than
 *   EVENT_STRING_MAX (2000) characters are cut (marked `…[cut N chars]`), except in question events
 *   (`question_asked`, `user_input_required`), which are never cut. `reasoning`: the extended
 *   thinking of an agent with `thinking`, as `thinking_start` {runId, segment} once per model reply,
 *   then `thinking_chunk` {runId, segment, delta} (whole blocks after each reply with --no-stream).
 * - --no-stream: the model's replies come whole (no streamed request, no text deltas).
 * - --with-image MODEL: every agent's `companions["analyze:image"]` is that one model for this run
 *   (in-process runs only: with a service running it is a usage error, exit 2). --with-audio and
 *   --with-video are usage errors: there is no audio or video companion kind yet.
 * - Interactive when --interactive-stdin is given, or stdin is a terminal and CI is not "true".
 *   With --interactive-stdin, `user_input_required` / `approval_required` lines are written to stderr
 *   whatever --events says, and answered by JSON lines on stdin:
 *     {"type":"user_input_response","requestId":"…","value":"<suggestion value or typed answer>"}
 *     {"type":"approval_response","requestId":"…","value":"approve"|"always"|"deny"|"<option id>"}
 *   A line that does not parse gets an `error` event and changes nothing. An empty value is no answer;
 *   so is every open or later request once stdin has ended.
 *   On a terminal without the flag, a numbered prompt on stderr instead.
 * - When a service runs on this machine (./attach.ts finds its socket and token in the data folder),
 *   the run goes through it; otherwise it runs in this process on the same store.
 */
import { createInterface, type Interface } from 'node:readline';
import type { Readable } from 'node:stream';
import { TIERS } from '../../policies/tiers.js';
import { dirname, resolve } from 'node:path';
import type { CliIO } from '../cli/io.js';
import type { Config } from '../config/index.js';
import type { CompanionKind } from '../../agent/model/companions.js';
import { attachRespond, attachRun, AttachUnavailable, findService } from './attach.js';
import type { HeadlessResponse, HeadlessRequest } from './protocol.js';
import { HeadlessUsageError, type HeadlessMessage, type HeadlessResult } from './wire.js';
import { messageOf } from '../../agent/log.js';

const RUN_USAGE = `gatehouse run [--agent NAME] [--conversation KEY] [--json] [--events CATS] [--interactive-stdin]
              [--approval-policy read-only|low-risk|high-risk] [--timeout SECONDS]
              [--with-image MODEL] [--no-stream] [--] "message"`;

const EVENT_CATEGORIES = ['tools', 'text', 'reasoning', 'usage', 'approval', 'question', 'all'] as const;
const EVENT_STRING_MAX = 2000;

const CATEGORY_OF: Record<string, string> = {
  tool_started: 'tools',
  tool_finished: 'tools',
  tool_declined: 'tools',
  text: 'text',
  thinking: 'reasoning',
  usage: 'usage',
  approval_asked: 'approval',
  approval_resolved: 'approval',
  approval_required: 'approval',
  question_asked: 'question',
  question_answered: 'question',
  user_input_required: 'question',
  request_closed: 'approval',
  run_started: 'all',
  run_finished: 'all',
  answer: 'all',
};
const NEVER_CUT = new Set(['question_asked', 'user_input_required']);

interface RunArgs {
  request: HeadlessRequest;
  json: boolean;
  events: Set<string>;
  interactiveFlag: boolean;
  withImage?: string;
  noStream?: boolean;
}

class UsageError extends Error {}

function parseArgs(argv: string[]): {
  args: Omit<RunArgs, 'request'> & { agent?: string; conversation?: string; approvalPolicy?: string; timeoutSeconds?: number };
  words: string[];
} {
  const out: ReturnType<typeof parseArgs>['args'] = { json: false, events: new Set(), interactiveFlag: false };
  const words: string[] = [];
  const value = (i: number, name: string): string => {
    const v = argv[i + 1];
    if (v === undefined) throw new UsageError(`${name} needs a value`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      words.push(...argv.slice(i + 1));
      break;
    }
    const eq = a.indexOf('=');
    const [flag, inline] = a.startsWith('--') && eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    const take = (): string => {
      if (inline !== undefined) return inline;
      i++;
      return value(i - 1, flag);
    };
    switch (flag) {
      case '--json':
        out.json = true;
        break;
      case '--interactive-stdin':
        out.interactiveFlag = true;
        break;
      case '--agent':
        out.agent = take();
        break;
      case '--conversation':
        out.conversation = take();
        break;
      case '--approval-policy': {
        const v = take();
        if (!(TIERS as readonly string[]).includes(v)) throw new UsageError(`--approval-policy must be one of ${TIERS.join(', ')}; got "${v}"`);
        out.approvalPolicy = v;
        break;
      }
      case '--timeout': {
        const v = take();
        const n = Number(v);
        if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--timeout must be a positive number of seconds; got "${v}"`);
        out.timeoutSeconds = n;
        break;
      }
      case '--no-stream':
        out.noStream = true;
        break;
      case '--with-image':
        out.withImage = take();
        break;
      case '--with-audio':
      case '--with-video':
        // No audio or video companion kind exists yet (agent/model/companions.ts); say so rather than ignore it.
        throw new UsageError(`${flag} is not supported yet: Gatehouse has no ${flag.slice(7)} companion kind (only --with-image)`);
      case '--events': {
        for (const c of take()
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)) {
          if (!(EVENT_CATEGORIES as readonly string[]).includes(c))
            throw new UsageError(`--events: unknown category "${c}" (one of ${EVENT_CATEGORIES.join(', ')})`);
          out.events.add(c);
        }
        break;
      }
      default:
        if (a.startsWith('--')) throw new UsageError(`unknown option ${a}`);
        words.push(a);
    }
  }
  return { args: out, words };
}

async function readAll(stream: Readable): Promise<string> {
  let s = '';
  for await (const c of stream) s += typeof c === 'string' ? c : (c as Buffer).toString('utf8');
  return s;
}

/** Cuts long strings of an event for the stream (question events are never cut). */
function cutEvent(m: Record<string, unknown>): Record<string, unknown> {
  if (NEVER_CUT.has(String(m.type))) return m;
  const cut = (v: unknown): unknown => {
    if (typeof v === 'string') return v.length > EVENT_STRING_MAX ? `${v.slice(0, EVENT_STRING_MAX)}…[cut ${v.length - EVENT_STRING_MAX} chars]` : v;
    if (Array.isArray(v)) return v.map(cut);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cut(x)]));
    return v;
  };
  return cut(m) as Record<string, unknown>;
}

export async function runCommand(argv: string[], io: CliIO): Promise<number> {
  const err = (line: string) => io.stderr.write(line + '\n');
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(argv);
  } catch (e) {
    err(`gatehouse run: ${messageOf(e)}\nUsage: ${RUN_USAGE}`);
    return 2;
  }
  const { args, words } = parsed;
  const stdinTTY = (io.stdin as { isTTY?: boolean } | undefined)?.isTTY === true;
  const ciMode = (io.env.CI ?? '').toLowerCase() === 'true';
  const promptMode = !args.interactiveFlag && stdinTTY && !ciMode;
  const interactive = args.interactiveFlag || promptMode;
  let message = words.join(' ');
  if (words.length === 0) {
    if (interactive || !io.stdin) {
      err(`gatehouse run: give the message as an argument (stdin is used for answers here)\nUsage: ${RUN_USAGE}`);
      return 2;
    }
    message = (await readAll(io.stdin)).replace(/\r?\n$/, '');
  }
  if (message.trim() === '') {
    err(`gatehouse run: the message is empty\nUsage: ${RUN_USAGE}`);
    return 2;
  }
  const request: HeadlessRequest = { message, interactive };
  if (args.agent !== undefined) request.agent = args.agent;
  if (args.conversation !== undefined) request.conversation = args.conversation;
  if (args.approvalPolicy !== undefined) request.approvalPolicy = args.approvalPolicy as (typeof TIERS)[number];
  if (args.timeoutSeconds !== undefined) request.timeoutSeconds = args.timeoutSeconds;
  if (args.noStream) request.stream = false;

  const all = args.events.has('all');
  const writeEvent = (m: Record<string, unknown>) => io.stderr.write(JSON.stringify(cutEvent(m)) + '\n');
  // A text delta goes out as `text_chunk`, after one `text_start` per model reply (segment), so a
  // reader knows where each reply's text begins without comparing segment numbers; thinking the
  // same way as `thinking_start` / `thinking_chunk`.
  const started = new Set<string>();
  const writeDelta = (m: { type: 'text' | 'thinking'; runId: string; delta: string; segment: number }) => {
    const seg = `${m.type}:${m.runId}:${m.segment}`;
    if (!started.has(seg)) writeEvent({ type: `${m.type}_start`, runId: m.runId, segment: m.segment });
    started.add(seg);
    writeEvent({ type: `${m.type}_chunk`, runId: m.runId, segment: m.segment, delta: m.delta });
  };
  const streaming = args.events.size > 0 || args.interactiveFlag;
  const wants = (type: string): boolean => {
    if (!streaming) return false;
    if (type === 'error') return true;
    if (args.interactiveFlag && (type === 'user_input_required' || type === 'approval_required')) return true;
    const cat = CATEGORY_OF[type];
    return all || (cat !== undefined && args.events.has(cat));
  };

  // Answers: from stdin lines (the protocol, or the terminal prompt).
  let respond: (r: HeadlessResponse) => Promise<{ accepted: boolean; notice?: string }> = async () => ({ accepted: false, notice: 'not connected' });
  let rl: Interface | undefined;
  const pending: Array<{ m: HeadlessMessage & { type: 'user_input_required' | 'approval_required' } }> = [];
  const prompt = (m: HeadlessMessage & { type: 'user_input_required' | 'approval_required' }) => {
    const options = m.type === 'user_input_required' ? m.suggestions : m.choices;
    const lines =
      m.type === 'user_input_required'
        ? [`? ${m.question}`]
        : [`! ${m.title}`, ...m.body.split('\n').map((l) => `  ${l}`), ...(m.preview ? m.preview.split('\n').map((l) => `    ${l}`) : [])];
    options.forEach((o, i) => lines.push(`  [${i + 1}] ${o.label}${o.description ? ` — ${o.description}` : ''}`));
    lines.push(m.type === 'user_input_required' && m.allowCustom ? 'Number or your answer (empty: no answer)> ' : 'Number (empty: no answer)> ');
    io.stderr.write(lines.join('\n'));
  };
  const onLine = async (raw: string) => {
    const line = raw.trim();
    if (promptMode) {
      const head = pending.shift();
      if (!head) return;
      const m = head.m;
      const options = m.type === 'user_input_required' ? m.suggestions : m.choices;
      const n = /^\d+$/.test(line) ? Number(line) : NaN;
      const value = Number.isInteger(n) && n >= 1 && n <= options.length ? options[n - 1]!.value : line;
      const r = await respond({ type: m.type === 'user_input_required' ? 'user_input_response' : 'approval_response', requestId: m.requestId, value });
      if (!r.accepted) {
        err(`  (${r.notice ?? 'not accepted'})`);
        pending.unshift(head);
        prompt(m);
      }
      return;
    }
    if (!line) return;
    let body: unknown;
    try {
      body = JSON.parse(line);
    } catch {
      writeEvent({ type: 'error', message: `stdin: not a JSON line: ${line.slice(0, 200)}` });
      return;
    }
    // zod only here: an attached run that reads no answers from stdin never loads it.
    const r = (await import('./protocol.js')).HeadlessResponse.safeParse(body);
    if (!r.success) {
      writeEvent({
        type: 'error',
        message: `stdin: not a user_input_response / approval_response: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      });
      return;
    }
    const done = await respond(r.data).catch((e: unknown) => ({ accepted: false, notice: messageOf(e) }));
    if (!done.accepted) writeEvent({ type: 'error', message: `stdin: ${r.data.requestId}: ${done.notice ?? 'not accepted'}` });
  };
  // Requests not answered yet; once stdin has ended, each gets "no answer" at once instead of waiting
  // for its timeout.
  const unanswered = new Map<string, 'user_input_response' | 'approval_response'>();
  let stdinEnded = false;
  const noAnswer = (requestId: string, type: 'user_input_response' | 'approval_response') =>
    void respond({ type, requestId, value: null }).catch(() => undefined);
  if (interactive && io.stdin) {
    rl = createInterface({ input: io.stdin, terminal: false });
    // Lines are handled one after another, and the end of stdin only after the lines before it: an
    // answer written just before closing stdin (`echo '{...}' | gatehouse run`) must win over "no answer".
    let lines: Promise<void> = Promise.resolve();
    rl.on('line', (l) => {
      lines = lines.then(() => onLine(l)).catch((e: unknown) => void writeEvent({ type: 'error', message: `stdin: ${messageOf(e)}` }));
    });
    rl.on('close', () => {
      void lines.then(() => {
        stdinEnded = true;
        for (const [id, type] of unanswered) noAnswer(id, type);
      });
    });
  }

  const onMessage = (m: HeadlessMessage) => {
    if (m.type === 'user_input_required' || m.type === 'approval_required') {
      const type = m.type === 'user_input_required' ? 'user_input_response' : 'approval_response';
      unanswered.set(m.requestId, type);
      if (stdinEnded) noAnswer(m.requestId, type);
    }
    if (m.type === 'request_closed') unanswered.delete(m.requestId);
    if (wants(m.type)) {
      if (m.type === 'text' || m.type === 'thinking') writeDelta(m);
      else writeEvent(m as unknown as Record<string, unknown>);
    }
    if (promptMode && (m.type === 'user_input_required' || m.type === 'approval_required')) {
      pending.push({ m });
      if (pending.length === 1) prompt(m);
    }
    if (promptMode && m.type === 'request_closed') {
      const i = pending.findIndex((p) => p.m.requestId === m.requestId);
      if (i >= 0) pending.splice(i, 1);
    }
  };

  let result: HeadlessResult;
  try {
    result = await execute(io, request, onMessage, (r) => (respond = r), args.events.size > 0, args.withImage);
  } catch (e) {
    rl?.close();
    if (e instanceof HeadlessUsageError) {
      err(`gatehouse run: ${e.message}`);
      return 2;
    }
    const { ConfigError, formatConfigError } = await import('../config/index.js');
    if (e instanceof ConfigError) {
      err(formatConfigError(e));
      return 2;
    }
    if (args.json)
      io.stdout.write(
        JSON.stringify({
          ok: false,
          error: messageOf(e),
          costUSD: 0,
          costKnown: true,
          usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
          conversation: args.conversation ?? null,
          declined: [],
        }) + '\n',
      );
    if (streaming) writeEvent({ type: 'error', message: messageOf(e) });
    else err(`gatehouse run: ${messageOf(e)}`);
    return 1;
  }
  rl?.close();
  if (args.json) io.stdout.write(JSON.stringify(result) + '\n');
  else if (result.ok) io.stdout.write((result.answer ?? '') + '\n');
  if (!result.ok && !streaming) err(`gatehouse run: ${result.error ?? 'the run failed'}`);
  return result.ok ? 0 : 1;
}

/** Through the running service when there is one, else in this process. */
async function execute(
  io: CliIO,
  request: HeadlessRequest,
  onMessage: (m: HeadlessMessage) => void,
  setRespond: (r: (x: HeadlessResponse) => Promise<{ accepted: boolean; notice?: string }>) => void,
  eventsOn: boolean,
  withImage?: string,
): Promise<HeadlessResult> {
  // The service's folder comes from GATEHOUSE_STORE alone (environment, then .env), so an attached run
  // never loads the configuration or the agent: the service has its own.
  const { env, dataDir } = await callerEnv(io);
  const service = findService(dataDir);
  if (service && withImage !== undefined) {
    // The service runs on its own config; a per-run companion would need the wire to carry it.
    throw new HeadlessUsageError('--with-image works only when no Gatehouse service is running (the run is in this process)');
  }
  if (service) {
    try {
      setRespond((r) => attachRespond(service, r));
      const { configDrift } = await import('./config-drift.js');
      return await attachRun(service, request, onMessage, (info) => {
        const note = configDrift(info, env, io.cwd);
        if (note) io.stderr.write(note + '\n');
      });
    } catch (e) {
      if (!(e instanceof AttachUnavailable)) throw e;
      // Stale files from a service that is gone: run here.
    }
  }
  const { readConfig } = await import('../service/start.js');
  const config = withImage === undefined ? readConfig(io) : withCompanion(readConfig(io), 'analyze:image', withImage);
  const { runInProcess } = await import('./in-process.js');
  return runInProcess(io, config, request, onMessage, setRespond, eventsOn);
}

/**
 * The caller's environment with .env loaded (a copy), and the data folder (the SQLite store's) as
 * bot/service/reload.ts dataDirOf finds it from them.
 */
async function callerEnv(io: CliIO): Promise<{ env: Record<string, string | undefined>; dataDir: string }> {
  const { loadDotEnv, storeFromEnv } = await import('../config/env.js');
  const env = { ...io.env };
  loadDotEnv(env, io.cwd);
  const { store } = storeFromEnv(env, io.cwd);
  return { env, dataDir: store.kind === 'sqlite' && store.path !== ':memory:' ? dirname(store.path) : resolve(io.cwd, 'data') };
}

/** The config with every agent's companions for `kind` replaced by the one model named on the command line. */
function withCompanion(config: Config, kind: CompanionKind, model: string): Config {
  if (model.trim() === '') throw new HeadlessUsageError('--with-image needs a model id');
  const agents = Object.fromEntries(
    Object.entries(config.agents).map(([name, a]) => [name, { ...a, companions: { ...a.companions, [kind]: [{ id: model, label: model }] } }]),
  ) as Config['agents'];
  return { ...config, agents };
}
