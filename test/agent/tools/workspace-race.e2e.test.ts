/**
 * Issue 18: host-side file tools must not follow what the box can change. A real swapper process
 * flips a workspace directory `d` with a symlink `l` to the bot's own folder (the canary: a `.env`
 * with the canary key, a file whose NAME is the canary, a PDF whose text is the canary), by
 * renameat2(RENAME_EXCHANGE) or by plain rename loops, while thousands of grep / find / ls /
 * read_file / read_pdf / analyze_media calls run against `d`, the root and files inside `d`.
 * Asserted: no output and no error message ever contains the canary (nothing outside was read or
 * listed), no call crashed, and the race really ran (the swapper went round; tools also succeeded).
 * Controls: the same swapper against a naive path-walking reader (what grep/find/ls did before:
 * readdir by path, open by path with O_NOFOLLOW on the last component only) DOES leak the canary,
 * so these tests can fail. One run puts the swapper inside the real box through execute_command.
 *
 * The swapper is a small C program compiled here with gcc (renameat2 needs it); without gcc the
 * exchange runs fall back to plain rename loops in Node and say so on the console.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { constants as fsc } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { analyzeMediaTool } from '../../../agent/tools/builtin/analyze-media.js';
import { executeCommandTool } from '../../../agent/tools/builtin/execute-command.js';
import { closeGrepWorkers, findTool, grepTool, lsTool, readFileTool } from '../../../agent/tools/builtin/files.js';
import { readPdfTool } from '../../../agent/tools/builtin/pdf.js';
import { prepareWorkspace } from '../../../agent/tools/sandbox/index.js';
import type { AnyTool } from '../../../agent/tools/types.js';
import { ToolError } from '../../../agent/tools/types.js';
import type { ModelClient, ModelRequest } from '../../../agent/model/types.js';
import { makeCtx } from './builtin-helpers.js';

const CANARY = `CANARY${process.pid}x${Date.now().toString(36)}`;
/** Tool calls per swapper mode, by tool (thousands in all). RACE_SCALE shrinks or grows them. */
const SCALE = Number(process.env.RACE_SCALE ?? 1);
// read_pdf parses in a fresh worker per call (seconds each on a loaded 2-core box): few calls, same open path.
const CALLS = { grep: 900, find: 500, ls: 500, read_file: 300, analyze_media: 300, read_pdf: 12 };
const CONTROL_TRIES = 5_000;
const SWAPPER_MAX_ROUNDS = 200_000_000;

const SWAPPER_C = String.raw`
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
/* swapper MODE DIR LINK STOPFILE MAXROUNDS: flips DIR (a directory) and LINK (a symlink) until
   STOPFILE exists or MAXROUNDS rounds ran; prints the rounds. MODE exchange: one renameat2
   RENAME_EXCHANGE per round. MODE rename: DIR->DIR.real, LINK->DIR, DIR->LINK, DIR.real->DIR. */
int main(int argc, char **argv) {
  if (argc != 6) return 2;
  int exchange = strcmp(argv[1], "exchange") == 0;
  const char *d = argv[2], *l = argv[3], *stop = argv[4];
  long max = atol(argv[5]), rounds = 0;
  char real[4096];
  snprintf(real, sizeof real, "%s.real", d);
  for (; rounds < max; rounds++) {
    if (exchange) {
      if (syscall(SYS_renameat2, AT_FDCWD, d, AT_FDCWD, l, RENAME_EXCHANGE) != 0) { perror("renameat2"); return 1; }
    } else {
      if (rename(d, real) || rename(l, d) || rename(d, l) || rename(real, d)) { perror("rename"); return 1; }
    }
    if ((rounds & 1023) == 0 && access(stop, F_OK) == 0) break;
  }
  /* Leave the directory at its name (an exchange round count may be odd). */
  if (exchange && (rounds & 1)) syscall(SYS_renameat2, AT_FDCWD, d, AT_FDCWD, l, RENAME_EXCHANGE);
  printf("%ld\n", rounds);
  return 0;
}
`;

/** Plain rename loop in Node, the fallback when gcc is missing (no RENAME_EXCHANGE from Node). */
const NODE_SWAPPER = `
const fs = require('node:fs');
const [, d, l, stop, max] = process.argv.slice(1);
let rounds = 0;
for (; rounds < Number(max); rounds++) {
  fs.renameSync(d, d + '.real'); fs.renameSync(l, d); fs.renameSync(d, l); fs.renameSync(d + '.real', d);
  if ((rounds & 255) === 0 && fs.existsSync(stop)) break;
}
process.stdout.write(String(rounds));
`;

