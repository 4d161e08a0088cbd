/**
 * analyze_media: another model (a "companion") looks at an image or a file and answers a question
 * about it. The approver picks which configured model does it; the model asking never does.
 *
 * Contract:
 * - Source: `path` (a workspace file, confined like read_file) or `attachment` (1 = the most recent
 *   attachment a user sent in this conversation, 2 = the one before...). Exactly one.
 * - Kind by content: png/jpeg/gif/webp -> "analyze:image"; a PDF or UTF-8 text -> "analyze:file";
 *   anything else is refused. Caps: images 5 MB, PDFs 10 MB, text 256 KB; the answer 20,000 chars.
 * - Which model: the agent's `companions[kind]`, read live at propose and again at execute.
 *   None configured: refused, naming `agents.<name>.companions["<kind>"]`. One: used without a
 *   picker. Several: the proposal carries them as options (a picker, never auto-approved; declined
 *   by the gate when no approver is bound). execute takes the model ONLY from `selectedOptionId`
 *   (the approver's click) and checks it is still configured; the input schema has no model field
 *   and rejects unknown keys, so a model id in the arguments is an error, never a choice.
 * - The companion call is one Messages API request through the agent's model client (no tools):
 *   the media block, then the prompt; its usage counts for the run. Its failure is a tool error
 *   naming the model.
 */
import { z } from 'zod';
import { companionsKey, type Companion, type CompanionKind, type Companions } from '../../model/companions.js';
import type { ContentBlock, ImageBlock, Message, TextBlock } from '../../context/messages.js';
import { ModelError, type ModelClient } from '../../model/types.js';
import { ToolError, type Tool, type ToolContext } from '../types.js';
import { displayPath, errCode, openInWorkspace, resolveInWorkspace, workspaceRoot } from '../workspace.js';

const MEDIA_LIMITS = { imageBytes: 5 * 1024 * 1024, pdfBytes: 10 * 1024 * 1024, textBytes: 256 * 1024, answerChars: 20_000 };
const COMPANION_MAX_TOKENS = 4096;

export const COMPANION_SYSTEM =
  'You are a careful analyst. You are given one image or document and a request about it. ' +
  'Answer the request from what the media shows; say plainly what you cannot make out. Be concise.';

export interface AnalyzeMediaDeps {
  model: ModelClient;
  /** The agent's companions, read at every call (config can change). */
  companions(): Companions | undefined;
}

const AnalyzeMediaInput = z
  .strictObject({
    path: z.string().min(1).optional().describe('A file in the workspace (image, PDF or text).'),
    attachment: z.number().int().min(1).optional().describe('An attachment users sent in this conversation: 1 = the most recent, 2 = the one before, ...'),
    prompt: z.string().min(1).max(4000).describe('What to look for, or the question to answer about it.'),
  })
  .refine((i) => (i.path === undefined) !== (i.attachment === undefined), { message: 'give exactly one of path or attachment' });
type AnalyzeMediaInput = z.infer<typeof AnalyzeMediaInput>;

interface Media {
  kind: CompanionKind;
  /** How it is named on the card and in the answer. */
  shown: string;
  size: number;
  block: ContentBlock | DocumentBlock;
}

/** The Messages API's PDF block; companion requests only, never stored in a transcript. */
interface DocumentBlock {
  type: 'document';
  source: { type: 'base64'; media_type: 'application/pdf'; data: string };
}

