/**
 * The box's seccomp filter: classic BPF assembled here and handed to bwrap (`--seccomp FD`), applied to
 * the command after the box is set up (bwrap sets no_new_privs).
 *
 * Contract: inside the box
 * - chmod / fchmod / fchmodat / fchmodat2 with S_ISUID or S_ISGID in the mode fail with EPERM;
 * - open / openat / creat with S_ISUID or S_ISGID in the mode fail with EPERM (O_CREAT applies the mode:
 *   `open(f, O_CREAT, 04755)` would make a setuid file without any chmod);
 * - mknod / mknodat of a character or block device fail with EPERM (FIFOs and sockets are allowed);
 * - openat2 (its mode sits in a struct the filter cannot read) and io_uring (whose requests bypass
 *   seccomp) fail with ENOSYS, so programs fall back to the calls above;
 * - memfd_create and shmget fail with ENOSYS: their pages count in no rlimit and in no process's RSS, so
 *   a box could fill the host's memory with them and the OOM killer would pick the bot, not the box
 *   (POSIX shared memory in the sized /dev/shm still works);
 * - x86_64 and aarch64 are filtered with their own numbers; x32 calls on x86_64 fail with EPERM; any other
 *   architecture (i386 binaries on an x86_64 host) is killed: the filter fails closed.
 * Everything else is allowed. The post-command walk (strip.ts) removes what slips past anyway.
 */

const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
const X32_SYSCALL_BIT = 0x40000000;

const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;

const LD_W_ABS = 0x20;
const ALU_AND_K = 0x54;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;

const SUID_SGID = 0o6000;
const S_IFMT = 0o170000;
const S_IFCHR = 0o020000;
const S_IFBLK = 0o060000;

const OFF_NR = 0;
const OFF_ARCH = 4;
/** Low 32 bits of argument `i` (both architectures are little-endian); a mode is at most 16 bits. */
const argLow = (i: number): number => 16 + 8 * i;

type Check = { kind: 'setid'; arg: number } | { kind: 'device'; arg: number } | { kind: 'nosys' };

const X86_64: ReadonlyArray<[number, Check]> = [
  [2, { kind: 'setid', arg: 2 }], // open(path, flags, mode)
  [85, { kind: 'setid', arg: 1 }], // creat(path, mode)
  [90, { kind: 'setid', arg: 1 }], // chmod(path, mode)
  [91, { kind: 'setid', arg: 1 }], // fchmod(fd, mode)
  [133, { kind: 'device', arg: 1 }], // mknod(path, mode, dev)
  [257, { kind: 'setid', arg: 3 }], // openat(dirfd, path, flags, mode)
  [259, { kind: 'device', arg: 2 }], // mknodat(dirfd, path, mode, dev)
  [29, { kind: 'nosys' }], // shmget
  [319, { kind: 'nosys' }], // memfd_create
  [268, { kind: 'setid', arg: 2 }], // fchmodat(dirfd, path, mode)
  [425, { kind: 'nosys' }], // io_uring_setup
  [426, { kind: 'nosys' }], // io_uring_enter
  [427, { kind: 'nosys' }], // io_uring_register
  [437, { kind: 'nosys' }], // openat2
  [452, { kind: 'setid', arg: 2 }], // fchmodat2(dirfd, path, mode, flags)
];

const AARCH64: ReadonlyArray<[number, Check]> = [
  [33, { kind: 'device', arg: 2 }], // mknodat
  [194, { kind: 'nosys' }], // shmget
  [279, { kind: 'nosys' }], // memfd_create
  [52, { kind: 'setid', arg: 1 }], // fchmod
  [53, { kind: 'setid', arg: 2 }], // fchmodat
  [56, { kind: 'setid', arg: 3 }], // openat
  [425, { kind: 'nosys' }],
  [426, { kind: 'nosys' }],
  [427, { kind: 'nosys' }],
  [437, { kind: 'nosys' }], // openat2
  [452, { kind: 'setid', arg: 2 }], // fchmodat2
];

/** One instruction; jump targets are labels, resolved by `assemble`. */
interface Insn {
  code: number;
  k: number;
  jt?: string;
  jf?: string;
  label?: string;
}

function assemble(prog: Insn[]): Buffer {
  const at = new Map<string, number>();
  prog.forEach((ins, i) => ins.label && at.set(ins.label, i));
  const out = Buffer.alloc(prog.length * 8);
  prog.forEach((ins, i) => {
    const rel = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const to = at.get(label);
      if (to === undefined || to <= i || to - i - 1 > 255) throw new Error(`seccomp: bad jump to ${label} from ${i}`);
      return to - i - 1;
    };
    out.writeUInt16LE(ins.code, i * 8);
    out.writeUInt8(rel(ins.jt), i * 8 + 2);
    out.writeUInt8(rel(ins.jf), i * 8 + 3);
    out.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
  });
  return out;
}

function archSection(name: string, table: ReadonlyArray<[number, Check]>, x32: boolean): Insn[] {
  const p: Insn[] = [{ label: name, code: LD_W_ABS, k: OFF_NR }];
  if (x32) p.push({ code: JGE_K, k: X32_SYSCALL_BIT, jt: 'eperm' });
  table.forEach(([nr, check], i) => {
    const next = `${name}-${i + 1}`;
    p.push({ code: JEQ_K, k: nr, jf: next });
    if (check.kind === 'nosys') p.push({ code: RET_K, k: RET_ERRNO | ENOSYS });
    else if (check.kind === 'setid') {
      p.push({ code: LD_W_ABS, k: argLow(check.arg) }, { code: JSET_K, k: SUID_SGID, jt: 'eperm', jf: 'allow' });
    } else {
      p.push(
        { code: LD_W_ABS, k: argLow(check.arg) },
        { code: ALU_AND_K, k: S_IFMT },
        { code: JEQ_K, k: S_IFCHR, jt: 'eperm' },
        { code: JEQ_K, k: S_IFBLK, jt: 'eperm', jf: 'allow' },
      );
    }
    // The next rule starts with the syscall number reloaded (a check above changed the accumulator).
    p.push({ label: next, code: LD_W_ABS, k: OFF_NR });
  });
  p.push({ code: RET_K, k: RET_ALLOW });
  return p;
}

let compiled: Buffer | undefined;

/** The filter as bwrap reads it: an array of struct sock_filter (8 bytes each, host byte order). */
export function seccompFilter(): Buffer {
  compiled ??= assemble([
    { code: LD_W_ABS, k: OFF_ARCH },
    { code: JEQ_K, k: AUDIT_ARCH_X86_64, jt: 'x86_64' },
    { code: JEQ_K, k: AUDIT_ARCH_AARCH64, jt: 'aarch64' },
    { code: RET_K, k: RET_KILL_PROCESS },
    ...archSection('x86_64', X86_64, true),
    ...archSection('aarch64', AARCH64, false),
    { label: 'allow', code: RET_K, k: RET_ALLOW },
    { label: 'eperm', code: RET_K, k: RET_ERRNO | EPERM },
  ]);
  return compiled;
}
