/**
 * Path families the denylist protects, each a documented table, and the path logic they share:
 * lexical normalisation (`~`, `..`, `/proc/<pid>/root`), glob matching against known secret paths
 * (`/etc/shado[w]`, `/e?c/sha*`), and symlinks made earlier in the same command (see `LinkMap`).
 */
import { MARK, displayField } from '../parse.js';

/** Lexical normalisation: $HOME, /root and /home/<user> become ~, `.`, `..` and `//` resolved. */
export function normalizePath(p: string, cwd = ''): string {
  let path = p;
  if (!path.startsWith('/') && !path.startsWith('~') && cwd !== '') path = `${cwd}/${path}`;
  path = path
    .replace(/^\/root(?=\/|$)/, '~')
    .replace(/^\/home\/[^/]+(?=\/|$)/, '~')
    .replace(/^~[A-Za-z_][\w-]*(?=\/|$)/, '~');
  const abs = path.startsWith('/');
  const out: string[] = [];
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..' && out[out.length - 1] !== '~') out.pop();
      else if (!abs) out.push('..');
      continue;
    }
    out.push(seg);
  }
  const joined = out.join('/');
  const norm = abs ? `/${joined}` : joined === '' ? '.' : joined;
  // /proc/<pid>/root is that process's view of `/`: /proc/self/root/etc/shadow is /etc/shadow.
  const viaRoot = /^\/proc\/[^/]+\/root(\/.*)?$/.exec(norm);
  if (viaRoot) return normalizePath(viaRoot[1] ?? '/');
  return norm;
}

/**
 * Every place a path may be. `~` has no known depth (/root, /home/<user>), so a `..` that climbs out of it
 * (`~/../../etc/shadow`, `$HOME/../alice/.ssh`) is resolved both ways; otherwise one normalised path.
 */
export function normalizePaths(p: string, cwd = ''): string[] {
  const n = normalizePath(p, cwd);
  if (n !== '~/..' && !n.startsWith('~/../')) return [n];
  const rest = n.slice(1);
  return [...new Set([normalizePath(lexical(`/root${rest}`)), normalizePath(lexical(`/home/_${rest}`))])];
}