export function analyzeMediaTool(deps?: AnalyzeMediaDeps): Tool<AnalyzeMediaInput> {
  const companionsFor = (kind: CompanionKind, ctx: ToolContext): Companion[] => {
    if (!deps) throw new ToolError('analyze_media has no model client in this build; it cannot run.');
    const list = deps.companions()?.[kind] ?? [];
    if (list.length === 0) {
      throw new ToolError(
        `no model is configured to ${kind === 'analyze:image' ? 'look at images' : 'read files'} for this agent, so nothing was sent. ` +
          `An operator can list model ids under ${companionsKey(ctx.agentName, kind)} in gatehouse.yaml${kind === 'analyze:image' ? ' (or pass --with-image MODEL to a headless `gatehouse run`)' : ''}. Tell the user.`,
      );
    }
    return list;
  };
  return {
    name: 'analyze_media',
    description:
      'Have another model look at an image, a PDF or a text file (from the workspace, or an attachment a user sent here) and ' +
      'answer a prompt about it. Which model does it is configured per agent and, when there are several, picked by an ' +
      "approver: you cannot choose it. Returns that model's answer.",
    input: AnalyzeMediaInput,
    tier: 'read-only',
    timeoutMs: 5 * 60_000,
    async propose(input, ctx) {
      const media = await loadMedia(input, ctx);
      const companions = companionsFor(media.kind, ctx);
      const summary = `analyze_media ${media.shown} (${media.kind.slice(8)}, ${human(media.size)}): ${cut(input.prompt.replace(/\s+/g, ' '), 120)}`;
      // The whole prompt on the card when the summary had to cut it.
      const preview = input.prompt.length > 120 ? { preview: input.prompt } : {};
      if (companions.length === 1) return { summary: `${summary} (model: ${companions[0]!.label})`, ...preview };
      return { summary: `${summary} — pick the model that looks at it`, options: companions.map((c) => ({ id: c.id, label: c.label })), ...preview };
    },
    async execute(input, ctx, prepared) {
      const media = await loadMedia(input, ctx);
      const companions = companionsFor(media.kind, ctx);
      let companion: Companion | undefined;
      if (prepared.proposal?.options && prepared.proposal.options.length > 0) {
        const picked = prepared.selectedOptionId;
        if (picked === undefined)
          throw new ToolError('it was approved without a model being picked (e.g. by "Approve all"); call it again so an approver can pick one.');
        companion = companions.find((c) => c.id === picked);
        if (!companion) throw new ToolError(`the picked model ${picked} is no longer listed under ${companionsKey(ctx.agentName, media.kind)}; call it again.`);
      } else if (companions.length === 1) {
        companion = companions[0];
      } else {
        throw new ToolError(`the models under ${companionsKey(ctx.agentName, media.kind)} changed since this call was prepared; call it again.`);
      }
      const request: Message = { role: 'user', content: [media.block as ContentBlock, { type: 'text', text: input.prompt }] };
      let text: string;
      try {
        const res = await deps!.model.complete({
          model: companion!.id,
          system: COMPANION_SYSTEM,
          messages: [request],
          tools: [],
          maxTokens: COMPANION_MAX_TOKENS,
          signal: ctx.signal,
        });
        ctx.addUsage?.(res.usage);
        text = res.content
          .flatMap((b) => (b.type === 'text' ? [b.text] : []))
          .join('')
          .trim();
      } catch (err) {
        if (err instanceof ModelError) throw new ToolError(`the companion model ${companion!.id} failed: ${err.userMessage} (${err.message})`);
        throw err;
      }
      if (text === '') text = '(the model gave no answer)';
      if (text.length > MEDIA_LIMITS.answerChars) text = `${text.slice(0, MEDIA_LIMITS.answerChars)}\n[answer cut at ${MEDIA_LIMITS.answerChars} characters]`;
      return { content: `${companion!.label} (${companion!.id}) on ${media.shown}:\n${text}` };
    },
  };
}

async function loadMedia(input: AnalyzeMediaInput, ctx: ToolContext): Promise<Media> {
  if (input.attachment !== undefined) return attachmentMedia(input.attachment, ctx);
  const root = await workspaceRoot(ctx.workspace);
  const abs = await resolveInWorkspace(ctx.workspace, input.path!, { mustExist: true });
  const shown = displayPath(root, abs);
  const fh = await openInWorkspace(root, abs).catch((err: unknown) => {
    if (err instanceof ToolError) throw err;
    throw new ToolError(`${shown} cannot be opened (${errCode(err)}); use ls or find to see what is there.`);
  });
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new ToolError(`${shown} is not a regular file.`);
    if (st.size === 0) throw new ToolError(`${shown} is empty.`);
    if (st.size > MEDIA_LIMITS.pdfBytes) throw new ToolError(`${shown} is ${human(st.size)}; the limit is ${human(MEDIA_LIMITS.pdfBytes)}.`);
    const bytes = Buffer.alloc(st.size);
    const { bytesRead } = await fh.read(bytes, 0, st.size, 0);
    return mediaFromBytes(bytes.subarray(0, bytesRead), shown);
  } finally {
    await fh.close();
  }
}

