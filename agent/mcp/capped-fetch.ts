/**
 * A fetch for the Streamable HTTP transport that reads at most `maxBytes` of any one response body
 * (a JSON answer or one request's SSE stream): past that the body errors and the request fails, so a
 * hostile or broken remote server cannot grow the bot's memory without bound.
 */
export function cappedFetch(maxBytes: number, base: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const res = await base(input, init);
    if (!res.body) return res;
    let seen = 0;
    const limited = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > maxBytes) controller.error(new Error(`the MCP server sent a response over ${Math.round(maxBytes / (1024 * 1024))} MB; it was not read further`));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(limited, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
