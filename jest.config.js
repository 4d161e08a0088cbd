// Jest on ESM TypeScript: @swc/jest strips types (tsc --noEmit type-checks separately).
//
// Two selections:
// - `npm test` (test:unit): every test.
// - `npm run test:fast` (TEST_FAST=1): the unit tests alone. A file that starts a process, uses
//   PostgreSQL or drives a whole platform against a fake is an end-to-end test and is named
//   `*.e2e.test.ts` (or `e2e.test.ts`); in this selection PostgreSQL and the process helper refuse,
//   naming the rule, so a misnamed file shows up at once.
import { availableParallelism } from 'node:os';

const fast = process.env.TEST_FAST === '1';

export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...(fast ? ['e2e\\.test\\.ts$'] : [])],
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  // A bound, not a speed target: a test that starts processes on a busy 2-core machine can take 20 s.
  testTimeout: 60000,
  // Every selection: setup opens the checkout's parents for users the tests start processes as
  // (test/helpers/open-parents.mjs); outside TEST_FAST it also reserves a folder for PostgreSQL tests,
  // whose server starts on first use (test/helpers/postgres.ts). Teardown undoes both.
  globalSetup: '<rootDir>/test/helpers/global-setup.mjs',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.mjs',
  // One worker more than cores: most end-to-end files spend their time waiting on child processes
  // (a bot, a fake platform, PostgreSQL), so two workers on two cores leave a core idle much of the run.
  maxWorkers: Number(process.env.TEST_WORKERS ?? availableParallelism() + 1),
};
