/**
 * What the parts of the Telegram adapter (inbound, interactivity, output, start-up) share: the bot
 * and its API clients, the core's sink, the last update seen, and a describer that never prints the
 * token (it is in every Bot API URL, so grammy's errors can carry it).
 *
 * Contract:
 * - `ctx.bot.api` retries a 429 after its retry_after (up to 3 times, when it is at most 60 s) and a
 *   network error once per `networkRetryDelaysMs` entry, then returns or throws what Telegram said;
 *   getUpdates is never retried here (the runner polls again itself): its first failure is logged as
 *   a warning and its recovery as info. `ctx.statusApi` has no retries at all (the status message
 *   coalesces on a 429 instead of replaying).
 * - `ctx.describeError` (kit secretScrubber with grammy's reading) says what grammy's error says (the method, Telegram's code and
 *   description; a network error's message and its cause), with the token as `<token>`.
 */
import { Api, Bot, GrammyError, HttpError } from 'grammy';
import type { Context, Transformer } from 'grammy';
import { messageOf } from '../kit/errors.js';
import { secretScrubber, type SecretScrubber } from '../kit/secrets.js';
import type { AdapterSink, Log } from '../types.js';

export interface TelegramContext {
  /** The bot: handlers, and outbound calls with retries. */
  readonly bot: Bot;
  /** The same Bot API without retries, for the status message. */
  readonly statusApi: Api;
  readonly token: string;
  /** The Bot API root without a trailing slash (file downloads are under `<apiRoot>/file/`). */
  readonly apiRoot: string;
  readonly log: Log;
  /** An error as one line, never the token. */
  readonly describeError: (err: unknown) => string;
  /** Removes the token from a text. */
  readonly scrub: (s: string) => string;
  /** The core; undefined before start and after stop. */
  sink: AdapterSink | undefined;
  /** The highest update id handled, confirmed to Telegram when polling closes. */
  lastUpdateId: number | undefined;
}

const MAX_429_RETRIES = 3;
const MAX_RETRY_AFTER_S = 60;

/** grammy's errors, read: Telegram's answer for a refused call, the network failure for an HTTP error. */
function grammyDetail(err: unknown): string {
  if (err instanceof GrammyError) return `${err.method}: ${err.error_code} ${err.description}`;
  if (err instanceof HttpError) return `${err.message} ${messageOf(err.error)}`;
  return messageOf(err);
}

function telegramScrubber(token: string): SecretScrubber {
  return secretScrubber([token], { mark: '<token>', detail: grammyDetail });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function retryTransformer(log: Log, describeError: (err: unknown) => string, netDelays: readonly number[]): Transformer {
  let pollFailing = false;
  return async (prev, method, payload, signal) => {
    if (method === 'getUpdates') {
      // The runner retries polling itself; we only make failures visible.
      try {
        const res = await prev(method, payload, signal);
        if (res.ok && pollFailing) {
          pollFailing = false;
          log('info', 'polling Telegram again');
        }
        return res;
      } catch (err) {
        if (!signal?.aborted && !pollFailing) {
          pollFailing = true;
          log('warn', `polling Telegram failed, retrying: ${describeError(err)}`);
        }
        throw err;
      }
    }
    let limited = 0;
    let failed = 0;
    for (;;) {
      let res;
      try {
        res = await prev(method, payload, signal);
      } catch (err) {
        const wait = netDelays[failed++];
        if (wait === undefined || signal?.aborted) throw err;
        log('warn', `${method} failed (${describeError(err)}); retrying in ${wait} ms`);
        await sleep(wait);
        continue;
      }
      if (!res.ok && res.error_code === 429 && limited < MAX_429_RETRIES) {
        const after = res.parameters?.retry_after ?? 1;
        if (after <= MAX_RETRY_AFTER_S) {
          limited++;
          log('warn', `${method} rate-limited by Telegram; retrying after ${after} s`);
          await sleep(after * 1000);
          continue;
        }
      }
      return res;
    }
  };
}

export function createContext(opts: {
  token: string;
  apiRoot: string;
  log: Log;
  botInfo: Context['me'] | undefined;
  networkRetryDelaysMs: readonly number[];
}): TelegramContext {
  const { scrub, describeError } = telegramScrubber(opts.token);
  const client = { apiRoot: opts.apiRoot };
  const bot = new Bot(opts.token, { client, ...(opts.botInfo ? { botInfo: opts.botInfo } : {}) });
  bot.api.config.use(retryTransformer(opts.log, describeError, opts.networkRetryDelaysMs));
  return {
    bot,
    statusApi: new Api(opts.token, client),
    token: opts.token,
    apiRoot: opts.apiRoot,
    log: opts.log,
    describeError,
    scrub,
    sink: undefined,
    lastUpdateId: undefined,
  };
}
