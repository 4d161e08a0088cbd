/**
 * `gatehouse init [--telegram] [--slack] [--discord] [--telegram-user-id ID ...] [--slack-user-id ID ...]
 * [--discord-user-id ID ...]`: writes a commented gatehouse.yaml and .env into the current folder
 * for the platforms asked for (a user id implies its platform).
 *
 * Contract:
 * - Never overwrites: when gatehouse.yaml or .env exists, nothing is written, exit 1 naming the file.
 *   Both files are created exclusively (O_EXCL), .env 0600 (it will hold the secrets).
 * - The yaml loads with the real loader as written (no `<placeholder>`, which the loader refuses): the
 *   ids given become the agent's approvers and the access list of their platform; a platform without
 *   ids gets commented lines saying how to find them. The .env lists the variables of the platforms
 *   asked for, empty (an empty value counts as unset, so the start says which one is missing).
 * - An id of the wrong shape is bad usage (exit 2, the platform's hint), as is an unknown option.
 */
import { closeSync, existsSync, openSync, writeSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DESCRIPTORS } from '../../adapters/descriptors.js';
import { PLATFORMS, type Platform } from '../../adapters/types.js';
import type { CliIO } from './io.js';
import { DEFAULT_MODEL } from '../config/index.js';
import { messageOf } from '../../agent/log.js';

/** The chat platforms init offers: those whose descriptor says what to write (`setup`), in its order. */
type ChatPlatform = { [P in Platform]: (typeof DESCRIPTORS)[P] extends { setup: object } ? P : never }[Platform];
const CHAT_PLATFORMS = PLATFORMS.filter((p): p is ChatPlatform => 'setup' in DESCRIPTORS[p]);
const setupOf = (p: ChatPlatform) => DESCRIPTORS[p].setup;

const USAGE =
  `Usage: gatehouse init ${CHAT_PLATFORMS.map((p) => `[--${p}]`).join(' ')} ${CHAT_PLATFORMS.map((p) => `[--${p}-user-id ID ...]`).join(' ')}\n` +
  '  writes gatehouse.yaml and .env in the current folder (never over an existing file)';

interface InitRequest {
  platforms: Set<ChatPlatform>;
  ids: Record<ChatPlatform, string[]>;
}

function parseArgs(args: string[]): InitRequest | string {
  const req: InitRequest = { platforms: new Set(), ids: Object.fromEntries(CHAT_PLATFORMS.map((p) => [p, []])) as unknown as Record<ChatPlatform, string[]> };
  const names = CHAT_PLATFORMS.join('|');
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const flag = new RegExp(`^--(${names})$`).exec(a);
    if (flag) {
      req.platforms.add(flag[1] as ChatPlatform);
      continue;
    }
    const idFlag = new RegExp(`^--(${names})-user-id(?:=(.*))?$`).exec(a);
    if (!idFlag) return `Unknown argument ${JSON.stringify(a)}.`;
    const platform = idFlag[1] as ChatPlatform;
    const value = idFlag[2] ?? args[++i];
    if (value === undefined || value === '') return `${a} needs an id.`;
    for (const id of value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      if (!DESCRIPTORS[platform].ids.re.test(id)) return `${a} ${JSON.stringify(id)}: ${DESCRIPTORS[platform].ids.hint}.`;
      if (!req.ids[platform].includes(id)) req.ids[platform].push(id);
    }
    req.platforms.add(platform);
  }
  return req;
}

const list = (ids: readonly string[]): string => `[${ids.map((id) => JSON.stringify(id)).join(', ')}]`;

/** The gatehouse.yaml text. Exported for the test that loads it with the real loader. */
function initYaml(req: InitRequest, schemaRef?: string): string {
  const approvers = ['      # you, in the terminal chat (npm start with no platform token)', '      console: [local]'];
  const access: string[] = [];
  for (const p of CHAT_PLATFORMS) {
    if (!req.platforms.has(p)) continue;
    const ids = req.ids[p];
    if (ids.length > 0) {
      approvers.push(`      # only these ${p} users' taps decide approvals`, `      ${p}: ${list(ids)}`);
      access.push(`  ${p}:`, '    # may talk to the bot (DMs, and the groups it is allowed in)', `    users: ${list(ids)}`, `    # ${setupOf(p).moreAccess}`);
    } else {
      approvers.push(`      # ${p}: ["<id>"]  (${setupOf(p).idHelp})`);
      access.push(`  # ${p}:`, `  #   users: ["<id>"]  (nobody is admitted until listed; ${setupOf(p).idHelp})`, `  #   ${setupOf(p).moreAccess}`);
    }
  }
  const lines = [
    '# Gatehouse configuration, written by `gatehouse init`. Every key: gatehouse.example.yaml and',
    '# docs/configuration.md. Check it with `npx gatehouse doctor`; after a change, `npx gatehouse reload`.',
    '',
    'agents:',
    '  main:',
    `    model: ${DEFAULT_MODEL}`,
    '    # What it can do. Reading runs without asking; writing a file is above its tier, so an approver',
    '    # below gets a card with Approve once / Always / Deny.',
    '    tools: [read_file, ls, find, grep, write_file, edit_file, get_time, ask_user_question]',
    '    tier: read-only',
    '    # Add execute_command to run shell commands in the bubblewrap sandbox (apt-get install bubblewrap).',
    '    workspace: ./workspace',
    '    approvers:',
    ...approvers,
    '',
    '# Who may talk to the bot: nobody until listed.',
    // A header with only comments under it would read as `access: null`: then it is a comment too.
    access.some((l) => !l.trimStart().startsWith('#')) ? 'access:' : '# access:',
    ...(access.length > 0 ? access : ['#   telegram: { users: ["<id>"] }']),
    '',
  ];
  if (schemaRef) lines.unshift(`# yaml-language-server: $schema=${schemaRef}`);
  return lines.join('\n');
}

