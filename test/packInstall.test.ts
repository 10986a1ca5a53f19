// The published package as a user gets it (issue 28, items 1 and 5): `npm pack`, no install
// script in the tarball's package.json, then `npm install` of the tarball into a blank project and
// the library plus `kube-balancer/testing` used from an ES module, from CommonJS (require), and from
// TypeScript (`module: nodenext`, type-checked, then run), each sending real requests through the
// balancer to three simulated apiservers. Reads dist/ as `npm test` builds it (`npm run build` first).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..');
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];

/** The program each variant runs: three apiservers, a balancer over them, nine requests, the spread. */
const program = (imports: string, types = { apiservers: '', statuses: '' }): string => `${imports}

const apiservers${types.apiservers} = await startApiservers({ count: 3 });
const balancer = createBalancer({ origin: apiservers.server, target: apiservers.target, tls: { ca: apiservers.ca } });
try {
  const statuses${types.statuses} = [];
  for (let i = 0; i < 9; i++) {
    const res = await request(\`\${apiservers.server}/api/v1/namespaces/default\`, { dispatcher: balancer, headers: apiservers.authHeaders });
    await res.body.dump();
    statuses.push(res.statusCode);
  }
  const perServer = apiservers.servers.map((s) => s.instance.requestsWhere({ resource: 'namespaces' }).length);
  console.log(JSON.stringify({ statuses, perServer }));
} finally {
  await balancer.close();
  await apiservers.close();
}
`;

const ESM = program(`import { createBalancer } from 'kube-balancer';
import { startApiservers } from 'kube-balancer/testing';
import { request } from 'undici';`);

// CommonJS has no top-level await: the same program inside an async function.
const CJS = `const { createBalancer } = require('kube-balancer');
const { startApiservers } = require('kube-balancer/testing');
const { request } = require('undici');
(async () => {
${program('')}
})().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
`;

const TS = program(
  `import { createBalancer, type Balancer } from 'kube-balancer';
import { startApiservers, type Apiservers } from 'kube-balancer/testing';
import { request } from 'undici';
const typed: (b: Balancer) => void = () => {};
void typed;`,
  { apiservers: ': Apiservers', statuses: ': number[]' },
);

const TSCONFIG = {
  compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2023', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
  files: ['check.mts'],
};

async function npm(args: readonly string[], cwd: string): Promise<string> {
  const { stdout } = await exec('npm', args, { cwd, maxBuffer: 16 << 20, timeout: 150_000 });
  return stdout;
}

test.before(() => {
  if (!existsSync(join(root, 'dist/src/testing/index.js'))) throw new Error('dist/ is missing or old: run npm run build (npm test does) before this test');
});

test('the packed tarball: no install scripts; installed into a blank project it runs from ESM, CommonJS and TypeScript nodenext against three apiservers', async (t) => {
  t.timeout(180_000);
  const dir = await mkdtemp(join(tmpdir(), 'kube-balancer-pack-install-'));
  try {
    const [{ filename }] = JSON.parse(await npm(['pack', '--json', '--ignore-scripts', '--pack-destination', dir], root)) as [{ filename: string }];
    const tarball = join(dir, filename);

    const { stdout: packed } = await exec('tar', ['-xzOf', tarball, 'package/package.json']);
    const manifest = JSON.parse(packed) as { scripts?: Record<string, string>; exports: Record<string, unknown>; peerDependenciesMeta: Record<string, { optional?: boolean }> };
    t.deepEqual(INSTALL_SCRIPTS.filter((name) => manifest.scripts?.[name] !== undefined), [], 'no script runs at install');
    t.deepEqual(manifest.exports['./testing'], { types: './dist/src/testing/index.d.ts', default: './dist/src/testing/index.js' });
    t.true(manifest.peerDependenciesMeta.ws?.optional && manifest.peerDependenciesMeta.jsrsasign?.optional, 'ws and jsrsasign are optional peers');

    // A blank project as `npm init -y` makes it: CommonJS by default.
    const app = join(dir, 'app');
    await mkdir(app);
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    await npm(['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, 'undici@8', 'ws@8', 'jsrsasign@11', '@types/node@22'], app);
    const installed = JSON.parse(await readFile(join(app, 'node_modules/kube-balancer/package.json'), 'utf8')) as { version: string };
    t.truthy(installed.version);

    // Without the optional peers: a typed error naming them and the install command, not a loader error.
    await rename(join(app, 'node_modules/ws'), join(app, 'node_modules/ws.away'));
    await rename(join(app, 'node_modules/jsrsasign'), join(app, 'node_modules/jsrsasign.away'));
    const missing = "import('kube-balancer/testing').then((m) => m.startApiservers()).catch((e) => console.log(e.code + ' ' + e.message));";
    const { stdout: refusal } = await exec(process.execPath, ['--input-type=module', '-e', missing], { cwd: app, timeout: 60_000 });
    t.is(refusal.trim(), 'ERR_MISSING_PACKAGE kube-balancer/testing needs ws and jsrsasign, not installed here (optional peer dependencies of kube-balancer). Fix: npm install --save-dev ws jsrsasign');
    await rename(join(app, 'node_modules/ws.away'), join(app, 'node_modules/ws'));
    await rename(join(app, 'node_modules/jsrsasign.away'), join(app, 'node_modules/jsrsasign'));

    await writeFile(join(app, 'check.mjs'), ESM);
    await writeFile(join(app, 'check.cjs'), CJS);
    await writeFile(join(app, 'check.mts'), TS);
    await writeFile(join(app, 'tsconfig.json'), JSON.stringify(TSCONFIG));

    const tsc = await exec(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', app], { cwd: app, timeout: 120_000 }).catch((error: Error & { stdout?: string }) => ({ stdout: error.stdout || error.message, failed: true }));
    t.false('failed' in tsc, `tsc (nodenext): ${tsc.stdout}`);

    for (const file of ['check.mjs', 'check.cjs', 'check.mts']) {
      const { stdout } = await exec(process.execPath, [file], { cwd: app, timeout: 60_000 });
      const { statuses, perServer } = JSON.parse(stdout.trim().split('\n').at(-1)!) as { statuses: number[]; perServer: number[] };
      t.deepEqual(statuses, Array(9).fill(200), file);
      t.is(perServer.length, 3, file);
      t.true(perServer.every((n) => n > 0), `${file}: every apiserver served some: ${perServer.join('/')}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
