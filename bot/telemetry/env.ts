/**
 * The observability settings from the environment: /metrics (GATEHOUSE_METRICS, GATEHOUSE_METRICS_TOKEN)
 * and OpenTelemetry traces (the standard OTEL_* variables).
 *
 * Contract:
 * - /metrics is on by default. On a loopback address (GATEHOUSE_HTTP_HOST 127.0.0.1, ::1, localhost)
 *   it needs no token; with GATEHOUSE_METRICS_TOKEN set it always needs `Authorization: Bearer <token>`.
 *   Exposed on any other address without a token is a config problem naming GATEHOUSE_METRICS_TOKEN
 *   (or set GATEHOUSE_METRICS=off). A token shorter than 16 characters is refused.
 * - Traces are off unless OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set
 *   (and OTEL_SDK_DISABLED is not true, OTEL_TRACES_EXPORTER is not none). The exporter speaks OTLP/HTTP
 *   with JSON bodies: OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL may be unset or http/json, anything else is
 *   a problem naming the variable. Message text and tool arguments are exported only with
 *   OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
 * - Problems never echo a secret (the token, header values).
 */
export interface ConfigProblemLike {
  path: string;
  message: string;
}

export interface MetricsSettings {
  enabled: boolean;
  /** Required on the scrape when set. */
  token?: string;
}

export interface TraceSettings {
  /** The full URL spans are POSTed to (…/v1/traces). */
  url: string;
  headers: Record<string, string>;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  /** Message text, tool arguments and results on the spans (off by default). */
  captureContent: boolean;
  /** OTEL_BSP_SCHEDULE_DELAY (ms), when set. */
  scheduleDelayMs?: number;
}

type Env = Record<string, string | undefined>;

function get(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost', '[::1]']);

function isLoopback(host: string): boolean {
  return LOOPBACK.has(host.toLowerCase()) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export function readMetricsEnv(env: Env, host: string, problems: ConfigProblemLike[]): MetricsSettings {
  const raw = get(env, 'GATEHOUSE_METRICS')?.toLowerCase();
  let enabled = true;
  if (raw !== undefined) {
    if (['off', 'false', '0', 'no'].includes(raw)) enabled = false;
    else if (!['on', 'true', '1', 'yes'].includes(raw)) problems.push({ path: 'GATEHOUSE_METRICS', message: `expected on or off, got ${JSON.stringify(raw)}` });
  }
  const token = get(env, 'GATEHOUSE_METRICS_TOKEN');
  if (token !== undefined && token.length < 16) {
    problems.push({ path: 'GATEHOUSE_METRICS_TOKEN', message: 'is too short: use at least 16 random characters (e.g. openssl rand -hex 24)' });
  }
  if (enabled && token === undefined && !isLoopback(host)) {
    problems.push({
      path: 'GATEHOUSE_METRICS_TOKEN',
      message: `is not set, and the HTTP server is exposed on ${host} (GATEHOUSE_HTTP_HOST): /metrics there needs a bearer token; set GATEHOUSE_METRICS_TOKEN to a long random value (Prometheus: authorization.credentials), or GATEHOUSE_METRICS=off`,
    });
  }
  return { enabled, ...(token !== undefined ? { token } : {}) };
}

/** `k=v,k2=v2` (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES): values percent-decoded. */
function keyValues(name: string, raw: string | undefined, problems: ConfigProblemLike[], secret: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === undefined) return out;
  for (const part of raw.split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    const key = eq > 0 ? part.slice(0, eq).trim() : '';
    if (key === '') {
      problems.push({ path: name, message: `expected key=value pairs separated by commas${secret ? '' : `, got ${JSON.stringify(part)}`}` });
      continue;
    }
    try {
      out[key] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      problems.push({ path: name, message: `the value of ${key} is not valid percent-encoding` });
    }
  }
  return out;
}

export function readTraceEnv(env: Env, problems: ConfigProblemLike[]): TraceSettings | undefined {
  const tracesEndpoint = get(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const endpoint = get(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (tracesEndpoint === undefined && endpoint === undefined) return undefined;
  if (get(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const exporters = (get(env, 'OTEL_TRACES_EXPORTER') ?? 'otlp')
    .toLowerCase()
    .split(',')
    .map((s) => s.trim());
  if (exporters.includes('none')) return undefined;
  if (!exporters.includes('otlp')) {
    problems.push({ path: 'OTEL_TRACES_EXPORTER', message: `only otlp (or none) is supported, got ${JSON.stringify(get(env, 'OTEL_TRACES_EXPORTER'))}` });
    return undefined;
  }
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    const p = get(env, name);
    if (p === undefined) continue;
    if (p !== 'http/json')
      problems.push({ path: name, message: `Gatehouse exports OTLP/HTTP with JSON bodies: set http/json (or leave it unset), got ${JSON.stringify(p)}` });
    break;
  }
  // Per the OTLP exporter spec: the signal's own endpoint is used as is; the base one gets /v1/traces.
  const name = tracesEndpoint !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const url = tracesEndpoint ?? `${endpoint!.replace(/\/+$/, '')}/v1/traces`;
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http');
  } catch {
    problems.push({ path: name, message: 'expected an http:// or https:// URL, e.g. http://127.0.0.1:4318' });
    return undefined;
  }
  const headersName = get(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_HEADERS' : 'OTEL_EXPORTER_OTLP_HEADERS';
  const headers = keyValues(headersName, get(env, headersName), problems, true);
  const resourceAttributes = keyValues('OTEL_RESOURCE_ATTRIBUTES', get(env, 'OTEL_RESOURCE_ATTRIBUTES'), problems, false);
  const capture = get(env, 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT')?.toLowerCase();
  if (capture !== undefined && capture !== 'true' && capture !== 'false') {
    problems.push({ path: 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT', message: `expected true or false, got ${JSON.stringify(capture)}` });
  }
  const delayRaw = get(env, 'OTEL_BSP_SCHEDULE_DELAY');
  let scheduleDelayMs: number | undefined;
  if (delayRaw !== undefined) {
    if (/^\d+$/.test(delayRaw)) scheduleDelayMs = Number(delayRaw);
    else problems.push({ path: 'OTEL_BSP_SCHEDULE_DELAY', message: `expected milliseconds, got ${JSON.stringify(delayRaw)}` });
  }
  return {
    url,
    headers,
    serviceName: get(env, 'OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? 'gatehouse',
    resourceAttributes,
    captureContent: capture === 'true',
    ...(scheduleDelayMs !== undefined ? { scheduleDelayMs } : {}),
  };
}
