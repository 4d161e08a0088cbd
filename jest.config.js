// Jest on ESM TypeScript: @swc/jest strips types (tsc --noEmit type-checks separately).
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testTimeout: 20000,
  // PostgreSQL tests: setup only reserves a folder; the server starts on first use (test/helpers/postgres.ts).
  globalSetup: '<rootDir>/test/helpers/postgres-global-setup.mjs',
  globalTeardown: '<rootDir>/test/helpers/postgres-global-teardown.mjs',
  maxWorkers: 2,
};