/** Sniffs the content (never trusts the extension) and builds the block the companion receives. */
function mediaFromBytes(bytes: Buffer, shown: string): Media {
  const image = imageType(bytes);
  if (image) {
    if (bytes.length > MEDIA_LIMITS.imageBytes)
      throw new ToolError(`${shown} is a ${human(bytes.length)} image; the limit is ${human(MEDIA_LIMITS.imageBytes)}.`);
    const block: ImageBlock = { type: 'image', source: { type: 'base64', media_type: image, data: bytes.toString('base64') } };
    return { kind: 'analyze:image', shown, size: bytes.length, block };
  }
  if (bytes.subarray(0, 5).toString('latin1') === '%PDF-') {
    const block: DocumentBlock = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: bytes.toString('base64') } };
    return { kind: 'analyze:file', shown, size: bytes.length, block };
  }
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  if (text.includes('\u0000') || text.includes('\uFFFD')) {
    throw new ToolError(`${shown} is neither an image (png, jpeg, gif, webp), a PDF nor UTF-8 text; analyze_media cannot send it.`);
  }
  if (bytes.length > MEDIA_LIMITS.textBytes)
    throw new ToolError(`${shown} is ${human(bytes.length)} of text; the limit is ${human(MEDIA_LIMITS.textBytes)}. Use read_file for parts of it.`);
  return textMedia(text, shown, bytes.length);
}

function textMedia(text: string, shown: string, size: number): Media {
  const block: TextBlock = { type: 'text', text: `<file name="${shown.replace(/"/g, "'")}">\n${text}\n</file>` };
  return { kind: 'analyze:file', shown, size, block };
}

function imageType(b: Buffer): string | undefined {
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47) return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 6 && /^GIF8[79]a$/.test(b.subarray(0, 6).toString('latin1'))) return 'image/gif';
  if (b.length >= 12 && b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return undefined;
}

const ATTACHMENT_TEXT = /^<attachment name="([^"]*)">\n([\s\S]*)\n<\/attachment>$/;

/** The conversation's attachments, newest first: images, and text documents as the router wraps them. */
function attachmentMedia(n: number, ctx: ToolContext): Media {
  if (!ctx.transcript) throw new ToolError('attachments are not reachable here; ask the user to put the file in the workspace.');
  const found: Media[] = [];
  for (const m of ctx.transcript()) {
    if (m.role !== 'user' || m.content.some((b) => b.type === 'tool_result')) continue;
    for (const b of m.content) {
      if (b.type === 'image') {
        const size = Math.floor((b.source.data.length * 3) / 4);
        found.push({ kind: 'analyze:image', shown: `attachment (image, ${b.source.media_type})`, size, block: b });
      } else if (b.type === 'text') {
        const t = ATTACHMENT_TEXT.exec(b.text);
        if (t) found.push(textMedia(t[2]!, `attachment ${t[1]!}`, Buffer.byteLength(t[2]!)));
      }
    }
  }
  found.reverse();
  const media = found[n - 1];
  if (!media) {
    throw new ToolError(
      found.length === 0
        ? 'this conversation has no attachments (older ones may have been summarized away); ask the user to send it again or put it in the workspace.'
        : `there are only ${found.length} attachment(s) in this conversation: ${found.map((f, i) => `${i + 1} = ${f.shown}`).join('; ')}.`,
    );
  }
  return { ...media, shown: `${media.shown} #${n}` };
}

function human(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1).replace(/\.0$/, '')} MB`;
}

function cut(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}
