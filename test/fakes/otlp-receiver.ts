/**
 * A fake OTLP/HTTP trace receiver on 127.0.0.1: accepts POST /v1/traces with a JSON body (what
 * @opentelemetry/exporter-trace-otlp-http sends), answers 200 `{}` as a collector does, and records
 * every span flattened (attributes as plain values), with its resource and scope. `bodies` keeps the
 * raw request bodies, so a test can assert what never left the process.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

type AnyValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
  kvlistValue?: { values?: KeyValue[] };
};
type KeyValue = { key: string; value?: AnyValue };

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
  attributes?: KeyValue[];
  events?: Array<{ name: string; attributes?: KeyValue[] }>;
  status?: { code?: number; message?: string };
}

interface OtlpBody {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{ scope?: { name?: string; version?: string }; schemaUrl?: string; spans?: OtlpSpan[] }>;
    schemaUrl?: string;
  }>;
}

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  status: { code: number; message?: string };
  resource: Record<string, unknown>;
  scope: { name?: string; version?: string; schemaUrl?: string };
}

export interface FakeOtlpReceiver {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  bodies: string[];
  /** Content types of the requests received. */
  contentTypes: string[];
  close(): Promise<void>;
}

function value(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  if (v.kvlistValue) return attributes(v.kvlistValue.values);
  return undefined;
}

function attributes(kvs: KeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of kvs ?? []) out[kv.key] = value(kv.value);
  return out;
}

export async function startFakeOtlpReceiver(): Promise<FakeOtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      contentTypes.push(String(req.headers['content-type'] ?? ''));
      bodies.push(text);
      let body: OtlpBody;
      try {
        body = JSON.parse(text) as OtlpBody;
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"this fake reads JSON bodies only"}');
        return;
      }
      for (const rs of body.resourceSpans ?? []) {
        const resource = attributes(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind ?? 0,
              attributes: attributes(s.attributes),
              events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributes(e.attributes) })),
              status: { code: s.status?.code ?? 0, ...(s.status?.message ? { message: s.status.message } : {}) },
              resource,
              scope: {
                ...(ss.scope?.name ? { name: ss.scope.name } : {}),
                ...(ss.scope?.version ? { version: ss.scope.version } : {}),
                ...(ss.schemaUrl ? { schemaUrl: ss.schemaUrl } : {}),
              },
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    contentTypes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