let base: string;
let ws: string;
let botDir: string;
let swapperBin: string | undefined;
let swapper: ChildProcess | undefined;

async function pdfWith(text: string): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  doc.addPage().drawText(text, { x: 50, y: 700, font, size: 14 });
  return doc.save();
}

beforeAll(async () => {
  // Under /var/tmp like the sandbox tests (the box has its own /tmp); 0755 so the box user gets in.
  base = mkdtempSync('/var/tmp/gh-fsrace-');
  chmodSync(base, 0o755);
  ws = path.join(base, 'ws');
  botDir = path.join(base, 'bot');
  // The bot's folder: what a leak would show. The canary is in contents AND in a file name.
  mkdirSync(botDir);
  writeFileSync(path.join(botDir, '.env'), `ANTHROPIC_API_KEY=${CANARY}\n`);
  writeFileSync(path.join(botDir, `attach-token-${CANARY}`), `${CANARY}\n`);
  writeFileSync(path.join(botDir, 'report.pdf'), await pdfWith(`secret ${CANARY}`));
  mkdirSync(path.join(botDir, 'src'));
  writeFileSync(path.join(botDir, 'src', 'deep.txt'), `ANTHROPIC deep ${CANARY}\n`);
  // The workspace: `d` holds harmless files of the same names; `l` links to the bot's folder.
  mkdirSync(path.join(ws, 'd', 'src'), { recursive: true });
  writeFileSync(path.join(ws, 'd', '.env'), 'ANTHROPIC_API_KEY=inside-dummy\n');
  writeFileSync(path.join(ws, 'd', 'report.pdf'), await pdfWith('inside report'));
  writeFileSync(path.join(ws, 'd', 'src', 'deep.txt'), 'ANTHROPIC deep inside\n');
  writeFileSync(path.join(ws, 'top.txt'), 'ANTHROPIC top inside\n');
  writeFileSync(path.join(ws, 'top.pdf'), await pdfWith('top report'));
  symlinkSync(botDir, path.join(ws, 'l'));
  try {
    const src = path.join(base, 'swapper.c');
    writeFileSync(src, SWAPPER_C);
    swapperBin = path.join(base, 'swapper');
    execFileSync('gcc', ['-O2', '-o', swapperBin, src], { stdio: 'pipe' });
    chmodSync(swapperBin, 0o755);
  } catch {
    swapperBin = undefined;
    console.log('workspace-race: gcc is missing; the RENAME_EXCHANGE runs fall back to plain rename loops (Node)');
  }
}, 60_000);

afterAll(async () => {
  if (swapper && swapper.exitCode === null) swapper.kill('SIGKILL');
  await closeGrepWorkers();
  rmSync(base, { recursive: true, force: true });
});

type Mode = 'exchange' | 'rename';

/** Starts the swapper on the host (as the box would run it); resolves with its round count. */
function startSwapper(mode: Mode): Promise<number> {
  rmSync(path.join(ws, 'stop'), { force: true });
  const args = [mode, 'd', 'l', 'stop', String(SWAPPER_MAX_ROUNDS)];
  const child = swapperBin
    ? spawn(swapperBin, args, { cwd: ws, stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(process.execPath, ['-e', NODE_SWAPPER, ...args.slice(1)], { cwd: ws, stdio: ['ignore', 'pipe', 'inherit'] });
  swapper = child;
  // Lowest priority: it still swaps whenever a core is free (as a box process would), but a busy
  // suite's other tests keep their CPU (it would otherwise spin a whole core for the run).
  if (child.pid !== undefined) os.setPriority(child.pid, 19);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(Number(out.trim())) : reject(new Error(`swapper exited ${code}`))));
  });
}

function stopSwapper(): void {
  writeFileSync(path.join(ws, 'stop'), '');
}

/** A model client that answers with what it was sent: whatever analyze_media read shows in the output. */
const echoModel: ModelClient = {
  async complete(req: ModelRequest) {
    return {
      content: [{ type: 'text', text: JSON.stringify(req.messages) }],
      stopReason: 'end_turn',
      usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUSD: 0, costKnown: true },
    };
  },
};

interface Call {
  name: keyof typeof CALLS;
  tool: AnyTool;
  inputs: unknown[];
}

