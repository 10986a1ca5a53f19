// Tests run straight from TypeScript: Node >= 22.18 strips types itself.
export default {
  files: ['test/**/*.test.ts'],
  extensions: { ts: 'module' },
  timeout: '60s',
  concurrency: 2,
  workerThreads: false,
  environmentVariables: { NODE_ENV: 'test' },
};
