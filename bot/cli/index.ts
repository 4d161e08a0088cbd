/**
 * The command line. `runCli` returns an exit code instead of exiting, so tests drive the real paths.
 *
 * Contract: COMMANDS maps each command name to a loader of its module; only the command given is
 * loaded (`gatehouse --version` and `--help` load nothing beyond this file; `gatehouse run` attached
 * to a service loads only bot/headless/command.ts and what talks to the socket). This file imports
 * nothing at run time but node:fs: keep command modules behind their loader.
 * Adding a command: one line in COMMANDS, its lines in USAGE.
 *
 *   gatehouse [start] | serve   bot/service/start.ts (start order and signals are described there)
 *   gatehouse run ...           one message for scripts and CI (bot/headless/command.ts)
 *   gatehouse reload | approvals | conversations   bot/cli/operator.ts (approvals decide: bot/audit/)
 *   gatehouse audit verify | export | tail          bot/audit/command.ts
 *   gatehouse backup | policy check ...            bot/cli/backup.ts, bot/cli/policy.ts
 *   gatehouse doctor | init | config schema        bot/cli/doctor.ts, bot/cli/init.ts, bot/cli/config.ts
 *   gatehouse --version | --help | help
 */
import type { CliIO, Command } from './io.js';
import { gatehouseVersion } from './io.js';
import type { RunningBot } from '../service/start.js';

export type { CliIO, RunningBot };

/** Every command, by name, with the import of the module that has it. */
const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  start: () => import('../service/start.js').then((m) => (_args: string[], io: CliIO) => m.runBot('start', io)),
  serve: () => import('../service/start.js').then((m) => (_args: string[], io: CliIO) => m.runBot('serve', io)),
  run: () => import('../headless/command.js').then((m) => m.runCommand),
  acp: () => import('../acp/command.js').then((m) => m.acpCommand),
  reload: () => import('./operator.js').then((m) => (args: string[], io: CliIO) => m.reloadCommand(args, io)),
  approvals: () =>
    import('./operator.js').then(
      (m) => async (args: string[], io: CliIO) =>
        args[0] === 'decide' ? (await import('../audit/decide-command.js')).decideCommand(args.slice(1), io) : m.approvalsCommand(args, io),
    ),
  audit: () => import('../audit/command.js').then((m) => m.auditCommand),
  conversations: () => import('./operator.js').then((m) => m.conversationsCommand),
  backup: () => import('./backup.js').then((m) => m.backupCommand),
  policy: () => import('./policy.js').then((m) => m.policyCommand),
  doctor: () => import('./doctor.js').then((m) => m.doctorCommand),
  init: () => import('./init.js').then((m) => m.initCommand),
  config: () => import('./config.js').then((m) => m.configCommand),
  help: async () => helpCommand,
  '--help': async () => helpCommand,
  '-h': async () => helpCommand,
  version: async () => versionCommand,
  '--version': async () => versionCommand,
  '-v': async () => versionCommand,
};

const USAGE = `Usage:
  gatehouse [start]        run the bot: chat platforms enabled by their tokens; none set: a terminal chat
  gatehouse serve          run as a service (Docker, systemd): never opens the terminal chat; /healthz always
  gatehouse reload         make the running service re-read gatehouse.yaml (a bad file is rejected, the old one stays)
  gatehouse run [--agent NAME] [--conversation KEY] [--json] [--events CATS] [--interactive-stdin]
                [--approval-policy read-only|low-risk|high-risk] [--timeout SECONDS]
                [--with-image MODEL] [--no-stream] [--] "message"
                           one message to an agent for scripts and CI: the answer (or one JSON object) on
                           stdout; through the running service when there is one (see README "Headless runs")
  gatehouse acp [--agent NAME] [--approval-policy read-only|low-risk|high-risk]
                           an Agent Client Protocol server on stdio, for editors (see README "Editors (ACP)")
  gatehouse approvals [--json]
                           pending approvals and questions, with who can decide each
  gatehouse approvals decide ID approve|deny
                           decide as the host operator (agents with approvers.cli: [local])
  gatehouse audit verify [--dir D] | export --since <ISO|24h> [--json] | tail [-n N] [--follow]
                           check the hash-chained audit file, or read it
  gatehouse conversations [--limit N] [--json]
                           recent conversations: key, agent, last activity
  gatehouse backup FILE    an online, consistent copy of the store (while the bot runs)
  gatehouse policy check [--agent NAME] [--platform NAME] [--classify] [--json] -- "<command>"
                           explain what the gate would do with a shell command, without running it
  gatehouse doctor [--json] check bubblewrap and the box's limits, the store, the config, the tokens and
                           their API hosts, the HTTP port; prints what to fix (exit 1 when a check fails)
  gatehouse init [--telegram] [--slack] [--discord] [--telegram-user-id ID ...] [--slack-user-id ID ...]
                 [--discord-user-id ID ...]
                           write a commented gatehouse.yaml and .env here (never overwrites a file)
  gatehouse config schema  the JSON Schema of gatehouse.yaml (for editors)
  gatehouse --version
  gatehouse --help         (or: gatehouse help)

Settings come from .env and gatehouse.yaml in the current directory (see README.md).`;

const helpCommand: Command = (_args, io) => {
  io.stdout.write(USAGE + '\n');
  return 0;
};

const versionCommand: Command = (_args, io) => {
  io.stdout.write(`gatehouse ${gatehouseVersion()}\n`);
  return 0;
};

/** `running` is called once the command's module is loaded and the command has begun (bot/main.ts). */
export async function runCli(argv: string[], io: CliIO, hooks: { running?: () => void } = {}): Promise<number> {
  const [cmd = 'start', ...rest] = argv;
  const load = Object.hasOwn(COMMANDS, cmd) ? COMMANDS[cmd] : undefined;
  if (!load) {
    io.stderr.write(`Unknown command "${cmd}".\n${USAGE}\n`);
    return 2;
  }
  const command = await load();
  const exitCode = command(rest, io);
  hooks.running?.();
  return exitCode;
}

/** bot/service/start.ts's startBot, loaded on first use (tests and benches start a bot through here). */
export async function startBot(...args: Parameters<typeof import('../service/start.js').startBot>): Promise<RunningBot> {
  return (await import('../service/start.js')).startBot(...args);
}