/** `.` and `..` resolved in an absolute path, with no home mapping. */
function lexical(abs: string): string {
  const out: string[] = [];
  for (const seg of abs.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return `/${out.join('/')}`;
}

/** rm-style targets that must never be deleted: /, ~, . / .., anything above the start, a glob. */
export function isDangerousTarget(t: string): boolean {
  return normalizePaths(t).some(
    (p) => p === '/' || p === '~' || p === '.' || p === '..' || hasGlob(t) || hasGlob(p) || /^(\/|~)\*?$/.test(p) || /^(\.\.\/)+\.\.$/.test(p),
  );
}

/** Shell and REPL history files: changing, deleting or linking them away is 'history-tamper'. */
export const HISTORY_FILE = /(^|\/)(\.[\w-]*_?history|\.histfile|\.zhistory|\.lesshst|fish_history)$/;

/**
 * Secret files: reading, copying or sending any of them is refused ('secret-file'). Paths are matched
 * after normalisation (so `~` stands for any home directory).
 */
const SECRET_PATTERNS: readonly RegExp[] = [
  // system accounts and privileges
  /^\/etc\/(passwd|shadow|gshadow|sudoers|master\.passwd)(-|\.bak|\.old)?$/,
  /^\/etc\/sudoers\.d(\/|$)/,
  /(^|\/)(shadow|gshadow)$/,
  // SSH private keys (user and host), authorized keys
  /(^|\/)id_(rsa|dsa|ecdsa|ed25519)(_sk)?$/,
  /(^|\/)\.ssh\/[^/]*(id_[^/]*|_key|\.pem)$/,
  /^\/etc\/ssh\/ssh_host_[^/]*key$/,
  /(^|\/)authorized_keys2?$/,
  // GnuPG
  /(^|\/)\.gnupg\/(private-keys-v1\.d(\/|$)|secring\.gpg$|[^/]*\.key$)/,
  // credential stores of common tools
  /(^|\/)\.git-credentials$/,
  /(^|\/)[._]netrc$/,
  /(^|\/)\.pgpass$/,
  /(^|\/)\.my\.cnf$/,
  /(^|\/)\.kube\/config$/,
  /^~\/\.docker\/config\.json$/,
  /^~\/\.(npmrc|pypirc|vault-token)$/,
  /^~\/\.config\/gh\/hosts\.yml$/,
  /^~\/\.terraform\.d\/credentials\.tfrc\.json$/,
  /^~\/\.(s3cfg|boto|terraformrc|config\/hub|config\/rclone\/rclone\.conf|cargo\/credentials(\.toml)?|gem\/credentials)$/,
  /^~\/\.(password-store|local\/share\/keyrings)\/./,
  // cloud credentials: everything under these directories
  /(^|\/)\.aws\/./,
  /(^|\/)\.config\/gcloud\/./,
  /(^|\/)\.azure\/./,
  // another process's environment or memory (the bot's tokens live there); /proc/self is the command's own
  /^\/proc\/(?!(self|thread-self)\/)[^/]+\/(task\/[^/]+\/)?(environ|mem|maps|smaps|pagemap|(fd|cwd|map_files)(\/.*)?)$/,
  // Gatehouse's own secrets: a .env reached from outside the workspace, the SQLite store
  /^(\/|~\/|(\.\.\/)+)(.*\/)?\.env(\.(?!example$|sample$|template$|dist$)[\w.-]+)?$/,
  /(^|\/)gatehouse[^/]*\.sqlite(-wal|-shm|-journal)?$/,
];

/** Concrete secret paths that a glob is tested against (`cat ~/.ssh/id_*`, `cat /etc/sha*`, a /proc environ glob). */
const SECRET_EXAMPLES = [
  '/etc/passwd',
  '/etc/shadow',
  '/etc/gshadow',
  '/etc/sudoers',
  '/etc/master.passwd',
  '~/.ssh/id_rsa',
  '~/.ssh/id_ed25519',
  '~/.ssh/id_ecdsa',
  '~/.ssh/id_dsa',
  '~/.ssh/authorized_keys',
  '~/.aws/credentials',
  '~/.aws/config',
  '~/.gnupg/secring.gpg',
  '~/.gnupg/private-keys-v1.d/a.key',
  '~/.git-credentials',
  '~/.netrc',
  '~/.pgpass',
  '~/.my.cnf',
  '~/.kube/config',
  '~/.docker/config.json',
  '~/.npmrc',
  '~/.pypirc',
  '~/.config/gcloud/credentials.db',
  '~/.config/gcloud/application_default_credentials.json',
  '~/.azure/accessTokens.json',
  '/etc/ssh/ssh_host_rsa_key',
  '/etc/ssh/ssh_host_ed25519_key',
  '/etc/ssh/ssh_host_ecdsa_key',
  '/proc/1/environ',
  '/proc/1/mem',
  '/proc/1/maps',
  '~/.config/gh/hosts.yml',
  '~/.vault-token',
  '~/.s3cfg',
  '~/.cargo/credentials.toml',
  '~/.config/rclone/rclone.conf',
];

/** Directories that hold secrets: copying or archiving them copies the secrets. */
export const SECRET_DIRS =
  /^(~\/\.ssh|~\/\.gnupg|~\/\.aws|~\/\.azure|~\/\.kube|~\/\.docker|~\/\.config\/gcloud|~\/\.config\/gh|\/etc\/ssh|\/etc\/sudoers\.d|~\/\.gnupg\/private-keys-v1\.d)$/;

/** Raw disks and memory: reading them reads every file, writing them destroys the filesystem. */
export const RAW_DEVICE =
  /^\/dev\/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|loop\d|dm-\d|md\d|sr\d|nbd\d|zram\d|ram\d|rbd\d|mapper\/|disk\/|root$|mem$|kmem$|port$)/;
export const HARMLESS_DEV = /^\/dev\/(null|zero|full|random|urandom|stdin|stdout|stderr|tty\d*|pts\/\d+|fd\/\d+|shm(\/|$))$/;

