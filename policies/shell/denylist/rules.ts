/**
 * Rule ids and the verdict shape. Every rule id with what it refuses: the reason text names the rule and
 * says that approval cannot override it. Ids are stable (tests and logs use them).
 */
export interface DenyVerdict {
  /** stable id, e.g. 'rm-recursive' */
  rule: string;
  /** says which rule matched and that approval cannot override it */
  reason: string;
}

const RULES: Readonly<Record<string, string>> = {
  unparseable: 'the command could not be parsed as shell',
  'unsupported-syntax': 'it uses shell syntax the policy cannot judge',
  'too-complex': 'it has too many possible expansions to judge',
  'dynamic-command': 'the command name is not known until it runs (a variable, substitution or glob)',
  'privilege-escalation': 'it runs something as another user (sudo, sudoedit, su, doas, pkexec, runuser, run0)',
  'no-preserve-root': '--no-preserve-root',
  'rm-dangerous-target': 'rm or a deletion tool (rimraf, del-cli, trash, ...; also run by npx, pnpm dlx, bunx, uvx, ...) targets /, ~, . / .. or a glob',
  'rm-recursive': 'rm is recursive',
  'rm-force': 'rm is forced',
  'recursive-delete': 'it deletes files in bulk (find -delete, find -exec rm, xargs rm, git clean -f, rsync --delete onto /, rimraf, del-cli)',
  'disk-format':
    'it formats, partitions or destroys a disk, filesystem, pool or volume (mkfs, fdisk, parted, zfs destroy, zpool destroy, btrfs subvolume delete, lvremove, ...)',
  'dd-device': 'dd writes to a device or reads /dev/zero or /dev/random',
  'device-write': 'it writes directly to a device file',
  'raw-device': 'it reads or writes a raw disk or memory device (/dev/sda, /dev/nvme0n1, /dev/mem)',
  'proc-write': 'it writes to /proc/sysrq-trigger or kernel settings (/proc/sys, sysctl -w)',
  'system-power': 'it shuts down, reboots or changes the runlevel',
  'remote-code-exec': 'it runs downloaded content (curl/wget piped, chained or process-substituted into an interpreter)',
  'decoded-exec': 'it pipes decoded content into a shell or interpreter',
  'pipe-to-interpreter': 'it pipes content into a shell or interpreter',
  'inline-code': 'it runs inline interpreter code (sh -c, python -c, node -e, eval, a here-string or heredoc to an interpreter)',
  'embedded-command': 'a tool runs a command the policy cannot know or judge (sed e, awk system(var), git core.hooksPath, vim :!, ...)',
  'env-injection': 'an environment variable makes programs load or run other code (LD_PRELOAD, BASH_ENV, PERL5OPT, ...)',
  'written-script': 'it runs a script that the same command wrote, whose content cannot be judged',
  'container-escape': 'it starts a container with host access (--privileged, / or the docker socket mounted, --pid=host)',
  'process-kill': 'it kills processes broadly (kill -9, kill -1, pkill, killall)',
  'fork-bomb': 'it is a fork bomb',
  'infinite-loop': 'it loops forever (while true)',
  'chmod-world-writable': 'chmod makes files world-writable (777, a+rwx, o+w)',
  'setuid-setgid': 'chmod sets the setuid or setgid bit',
  'chown-root': 'it gives files to root',
  mount: 'it mounts or unmounts a filesystem',
  firewall: 'it changes the firewall (iptables, nft, ufw)',
  'authorized-keys-write': 'it writes to an SSH authorized_keys file',
  'secret-file': "it reads or copies a secret file (/etc/shadow, SSH keys, cloud and tool credentials, another process's environment or memory)",
  'process-attach': 'it attaches to another process (gdb -p, strace -p, gcore) and can read its memory',
  'process-environment': "it shows other processes' environments (ps e, ps eww)",
  'disk-wipe': 'it destroys data irrecoverably (shred, srm, wipe, wipefs, blkdiscard, hdparm --security-erase)',
  truncate: 'it truncates files',
  'reverse-shell': 'it looks like a reverse shell (nc -e/-c, socat EXEC:, /dev/tcp)',
  crontab: 'it edits, replaces or removes the crontab',
  persistence: 'it makes something run later (at, batch, systemd-run, systemctl enable, launchctl, cron files, shell start-up files, git hooks)',
  'history-tamper': 'it clears, rewrites, deletes, links away or stops the shell history (history -c, > ~/.bash_history, HISTFILE=, unset HISTFILE)',
  'recursive-permissions':
    'it changes permissions, owners, attributes or ACLs recursively on /, a top-level directory, the home directory or the whole workspace',
  capabilities: 'it grants, removes or runs with Linux capabilities (setcap, capsh)',
  'container-entry':
    'it enters or creates another namespace, container, pod or machine (nsenter, unshare, chroot, machinectl shell, docker exec, kubectl exec, lxc-attach): what runs there is outside the sandbox',
  'user-management': 'it creates, changes or removes users or groups',
  passwd: 'it changes a password',
  visudo: 'it edits the sudoers file',
};

export function deny(rule: string, detail?: string): DenyVerdict {
  const what = RULES[rule] ?? rule;
  return {
    rule,
    reason: `Blocked by the shell denylist, rule '${rule}': ${what}${detail ? ` (${detail})` : ''}. This rule is absolute: approval cannot override it. Use a different approach.`,
  };
}
