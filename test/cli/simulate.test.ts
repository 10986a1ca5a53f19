// `kube-balancer simulate` (issue 28, item 1): starts apiservers, writes a kubeconfig, prints how to
// use it, serves real requests (kubectl, undici through the balancer) until SIGINT, then exits 0
// with the servers closed and the kubeconfig removed.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { request } from 'undici';
import { createBalancer } from '../../src/index.ts';
import { CLI_TIMEOUT_MS, finished, runCli, spawnCli } from '../helpers/cli.ts';

const exec = promisify(execFile);

/** Resolves with stdout once it contains `marker`; rejects after `timeoutMs`. */
function output(child: ReturnType<typeof spawnCli>, marker: string, timeoutMs: number): Promise<string> {
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${marker}" within ${timeoutMs} ms: ${text}`)), timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes(marker)) {
        clearTimeout(timer);
        resolve(text);
      }
    });
  });
}

const field = (yaml: string, name: string): string => JSON.parse(new RegExp(`${name}: (".*")`).exec(yaml)![1]!) as string;

test('simulate --apiservers 3 --kubeconfig PATH: kubectl and the balancer reach all three; SIGINT stops it with exit 0 and removes the file', async (t) => {
  // Each step has its own bound; the exit's is counted from the SIGINT, not from the spawn: under
  // coverage on a loaded machine, start-up and kubectl alone can take most of a minute.
  t.timeout(3 * CLI_TIMEOUT_MS);
  const dir = await mkdtemp(join(tmpdir(), 'kb-simulate-'));
  const path = join(dir, 'kubeconfig');
  const child = spawnCli(['simulate', '--apiservers', '3', '--kubeconfig', path]);
  let interrupted!: () => void;
  const done = finished(child, CLI_TIMEOUT_MS, ['simulate'], new Promise<void>((resolve) => (interrupted = resolve)));
  try {
    const stdout = await output(child, 'Ctrl-C stops them.', CLI_TIMEOUT_MS);
    t.true(stdout.includes(`kubeconfig: ${path}`), stdout);
    t.true(stdout.includes(`KUBECONFIG=${path} kubectl get ns`), 'the kubectl line');
    t.regex(stdout, /attachToKubeConfig\(kc, \{ target: "static:\/\/\//);
    const target = /^target: +(\S+)$/m.exec(stdout)![1]!;
    t.regex(target, /^static:\/\/\/127\.0\.0\.2:(\d+),127\.0\.0\.3:\1,127\.0\.0\.4:\1$/);

    const yaml = await readFile(path, 'utf8');
    const server = field(yaml, 'server');
    const ca = Buffer.from(field(yaml, 'certificate-authority-data'), 'base64').toString();
    const token = field(yaml, 'token');

    // kubectl, as the printed line says, where it is installed (a machine without it skips this step).
    const kubectl = await exec('kubectl', ['get', 'ns', '-o', 'name'], { env: { ...process.env, KUBECONFIG: path }, timeout: 60_000 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (kubectl) t.regex(kubectl.stdout, /^namespace\/default$/m, kubectl.stderr);
    else t.log('kubectl is not installed: that step is skipped');

    const balancer = createBalancer({ origin: server, target, tls: { ca } });
    try {
      const hosts = new Set<string>();
      for (let i = 0; i < 9; i++) {
        const res = await request(`${server}/api/v1/namespaces/default`, { dispatcher: balancer, headers: { authorization: `Bearer ${token}` } });
        t.is(res.statusCode, 200);
        await res.body.dump();
      }
      for (const e of balancer.stats().endpoints) if (e.requests > 0) hosts.add(e.address);
      t.is(hosts.size, 3, `requests spread over the three: ${[...hosts].join(', ')}`);
    } finally {
      await balancer.close();
    }
  } finally {
    child.kill('SIGINT');
    interrupted();
    const result = await done;
    t.is(result.code, 0, result.stderr);
    t.regex(result.stderr, /stopped; the kubeconfig is removed/);
    t.false(existsSync(path), 'the kubeconfig is removed');
    await rm(dir, { recursive: true, force: true });
  }
});

test('simulate refuses to overwrite a kubeconfig, and bad counts, with exit 2', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'kb-simulate-'));
  try {
    const path = join(dir, 'config');
    await writeFile(path, 'mine');
    const exists = await runCli(['simulate', '--kubeconfig', path]);
    t.is(exists.code, 2);
    t.is(exists.stderr, `kube-balancer simulate: --kubeconfig ${path}: the file exists, and simulate never overwrites one; pick a new path (see kube-balancer simulate --help)\n`);
    t.is(await readFile(path, 'utf8'), 'mine');
    for (const [n, message] of [
      ['0', /--apiservers must be a whole number of at least 1, got "0"/],
      ['300', /--apiservers must be 1–253, got 300/],
    ] as const) {
      const result = await runCli(['simulate', '--apiservers', n]);
      t.is(result.code, 2);
      t.regex(result.stderr, message);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
