/**
 * What a sandboxed command must not see: the bot's own files (config, .env, store) and the places where
 * credentials live on a host. Each is hidden behind an empty read-only tmpfs (a directory) or /dev/null
 * (a file) inside the box.
 *
 * Contract:
 * - `hiddenPaths(opts)` returns the real (symlink-resolved) paths of every mask target that EXISTS now,
 *   each tagged dir or file, deduplicated, with any path inside another masked directory dropped (the outer
 *   mask already hides it, and bwrap could not make a mount point in a read-only tmpfs).
 * - The credential table is a class, not a list of examples: key and token stores of ssh, gpg, cloud CLIs,
 *   container and cluster tools, package registries, databases, VCS hosts, password managers, and shell
 *   histories (secrets typed on command lines), for the bot user's HOME and for /root. Sockets that hand out
 *   more privilege than the sandbox user has (docker, containerd, podman, the bot user's runtime dir with
 *   its ssh/gpg agents and session bus) and orchestrator secret mounts (/run/secrets) are masked too.
 * - Paths under /tmp are skipped unless they lie in the workspace: the box gets its own empty /tmp.
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

/** Relative to a home directory: where credentials live. */
const HOME_CREDENTIALS: readonly string[] = [
  // ssh and gpg keys, agents' sockets
  '.ssh',
  '.gnupg',
  // VCS and code hosts
  '.git-credentials',
  '.config/git/credentials',
  '.config/gh',
  '.config/hub',
  '.config/glab-cli',
  // generic network credentials
  '.netrc',
  '.authinfo',
  '.authinfo.gpg',
  // containers and clusters
  '.docker',
  '.kube',
  '.config/containers/auth.json',
  '.minikube',
  '.talos',
  '.config/helm',
  // cloud CLIs
  '.aws',
  '.azure',
  '.config/gcloud',
  '.oci',
  '.config/doctl',
  '.s3cfg',
  '.boto',
  '.bluemix',
  '.aliyun',
  '.config/hcloud',
  '.config/scw',
  '.terraform.d',
  '.vault-token',
  '.config/rclone',
  '.config/op',
  '.fly',
  // databases
  '.pgpass',
  '.my.cnf',
  '.mylogin.cnf',
  '.config/pgcli',
  '.mongorc.js',
  '.dbshell',
  // package registries
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.pypirc',
  '.config/pip',
  '.gem/credentials',
  '.cargo/credentials',
  '.cargo/credentials.toml',
  '.m2/settings.xml',
  '.m2/settings-security.xml',
  '.gradle/gradle.properties',
  '.nuget/NuGet/NuGet.Config',
  '.composer/auth.json',
  '.config/composer/auth.json',
  // password stores and keyrings
  '.password-store',
  '.local/share/keyrings',
  '.config/Bitwarden CLI',
  // shell and REPL histories: secrets typed on command lines
  '.bash_history',
  '.zsh_history',
  '.histfile',
  '.local/share/fish/fish_history',
  '.python_history',
  '.node_repl_history',
  '.psql_history',
  '.mysql_history',
  '.sqlite_history',
  '.rediscli_history',
  '.lesshst',
  '.viminfo',
];

/** Absolute: sockets and secret mounts a sandbox user must not reach. */
const SYSTEM_SECRETS: readonly string[] = [
  '/var/run/docker.sock',
  '/run/docker.sock',
  '/run/containerd',
  '/run/podman',
  '/var/run/podman',
  '/run/secrets',
  '/var/run/secrets',
  '/run/credentials',
];

export interface HiddenPath {
  path: string;
  kind: 'dir' | 'file';
}

export interface HiddenPathsOptions {
  /** The bot's own files: config file, .env, store directory or files. Missing ones are ignored. */
  botFiles: readonly string[];
  /** Home directories whose credential files are hidden (default: the bot user's HOME and /root). */
  homes?: readonly string[];
  /** The workspace (real path): masks under /tmp are kept only when inside it. */
  workspace: string;
  /** The bot user's XDG runtime dir (default: $XDG_RUNTIME_DIR or /run/user/<uid>). */
  runtimeDir?: string;
}

function defaultHomes(): string[] {
  return [...new Set([homedir(), process.env.HOME ?? '', '/root'].filter((h) => h !== '' && path.isAbsolute(h)))];
}

function defaultRuntimeDir(): string | undefined {
  const fromEnv = process.env.XDG_RUNTIME_DIR;
  if (fromEnv && path.isAbsolute(fromEnv)) return fromEnv;
  return process.getuid ? `/run/user/${process.getuid()}` : undefined;
}

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

export function hiddenPaths(opts: HiddenPathsOptions): HiddenPath[] {
  const candidates: string[] = [...opts.botFiles, ...SYSTEM_SECRETS];
  for (const home of opts.homes ?? defaultHomes()) {
    for (const rel of HOME_CREDENTIALS) candidates.push(path.join(home, rel));
  }
  const runtime = opts.runtimeDir ?? defaultRuntimeDir();
  if (runtime) candidates.push(runtime);

  const found = new Map<string, HiddenPath>();
  for (const c of candidates) {
    if (!path.isAbsolute(c) || !existsSync(c)) continue;
    let real: string;
    let kind: HiddenPath['kind'];
    try {
      real = realpathSync(c);
      kind = statSync(real).isDirectory() ? 'dir' : 'file';
    } catch {
      continue; // vanished, or a parent we cannot read: nothing to hide that we could see either
    }
    if (real === '/' || (inside('/tmp', real) && !inside(opts.workspace, real))) continue;
    // The workspace itself is never masked; a mask containing it is applied around the workspace bind.
    if (real === opts.workspace) continue;
    found.set(real, { path: real, kind });
  }
  const dirs = [...found.values()].filter((h) => h.kind === 'dir');
  return (
    [...found.values()]
      // Inside the workspace a mask is mounted after the workspace bind, so an outer mask does not cover it.
      .filter((h) => inside(opts.workspace, h.path) || !dirs.some((d) => d.path !== h.path && inside(d.path, h.path)))
      .sort((a, b) => a.path.localeCompare(b.path))
  );
}
