/**
 * The box's new pieces on their own: the seccomp program (run through a small classic-BPF interpreter
 * here, per architecture), the limit notes of a tool result, and the launcher's descriptor closing. What
 * they stop in a real box is shown in test/agent/sandbox-limits.e2e.test.ts.
 */
import { openSync, closeSync } from 'node:fs';
import { launcherArgv, strayDescriptors } from '../../../agent/tools/sandbox/launcher.js';
import { DEFAULT_SANDBOX_LIMITS, limitNote, parseSize } from '../../../agent/tools/sandbox/limits.js';
import { seccompFilter } from '../../../agent/tools/sandbox/seccomp.js';

const X86_64 = 0xc000003e;
const AARCH64 = 0xc00000b7;
const I386 = 0x40000003;

/** Runs the filter on one seccomp_data (nr, arch, args' low words); returns the action word. */
function evaluate(nr: number, arch: number, args: number[] = []): number {
  const prog = seccompFilter();
  const data = Buffer.alloc(64);
  data.writeUInt32LE(nr >>> 0, 0);
  data.writeUInt32LE(arch >>> 0, 4);
  args.forEach((a, i) => data.writeUInt32LE(a >>> 0, 16 + 8 * i));
  let acc = 0;
  for (let pc = 0; pc < prog.length / 8; pc++) {
    const code = prog.readUInt16LE(pc * 8);
    const jt = prog.readUInt8(pc * 8 + 2);
    const jf = prog.readUInt8(pc * 8 + 3);
    const k = prog.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) acc = data.readUInt32LE(k);
    else if (code === 0x54) acc = (acc & k) >>> 0;
    else if (code === 0x06) return k;
    else if (code === 0x15) pc += acc === k ? jt : jf;
    else if (code === 0x35) pc += acc >= k ? jt : jf;
    else if (code === 0x45) pc += (acc & k) !== 0 ? jt : jf;
    else throw new Error(`unknown opcode ${code}`);
  }
  throw new Error('fell off the end');
}
const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;
const ENOSYS = 0x00050026;
const KILL = 0x80000000;

describe('the seccomp filter', () => {
  test('x86_64: setuid/setgid modes in chmod, fchmod, fchmodat, fchmodat2, open, openat, creat are EPERM; plain modes pass', () => {
    expect(evaluate(90, X86_64, [0, 0o4755])).toBe(EPERM); // chmod
    expect(evaluate(90, X86_64, [0, 0o755])).toBe(ALLOW);
    expect(evaluate(91, X86_64, [3, 0o2755])).toBe(EPERM); // fchmod
    expect(evaluate(268, X86_64, [0, 0, 0o6755])).toBe(EPERM); // fchmodat
    expect(evaluate(268, X86_64, [0, 0, 0o644])).toBe(ALLOW);
    expect(evaluate(452, X86_64, [0, 0, 0o4700])).toBe(EPERM); // fchmodat2
    expect(evaluate(2, X86_64, [0, 0o101, 0o4755])).toBe(EPERM); // open(O_CREAT|O_WRONLY, 04755)
    expect(evaluate(2, X86_64, [0, 0o101, 0o644])).toBe(ALLOW);
    expect(evaluate(257, X86_64, [0, 0, 0o101, 0o4755])).toBe(EPERM); // openat
    expect(evaluate(257, X86_64, [0, 0, 0, 0])).toBe(ALLOW);
    expect(evaluate(85, X86_64, [0, 0o2755])).toBe(EPERM); // creat
  });

  test('x86_64: device nodes refused, FIFOs allowed; openat2 and io_uring ENOSYS; x32 EPERM; other calls pass', () => {
    expect(evaluate(133, X86_64, [0, 0o020666])).toBe(EPERM); // mknod char
    expect(evaluate(259, X86_64, [0, 0, 0o060660])).toBe(EPERM); // mknodat block
    expect(evaluate(259, X86_64, [0, 0, 0o010644])).toBe(ALLOW); // FIFO
    expect(evaluate(437, X86_64)).toBe(ENOSYS);
    for (const nr of [425, 426, 427, 29, 319]) expect(evaluate(nr, X86_64)).toBe(ENOSYS);
    for (const nr of [194, 279, 437]) expect(evaluate(nr, AARCH64)).toBe(ENOSYS);
    expect(evaluate(0x40000000 + 90, X86_64, [0, 0o755])).toBe(EPERM);
    for (const nr of [0, 1, 59, 60, 231]) expect(evaluate(nr, X86_64, [0, 0o4755, 0o4755, 0o4755])).toBe(ALLOW);
  });

  test('aarch64 has its own numbers; any other architecture is killed (fail closed)', () => {
    expect(evaluate(52, AARCH64, [3, 0o4755])).toBe(EPERM); // fchmod
    expect(evaluate(53, AARCH64, [0, 0, 0o2755])).toBe(EPERM); // fchmodat
    expect(evaluate(56, AARCH64, [0, 0, 0o101, 0o4755])).toBe(EPERM); // openat
    expect(evaluate(33, AARCH64, [0, 0, 0o020666])).toBe(EPERM); // mknodat
    expect(evaluate(56, AARCH64, [0, 0, 0o101, 0o644])).toBe(ALLOW);
    // x86_64's chmod number means something else on aarch64 (90: capget): allowed there.
    expect(evaluate(90, AARCH64, [0, 0o4755])).toBe(ALLOW);
    expect(evaluate(15, I386, [0, 0o4755])).toBe(KILL);
    expect(evaluate(0, 0)).toBe(KILL);
  });
});

