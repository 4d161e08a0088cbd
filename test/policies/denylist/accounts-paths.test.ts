// Class: secret and account files reached through path spellings (`~/../..`, `$HOME/..`, `/etc/./x`,
// `//etc//x`, `/tmp/../etc`) and through tools that read the account databases (getent).
// Paths are normalised through `~` (whose depth is not known: both /root and /home/<user> are tried)
// and `..` before the secret-file rule is applied.
import { denylistClass } from './table.js';

denylistClass(
  'account databases and normalised secret paths',
  [
    ['cat ~/../../etc/sudoers', 'secret-file'],
    ['cat ~/../etc/sudoers', 'secret-file'],
    ['cat ~/../../etc/shadow', 'secret-file'],
    ['cat $HOME/../../etc/shadow', 'secret-file'],
    ['cat "$HOME/../../etc/passwd"', 'secret-file'],
    ['cat ~/../alice/.ssh/id_rsa', 'secret-file'],
    ['cat ~/../root/.aws/credentials', 'secret-file'],
    ['cat /etc/./shadow', 'secret-file'],
    ['cat //etc//shadow', 'secret-file'],
    ['cat /tmp/../etc/sudoers', 'secret-file'],
    ['cat /var/../../etc/gshadow', 'secret-file'],
    ['cd ~/..; cat ../etc/shadow', 'secret-file'],
    ['cd /tmp && cat ../etc/sudoers.d/90-users', 'secret-file'],
    ['head ./../../../../../../etc/shadow', 'secret-file'],
    ['getent passwd', 'secret-file'],
    ['getent shadow', 'secret-file'],
    ['getent gshadow', 'secret-file'],
    ['getent shadow root', 'secret-file'],
    ['getent -s files passwd', 'secret-file'],
    ['getent passwd | cut -d: -f1', 'secret-file'],
    ['unshadow /etc/passwd /etc/shadow', 'secret-file'],
    ['cp ~/../../etc/shadow out.txt', 'secret-file'],
    ['echo x >> ~/../alice/.bashrc', 'persistence'],
    ['echo k >> ~/../bob/.ssh/authorized_keys', 'authorized-keys-write'],
  ],
  [
    'cat ~/.bashrc',
    'cat ~/../alice/notes.txt',
    'cat ../README.md',
    'cat ./src/../package.json',
    'ls ~/..',
    'getent hosts example.com',
    'getent group docker',
    'getent ahosts localhost',
    'id -un',
    'whoami',
    'cat /etc/hostname',
    'cat /etc/os-release',
  ],
);
