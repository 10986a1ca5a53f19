// What `npm pack` publishes (issue 12, item 11): no private key or certificate, none of the tests,
// and of fixtures/ only what the demo and kube-balancer/testing import; and the demo of the installed package still runs,
// with a PKI it makes at run time. Reads dist/ as `npm test` builds it (`npm run build` first).
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import type { DemoSummary } from '../src/cli/demo/summary.ts';
import { CLI_TIMEOUT_MS, finished } from './helpers/cli.ts';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..');
const packageJson = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; peerDependencies: Record<string, string> };

/** A PEM block with a body: a key or certificate, not a string that merely names the header. */
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\r\n]+[A-Za-z0-9+/=\r\n]{40,}-----END \1-----/;
/** What the demo and kube-balancer/testing import from fixtures/: the simulator, the DNS server, the run-time PKI. */
const DEMO_FIXTURES = /^dist\/fixtures\/(apiserver\/(spdy\/)?[A-Za-z]+|dns\/DnsTestServer|certs\/(generate|index))\.(js|d\.ts)(\.map)?$/;

async function packedFiles(): Promise<string[]> {
  const { stdout } = await exec('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, maxBuffer: 16 << 20 });
  const [pack] = JSON.parse(stdout) as [{ files: Array<{ path: string }> }];
  return pack.files.map((file) => file.path);
}

test.before(() => {
  if (!existsSync(join(root, 'dist/src/index.js'))) throw new Error('dist/ is missing: run npm run build (npm test does) before this test');
});

test('npm pack holds no private key, no certificate, no test, and of fixtures/ only what the demo and the testing kit import', async (t) => {
  const files = await packedFiles();
  t.true(files.includes('dist/src/index.js') && files.includes('dist/src/cli/main.js'), 'the library and the CLI are in it');
  t.deepEqual(files.filter((path) => /\.(key|pem|crt|csr|p12|pfx|srl)$/i.test(path)), []);
  const withPem: string[] = [];
  for (const path of files) {
    const match = PEM_BLOCK.exec(await readFile(join(root, path), 'latin1'));
    if (match) withPem.push(`${path} (${match[1]})`);
  }
  t.deepEqual(withPem, [], 'no file carries a PEM key or certificate');
  t.deepEqual(files.filter((path) => /^(dist\/)?(test|bench|scripts|examples)\//.test(path) || path.startsWith('fixtures/')), []);
  const fixtures = files.filter((path) => path.startsWith('dist/fixtures/'));
  t.deepEqual(fixtures.filter((path) => !DEMO_FIXTURES.test(path)), [], 'only the fixtures the demo and the testing kit import');
  t.true(files.includes('dist/src/testing/index.js') && files.includes('dist/src/testing/index.d.ts'), 'kube-balancer/testing is in it');
  t.true(fixtures.includes('dist/fixtures/certs/generate.js'), 'the demo makes its PKI at run time');
});

/**
 * The packed tarball unpacked into `node_modules/kube-balancer` of an empty directory outside the
 * repository, beside links to the packages it declares (dependencies and peers) and the `extra`
 * ones: whatever else it tried to import would not be found, as in a user's install.
 */
async function install(dir: string, extra: readonly string[]): Promise<string> {
  const { stdout } = await exec('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: root, maxBuffer: 16 << 20 });
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
  const home = join(dir, 'app/node_modules/kube-balancer');
  await mkdir(home, { recursive: true });
  await exec('tar', ['-xzf', join(dir, filename), '-C', home, '--strip-components=1']);
  await link(dir, ['dns-packet', 'lru-cache', 'undici', ...extra]);
  return join(home, 'dist/src/cli/main.js');
}

async function link(dir: string, names: readonly string[]): Promise<void> {
  for (const name of names) {
    const to = join(dir, 'app/node_modules', name);
    if (existsSync(to)) continue;
    await mkdir(dirname(to), { recursive: true });
    await symlink(join(root, 'node_modules', name), to, 'dir');
  }
}

function run(main: string, dir: string, args: readonly string[], timeoutMs: number): ReturnType<typeof finished> {
  const child = spawn(process.execPath, [main, ...args], { cwd: join(dir, 'app'), env: { ...process.env, NO_COLOR: '1' } });
  return finished(child, timeoutMs, args);
}

test('the installed package: demo --help, a one-line message without the optional packages, and a short demo run with them', async (t) => {
  t.timeout(240_000);
  const dir = await mkdtemp(join(tmpdir(), 'kube-balancer-package-test-'));
  try {
    const demoPackages = ['@kubernetes/client-node', 'ws', 'jsrsasign'];
    t.deepEqual(Object.keys(packageJson.dependencies).sort(), ['dns-packet', 'lru-cache'], 'install() links every dependency');
    t.true('jsrsasign' in packageJson.peerDependencies, 'jsrsasign is an (optional) peer');
    const main = await install(dir, []);

    const help = await run(main, dir, ['demo', '--help'], CLI_TIMEOUT_MS);
    t.is(help.code, 0, help.stderr);
    t.regex(help.stdout, /^usage: kube-balancer demo/);
    t.regex(help.stdout, /npm install @kubernetes\/client-node ws jsrsasign/);

    const without = await run(main, dir, ['demo', '--duration', '5s', '--no-chart'], CLI_TIMEOUT_MS);
    t.is(without.code, 1);
    t.is(without.stderr.trim(), 'kube-balancer demo: the demo needs @kubernetes/client-node, ws and jsrsasign: npm install @kubernetes/client-node ws jsrsasign');

    await link(dir, demoPackages);
    const demo = await run(main, dir, ['demo', '--duration', '5s', '--json', '--no-chart'], 180_000);
    t.is(demo.code, 0, demo.stderr);
    const summary = JSON.parse(demo.stdout) as DemoSummary;
    const balanced = summary.clients.kubeBalancer;
    t.is(balanced.apiserversUsed, 3, JSON.stringify(balanced.perApiserver));
    t.true(balanced.calls > 0 && summary.clients.oneConnection.calls > 0, 'both clients ran the workload');
    t.is(balanced.failed, 0, balanced.errors.join('; '));
    t.is(summary.chart, null);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