describe('limit notes', () => {
  const l = DEFAULT_SANDBOX_LIMITS;
  test('each limit is named with its key; an ordinary failure gets none', () => {
    expect(limitNote(l, { exitCode: 152, stderr: '' })).toMatch(/^killed: CPU limit .*300 s.*sandboxLimits\.cpuSeconds/);
    expect(limitNote(l, { exitCode: 1, stderr: 'head: error writing: No space left on device' })).toMatch(/^tmp full: .*512 MiB.*sandboxLimits\.tmpSize/);
    expect(limitNote(l, { exitCode: 1, stderr: 'tail: memory exhausted' })).toMatch(/^memory limit: .*1 GiB.*sandboxLimits\.memory/);
    expect(limitNote(l, { exitCode: 137, stderr: '' })).toMatch(/SIGKILL/);
    expect(limitNote(l, { exitCode: 1, stderr: 'grep: no match' })).toBeUndefined();
    expect(limitNote(l, { exitCode: 0, stderr: '' })).toBeUndefined();
  });

  test('sizes', () => {
    expect(parseSize('512M')).toBe(512 * 1024 * 1024);
    expect(parseSize('1.5G')).toBe(1.5 * 1024 ** 3);
    expect(parseSize(4096)).toBe(4096);
    expect(parseSize('lots')).toBeUndefined();
    expect(parseSize('0')).toBeUndefined();
    expect(parseSize('5T')).toBeUndefined();
  });
});

describe('the launcher', () => {
  test('finds a descriptor opened without close-on-exec, not the ones kept', () => {
    // Node opens with O_CLOEXEC: this one is not a stray.
    const fd = openSync('/dev/null', 'r');
    try {
      expect(strayDescriptors([])).not.toContain(fd);
    } finally {
      closeSync(fd);
    }
  });

  test('closes each stray descriptor before bwrap; above 9 it needs bash, and says so without it', () => {
    const low = launcherArgv({ sh: '/bin/sh', bash: undefined }, '/usr/bin/bwrap', ['--args', '3'], [5, 9]);
    expect(low.file).toBe('/bin/sh');
    expect(low.args[1]).toMatch(/oom_score_adj.*exec 5>&- 9>&- "\$0" "\$@"$/);
    expect(low.args.slice(2)).toEqual(['/usr/bin/bwrap', '--args', '3']);
    expect(launcherArgv({ sh: '/bin/sh', bash: '/bin/bash' }, '/usr/bin/bwrap', [], [251]).file).toBe('/bin/bash');
    expect(() => launcherArgv({ sh: '/bin/sh', bash: undefined }, '/usr/bin/bwrap', [], [251])).toThrow(/251.*needs bash/);
  });
});
