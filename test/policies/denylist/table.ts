// Shared runner for the denylist suites by class: each class lists commands that must be refused (with
// the rule that must refuse them) and everyday look-alikes that must still pass. Real parser, nothing mocked.
import { analyzeCommand } from '../../../policies/shell/index.js';

export function denylistClass(name: string, block: ReadonlyArray<readonly [string, string]>, pass: readonly string[]): void {
  describe(`denylist class "${name}": refused`, () => {
    test.each(block.map(([c, r]) => [r, c]))('%s: %s', async (rule, command) => {
      const a = await analyzeCommand(command);
      expect(a.denied?.rule).toBe(rule);
      expect(a.denied?.reason).toContain(`'${rule}'`);
      expect(a.denied?.reason).toMatch(/approval cannot override/);
    });
  });
  describe(`denylist class "${name}": everyday look-alikes pass`, () => {
    test.each(pass.map((c) => [c]))('%s', async (command) => {
      const a = await analyzeCommand(command);
      expect(a.parsed).toBe(true);
      expect(a.denied).toBeNull();
    });
  });
  test(`class "${name}" has at least 10 new cases each way`, () => {
    expect(block.length).toBeGreaterThanOrEqual(10);
    expect(pass.length).toBeGreaterThanOrEqual(10);
  });
}