function calls(): Call[] {
  const media = analyzeMediaTool({ model: echoModel, companions: () => ({ 'analyze:file': [{ id: 'reader', label: 'Reader' }] }) });
  return [
    {
      name: 'grep',
      tool: grepTool() as AnyTool,
      inputs: [{ pattern: '^ANTHROPIC' }, { pattern: 'ANTHROPIC', path: 'd' }, { pattern: '.', path: 'd/.env' }, { pattern: 'deep', path: 'd/src' }],
    },
    { name: 'find', tool: findTool() as AnyTool, inputs: [{ pattern: '*' }, { pattern: '*', path: 'd' }, { pattern: '*', path: 'd/src' }] },
    { name: 'ls', tool: lsTool() as AnyTool, inputs: [{ path: 'd' }, {}, { path: 'd/src' }, { path: 'd/.env' }] },
    // Reads through `d` succeed only when every step of two fd-by-fd walks saw the directory, so each
    // read tool also reads a file at the root now and then: proof that it works at all under load.
    { name: 'read_file', tool: readFileTool() as AnyTool, inputs: [{ path: 'd/.env' }, { path: 'd/src/deep.txt' }, { path: 'top.txt' }] },
    {
      name: 'analyze_media',
      tool: media as AnyTool,
      inputs: [
        { path: 'd/.env', prompt: 'what is in it?' },
        { path: 'd/src/deep.txt', prompt: 'summarize' },
        { path: 'top.txt', prompt: 'summarize' },
      ],
    },
    { name: 'read_pdf', tool: readPdfTool() as AnyTool, inputs: [{ path: 'd/report.pdf' }, { path: 'd/report.pdf' }, { path: 'top.pdf' }] },
  ];
}

interface Tally {
  /** Lane durations in ms, for the console only (never asserted). */
  ms: Record<string, number>;
  ok: Record<string, number>;
  /** Successful calls whose path went through the swapped directory `d` (or walked the root). */
  okThroughD: number;
  refused: Record<string, number>;
  leaks: string[];
}

/**
 * Runs every call kind in its own lane, all lanes at once (the model's parallel calls), each lane
 * a fixed number of calls. Every output and every ToolError message is checked for the canary.
 */
async function hammer(scale: number): Promise<Tally> {
  const t: Tally = { ms: {}, ok: {}, okThroughD: 0, refused: {}, leaks: [] };
  const ctx = makeCtx(ws);
  await Promise.all(
    calls().map(async (c) => {
      const n = Math.max(1, Math.round(CALLS[c.name] * scale));
      t.ok[c.name] = 0;
      t.refused[c.name] = 0;
      const started = performance.now();
      for (let i = 0; i < n; i++) {
        const input = c.tool.input.parse(c.inputs[i % c.inputs.length]);
        let out: string;
        try {
          const prepared = c.tool.propose ? { proposal: await c.tool.propose(input, ctx) } : {};
          const r = await c.tool.execute(input, ctx, prepared);
          out = typeof r.content === 'string' ? r.content : JSON.stringify(r.content);
          t.ok[c.name]!++;
          if (!/top\./.test(JSON.stringify(input))) t.okThroughD++;
        } catch (err) {
          if (!(err instanceof ToolError)) throw err; // a crash is a failure, not a refusal
          out = err.message;
          t.refused[c.name]!++;
        }
        if (out.includes(CANARY)) t.leaks.push(`${c.name} ${JSON.stringify(input)}: ${out.slice(0, 300)}`);
      }
      t.ms[c.name] = Math.round(performance.now() - started);
    }),
  );
  return t;
}

/** What grep/find/ls did before issue 18: walk by path, open by path (O_NOFOLLOW on the file only). */
async function naiveReader(dir: string): Promise<string> {
  let out = '';
  const stack = [dir];
  while (stack.length > 0) {
    const d = stack.pop() as string;
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      out += `${p}\n`;
      if (e.isDirectory()) stack.push(p);
      else if (e.isFile()) {
        try {
          const fh = await open(p, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
          try {
            out += await fh.readFile('utf8');
          } finally {
            await fh.close();
          }
        } catch {
          /* vanished or swapped: skipped, as the old grep did */
        }
      }
    }
  }
  return out;
}

