/**
 * Shared by the egress e2e tests: a server on 127.0.0.1 that records what reached it, and the last
 * tool result the model was sent.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RecordedRequest } from '../../fakes/anthropic.js';

export interface CountingServer {
  port: number;
  /** The paths requested, in order. */
  hits: string[];
  close(): Promise<void>;
}

/** Answers every request with `body(path)`. */
export async function startCountingServer(body: (path: string) => string): Promise<CountingServer> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end(body(req.url ?? ''));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    hits,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

export function lastToolResult(req: RecordedRequest | undefined): string {
  const last = (req?.body as { messages: Array<{ content: unknown }> } | undefined)?.messages.at(-1);
  const block = ((last?.content ?? []) as Array<{ type: string; content?: unknown }>).find((b) => b.type === 'tool_result');
  return typeof block?.content === 'string' ? block.content : JSON.stringify(block?.content ?? '');
}