/** docs/gatehouse.schema.json of this installation, relative to `cwd` (editors resolve it from the file). */
function schemaRefFrom(cwd: string): string | undefined {
  for (const rel of ['../../docs/gatehouse.schema.json', '../../docs/gatehouse.schema.json']) {
    const file = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(file)) {
      const r = relative(cwd, file);
      return r.startsWith('.') || isAbsolute(r) ? r : `./${r}`;
    }
  }
  return undefined;
}

function initEnv(req: InitRequest): string {
  const lines = [
    '# Gatehouse environment, written by `gatehouse init` (every variable: .env.example). Keep it secret.',
    '# An empty value counts as unset. Any secret below may instead come from a file: NAME_FILE=/path',
    '# (Docker secrets, systemd credentials), e.g. ANTHROPIC_API_KEY_FILE=/run/secrets/anthropic_api_key.',
    '',
    '# Your Anthropic API key (or ANTHROPIC_BASE_URL for a compatible server that needs none).',
    'ANTHROPIC_API_KEY=',
    '',
    '# Where conversations and approvals are kept. Default: sqlite://./data/gatehouse.sqlite',
    '# GATEHOUSE_STORE=sqlite://./data/gatehouse.sqlite',
    '# HTTP server for webhooks, /healthz and /readyz. Defaults: 127.0.0.1 and 8080.',
    '# GATEHOUSE_HTTP_PORT=8080',
  ];
  for (const p of CHAT_PLATFORMS) if (req.platforms.has(p)) lines.push('', ...setupOf(p).envLines);
  return lines.join('\n') + '\n';
}

export async function initCommand(args: string[], io: CliIO): Promise<number> {
  const req = parseArgs(args);
  if (typeof req === 'string') {
    io.stderr.write(`${req}\n${USAGE}\n`);
    return 2;
  }
  const files = [
    { path: join(io.cwd, 'gatehouse.yaml'), text: initYaml(req, schemaRefFrom(io.cwd)), mode: 0o644 },
    { path: join(io.cwd, '.env'), text: initEnv(req), mode: 0o600 },
  ];
  const present = files.filter((f) => existsSync(f.path)).map((f) => f.path);
  if (present.length > 0) {
    io.stderr.write(
      `${present.join(' and ')} already exist${present.length === 1 ? 's' : ''}; nothing was written. Move ${present.length === 1 ? 'it' : 'them'} away or edit ${present.length === 1 ? 'it' : 'them'} by hand (gatehouse.example.yaml, .env.example).\n`,
    );
    return 1;
  }
  for (const f of files) {
    let fd: number;
    try {
      fd = openSync(f.path, 'wx', f.mode);
    } catch (err) {
      io.stderr.write(`could not create ${f.path}: ${(err as NodeJS.ErrnoException).code === 'EEXIST' ? 'it already exists' : messageOf(err)}\n`);
      return 1;
    }
    try {
      writeSync(fd, f.text);
    } finally {
      closeSync(fd);
    }
  }
  const platforms = [...req.platforms];
  io.stdout.write(
    `Wrote ${files[0]!.path} and ${files[1]!.path} (0600).\n` +
      `Next: put your ANTHROPIC_API_KEY${platforms.length > 0 ? ` and the ${platforms.join(', ')} token${platforms.length > 1 ? 's' : ''}` : ''} in .env, run \`npx gatehouse doctor\`, then \`npm start\`.\n` +
      platforms
        .filter((p) => req.ids[p].length === 0)
        .map(
          (p) =>
            `No ${p} user id given: ${setupOf(p).idHelp}, then add it under agents.main.approvers.${p} and access.${p}.users and run \`npx gatehouse reload\`.\n`,
        )
        .join(''),
  );
  return 0;
}