/** Writing here makes something run later (at boot, login, a schedule, every shell): 'persistence'. */
export const PERSISTENCE_PATHS: readonly RegExp[] = [
  /^\/etc\/(cron[^/]*|anacrontab)(\/|$)/,
  /^\/var\/spool\/(cron|at|anacron)(\/|$)/,
  /^\/etc\/(profile|bash\.bashrc|bashrc|environment|zshrc|zprofile|zshenv|zlogin|rc\.local|ld\.so\.preload)$/,
  /^\/etc\/(profile\.d|zsh|init\.d|rc\d\.d|systemd|init|xdg\/autostart|update-motd\.d)(\/|$)/,
  /^~\/\.(bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zprofile|zshenv|zlogin|zlogout|kshrc|cshrc|tcshrc|mkshrc|xprofile|xinitrc|xsessionrc|pam_environment)$/,
  /^~\/\.(config\/fish|config\/autostart|config\/systemd|local\/share\/systemd|config\/environment\.d)(\/|$)/,
  /^~\/\.ssh\/(rc|config)$/,
  /^(~|\/)?(.*\/)?Library\/Launch(Agents|Daemons)(\/|$)/,
  /(^|\/)\.git\/hooks(\/|$)/,
];

/** Glob (with the evaluator's markers) to a regex; `[...]` becomes a character class. */
export function globRegex(field: string): RegExp {
  let re = '';
  const chars = [...field];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === MARK.STAR) re += '[^/]*';
    else if (c === MARK.QMARK) re += '[^/]';
    else if (c === MARK.BRACKET) {
      const close = chars.indexOf(']', i + 2);
      if (close < 0) {
        re += '[^/]';
        continue;
      }
      let body = chars.slice(i + 1, close).join('');
      const negate = body.startsWith('!') || body.startsWith('^');
      if (negate) body = body.slice(1);
      re += `[${negate ? '^/' : ''}${body.replace(/[\\\]^]/g, '\\$&').replace(/[\uE000-\uE005]/g, '')}]`;
      i = close;
    } else if (c === MARK.UNKNOWN) re += '.*';
    else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  try {
    return new RegExp(`^${re}$`);
  } catch {
    return /[\s\S]*/;
  }
}

export const hasGlob = (f: string): boolean => f.includes(MARK.STAR) || f.includes(MARK.QMARK) || f.includes(MARK.BRACKET);

/**
 * Symlinks made earlier in the same command (`ln -s /etc/shadow x; cat x`): link path -> target.
 * A path under a link (`ln -s /etc e; cat e/shadow`) resolves through it.
 */
export type LinkMap = Map<string, string>;

export function resolveLinks(p: string, links: LinkMap): string {
  let path = p;
  for (let guard = 0; guard < 8 && links.size > 0; guard++) {
    let changed = false;
    for (const [link, target] of links) {
      if (path === link || path.startsWith(`${link}/`)) {
        path = normalizePath(target + path.slice(link.length));
        changed = true;
        break;
      }
    }
    if (!changed) break;
  }
  return path;
}

/** Is this (possibly globbed) word a secret path? Returns the path shown in the reason, or null. */
export function secretPath(word: string, cwds: string[], links: LinkMap): string | null {
  // --file=/etc/shadow, file=@/etc/shadow (curl -F), @/etc/shadow (curl -d), if=/etc/shadow (dd)
  const eq = word.indexOf('=');
  const candidates = [word, ...(eq > 0 ? [word.slice(eq + 1)] : [])].map((c) => c.replace(/^@|^file:\/\/(localhost)?(?=\/)/, ''));
  for (const c of candidates) {
    const hit = c.startsWith('-') ? null : secretCandidate(c, cwds, links);
    if (hit) return hit;
  }
  return null;
}

function secretCandidate(candidate: string, cwds: string[], links: LinkMap): string | null {
  if (candidate === '' || candidate.startsWith(MARK.PSUB)) return null;
  for (const p of cwds.flatMap((cwd) => normalizePaths(candidate, cwd)).map((n) => resolveLinks(n, links))) {
    if (hasGlob(p)) {
      const re = globRegex(p);
      const hit = SECRET_EXAMPLES.find((ex) => re.test(ex));
      if (hit) return displayField(p);
    } else if (SECRET_PATTERNS.some((re) => re.test(p)) && !p.endsWith('.pub')) return displayField(p);
  }
  return null;
}

/** Does a (possibly globbed) path fall in one of these families? */
export function pathMatches(word: string, cwds: string[], links: LinkMap, families: readonly RegExp[], examples: readonly string[] = []): string | null {
  for (const p of cwds.flatMap((cwd) => normalizePaths(word, cwd)).map((n) => resolveLinks(n, links))) {
    if (families.some((re) => re.test(p))) return displayField(p);
    if (hasGlob(p)) {
      const re = globRegex(p);
      if (examples.some((ex) => re.test(ex))) return displayField(p);
    }
  }
  return null;
}