function report(label: string, t: Tally, rounds: number): void {
  console.log(
    `workspace-race ${label}: ${rounds} swap rounds; ok ${JSON.stringify(t.ok)}; refused ${JSON.stringify(t.refused)}; ok through d ${t.okThroughD}; lane ms ${JSON.stringify(t.ms)}; leaks ${t.leaks.length}`,
  );
}

function expectHeld(t: Tally, rounds: number): void {
  expect(t.leaks).toEqual([]);
  // The race really ran: the swapper went round, and the tools were not simply refusing everything.
  expect(rounds).toBeGreaterThan(1000);
  for (const name of Object.keys(CALLS)) expect(t.ok[name]).toBeGreaterThan(0);
  expect(t.okThroughD).toBeGreaterThan(0);
}

describe.each<Mode>(['exchange', 'rename'])('a swapper on the host (%s)', (mode) => {
  test('control: a naive path-walking reader leaks the canary under the same swapper', async () => {
    const rounds = startSwapper(swapperBin || mode === 'rename' ? mode : 'rename');
    let leakedAt = -1;
    try {
      for (let i = 0; i < CONTROL_TRIES && leakedAt < 0; i++) {
        if ((await naiveReader(ws)).includes(CANARY)) leakedAt = i;
      }
    } finally {
      stopSwapper();
    }
    console.log(`workspace-race control (${mode}): naive reader leaked at try ${leakedAt} (${await rounds} swap rounds)`);
    expect(leakedAt).toBeGreaterThanOrEqual(0);
  }, 120_000);

  test(`grep, find, ls, read_file, read_pdf and analyze_media never read or list outside`, async () => {
    const rounds = startSwapper(swapperBin || mode === 'rename' ? mode : 'rename');
    let t: Tally;
    try {
      t = await hammer(SCALE);
    } finally {
      stopSwapper();
    }
    const n = await rounds;
    report(mode, t, n);
    expectHeld(t, n);
  }, 300_000);
});

const hasBwrap = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'].some((p) => existsSync(p));

// The real attack: the swapper runs INSIDE the box, started through execute_command as an
// allowlisted `npm test` would, while the host-side tools run. Needs gcc (a binary the box can run).
(hasBwrap && process.getuid?.() === 0 ? test : test.skip)(
  'a swapper inside the real box (execute_command) cannot make host tools read outside',
  async () => {
    if (!swapperBin) {
      console.log('workspace-race box: gcc is missing, so there is no swapper binary for the box; the host runs above cover rename loops');
      return;
    }
    // The box sees only the system and the workspace (default-deny view), so the swapper binary must
    // be in the workspace, as a script the agent wrote would be.
    copyFileSync(swapperBin, path.join(ws, '.swapper'));
    chmodSync(path.join(ws, '.swapper'), 0o755);
    await prepareWorkspace(ws); // the box user (65534) owns the workspace, as at bot start
    rmSync(path.join(ws, 'stop'), { force: true });
    const shell = executeCommandTool({
      sandbox: { mode: 'bubblewrap', network: false, botFiles: [botDir], homes: [] },
      baseEnv: { PATH: '/usr/bin:/bin' },
    });
    const input = shell.input.parse({ command: `nice -n 19 ./.swapper exchange d l stop ${SWAPPER_MAX_ROUNDS}`, timeoutMs: 280_000 });
    const ctx = makeCtx(ws);
    const proposal = await shell.propose!(input, ctx);
    const boxed = shell.execute(input, ctx, { proposal });
    let t: Tally;
    let controlLeakedAt = -1;
    try {
      // Wait until the box's swapper really runs: `d` is seen as a symlink at least once.
      for (let i = 0; i < 100_000; i++) {
        const st = await readdir(ws, { withFileTypes: true });
        if (st.find((e) => e.name === 'd')?.isSymbolicLink()) break;
      }
      // Control: under the box's swapper, the old path walk on the host does leak.
      for (let i = 0; i < CONTROL_TRIES && controlLeakedAt < 0; i++) {
        if ((await naiveReader(ws)).includes(CANARY)) controlLeakedAt = i;
      }
      t = await hammer(SCALE / 3);
    } finally {
      stopSwapper();
    }
    const out = String((await boxed).content);
    const rounds = Number(/--- stdout ---\n(\d+)/.exec(out)?.[1] ?? 0);
    report('box', t, rounds);
    console.log(`workspace-race box control: naive reader leaked at try ${controlLeakedAt}`);
    expect(controlLeakedAt).toBeGreaterThanOrEqual(0);
    expectHeld(t, rounds);
  },
  300_000,
);
