/**
 * The 'mcp' job of the document worker, as plain JavaScript (joined into WORKER_SOURCE): an MCP
 * server's tools/call result, still untrusted, becomes the tool result the model sees.
 *
 * Payload: { raw?: string, result?: unknown, server, tool, maxOutputBytes, maxImageBase64, maxImages, imageTypes }
 *   raw: the whole JSON-RPC response line as the server sent it (stdio): parsed here, off the bot's
 *        event loop, so the main thread never walks or clones the result's tree; else `result`, the
 *        parsed object (HTTP), structured-cloned in.
 * Value:   { content: string | Array<text|image block>, isError?: true }
 * - text, resource text and resource links are kept as text, images (PNG/JPEG/GIF/WebP, at most
 *   maxImageBase64 of base64 each, at most maxImages of them) as images; anything else is described.
 * - With no content blocks, structuredContent (or the legacy toolResult) is printed as JSON: pretty
 *   when small, compact when it would be cut anyway; nesting too deep to print is said so, not thrown.
 * - All text together is capped at maxOutputBytes: head and tail kept, the same marker as
 *   execute_command in between; kept as it goes (blockSink), so millions of blocks cost the cap.
 * - The main thread never walks the result: deep nesting is met only here (JSON.parse is iterative;
 *   JSON.stringify's RangeError becomes a note).
 * - A result that is not an object, or whose content is not a list, throws McpResultError.
 */
export const MCP_RESULT_SOURCE = String.raw`
class McpResultError extends Error { constructor(m) { super(m); this.name = 'McpResultError'; } }

function printJson(v, cap) {
  let compact;
  try {
    compact = JSON.stringify(v);
  } catch (e) {
    if (e instanceof RangeError) return '[structured content not shown: it is nested too deeply to print]';
    throw e;
  }
  if (compact === undefined) return String(v);
  if (compact.length > cap) return compact; // cut to the cap anyway: indentation would only add bytes
  try {
    const pretty = JSON.stringify(v, null, 2);
    return pretty.length <= 4 * cap ? pretty : compact;
  } catch {
    return compact;
  }
}

// The result's blocks in order while all their text fits in max bytes; past that, only the head
// (max/2 bytes), a rolling tail (max/2) and the images are kept, so a million blocks cost no more
// memory than the cap: the same output as capping the whole list at the end.
function blockSink(max) {
  const headCap = Math.floor(max / 2);
  const tailCap = max - headCap;
  let blocks = [];
  let total = 0; // bytes of all text joined with '\n'
  let texts = 0;
  let capped = false;
  let head = null; // Buffer of the first headCap bytes, once capped
  // The recent text, at least tailCap characters (so at least tailCap bytes) once capped; trimmed
  // now and then, not per piece. A surrogate split by the trim stays far from the last tailCap bytes.
  let tail = '';
  let images = [];
  const pushTail = (t) => {
    tail += t;
    if (tail.length > 8 * tailCap) tail = tail.slice(-2 * tailCap);
  };
  const startCapping = () => {
    capped = true;
    const text = blocks.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
    head = Buffer.from(text.slice(0, headCap)).subarray(0, headCap);
    pushTail(text);
    images = blocks.filter((b) => b.type === 'image');
    blocks = null;
  };
  return {
    text(t) {
      const sep = texts > 0;
      texts++;
      total += Buffer.byteLength(t) + (sep ? 1 : 0);
      if (!capped) {
        blocks.push({ type: 'text', text: t });
        if (total > max) startCapping();
        return;
      }
      pushTail(sep ? '\n' + t : t);
    },
    image(b) {
      if (capped) images.push(b);
      else blocks.push(b);
    },
    finish() {
      if (!capped) return blocks;
      const all = Buffer.from(tail);
      const headText = head.toString('utf8').replace(/\uFFFD$/, '');
      const tailText = all.subarray(Math.max(0, all.length - tailCap)).toString('utf8').replace(/^\uFFFD/, '');
      const omitted = total - Buffer.byteLength(headText) - Buffer.byteLength(tailText);
      return [{ type: 'text', text: headText + '\n[... output truncated: ' + omitted + ' bytes omitted ...]\n' + tailText }, ...images];
    },
  };
}

const str = (v) => (typeof v === 'string' ? v : String(v));

function mcp(p) {
  let r = p.result;
  if (typeof p.raw === 'string') {
    const msg = JSON.parse(p.raw);
    r = msg !== null && typeof msg === 'object' ? msg.result : undefined;
  }
  if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new McpResultError('its result is not an object');
  const items = r.content === undefined || r.content === null ? [] : r.content;
  if (!Array.isArray(items)) throw new McpResultError('its result content is not a list');
  const imageTypes = new Set(p.imageTypes);
  const sink = blockSink(p.maxOutputBytes);
  let images = 0;
  let imagesLeftOut = 0;
  for (const c of items) {
    if (c === null || typeof c !== 'object') {
      sink.text('[a content block that is not an object, not shown]');
      continue;
    }
    const res = c.resource !== null && typeof c.resource === 'object' ? c.resource : undefined;
    if (c.type === 'text' && typeof c.text === 'string') sink.text(c.text);
    else if (c.type === 'image' && typeof c.data === 'string' && c.data.length > p.maxImageBase64) {
      sink.text('[image (' + str(c.mimeType) + ') of ' + Math.round((c.data.length * 3) / 4 / 1024) + ' KB not shown: over the 5 MB a model accepts]');
    } else if (c.type === 'image' && typeof c.data === 'string' && typeof c.mimeType === 'string' && imageTypes.has(c.mimeType)) {
      if (images < p.maxImages) {
        images++;
        sink.image({ type: 'image', source: { type: 'base64', media_type: c.mimeType, data: c.data } });
      } else imagesLeftOut++;
    } else if (c.type === 'resource' && res && typeof res.text === 'string') {
      sink.text('[resource ' + (typeof res.uri === 'string' ? res.uri : '') + ']\n' + res.text);
    } else if (c.type === 'resource_link') {
      sink.text('[resource link: ' + str(c.uri === undefined ? '' : c.uri) + (c.name ? ' (' + str(c.name) + ')' : '') + ']');
    } else {
      const mime = typeof c.mimeType === 'string' ? c.mimeType : res && typeof res.mimeType === 'string' ? res.mimeType : 'unknown type';
      sink.text('[' + (typeof c.type === 'string' ? c.type : 'unknown') + ' content (' + mime + ') not shown]');
    }
  }
  if (imagesLeftOut > 0) sink.text('[' + imagesLeftOut + ' more images not shown: at most ' + p.maxImages + ' images are shown per result]');
  if (items.length === 0 && r.structuredContent !== undefined) sink.text(printJson(r.structuredContent, p.maxOutputBytes));
  if (items.length === 0 && r.toolResult !== undefined) sink.text(printJson(r.toolResult, p.maxOutputBytes));
  const blocks = sink.finish();
  if (r.isError === true) blocks.unshift({ type: 'text', text: 'MCP server "' + p.server + '" reported an error from ' + p.tool + ':' });
  const out = blocks.every((b) => b.type === 'text') ? { content: blocks.map((b) => b.text).join('\n') || '(no output)' } : { content: blocks };
  if (r.isError === true) out.isError = true;
  return out;
}
`;
