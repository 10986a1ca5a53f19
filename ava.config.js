// Tests run straight from TypeScript: Node >= 22.18 strips types itself.
export default {
  files: ['test/**/*.test.ts'],
  extensions: { ts: 'module' },
  // ava's timeout is a silence between results, not a test's length; a slow CI machine once came within 1.2 s of 60.
  timeout: '120s',
  concurrency: 2,
  workerThreads: false,
  environmentVariables: { NODE_ENV: 'test' },
};
