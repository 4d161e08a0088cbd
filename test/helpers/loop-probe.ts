/**
 * A /healthz probe on this event loop, shared by the tests that prove untrusted parsing stays off
 * the bot's thread: while busy, it keeps asking /healthz and counts the answers that arrive while
 * still busy. Events, not clocks: an answer can only arrive if the loop was free to accept, serve and
 * read it. The server it starts is closed through `closers` (the caller's afterAll runs them).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoopProbe {
  begin(): void;
  end(): void;
  answeredWhileBusy(): number;
  settled(): Promise<void>;
}

export async function healthzProbe(closers: Array<() => Promise<void>>): Promise<LoopProbe> {
  const server = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`;
  let busy = false;
  let answers = 0;
  let inflight: Promise<void> = Promise.resolve();
  const ask = (): void => {
    inflight = new Promise<void>((done) => {
      http
        .get(url, { agent: false }, (res) => {
          res.resume();
          res.on('end', () => {
            if (busy) {
              answers++;
              if (answers < 5) ask();
            }
            done();
          });
        })
        .on('error', () => done());
    });
  };
  return {
    begin() {
      busy = true;
      ask();
    },
    end() {
      busy = false;
    },
    answeredWhileBusy: () => answers,
    settled: () => inflight,
  };
}
