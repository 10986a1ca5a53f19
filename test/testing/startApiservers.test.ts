// kube-balancer/testing (issue 28, item 1): N simulated apiservers from the package, a kubeconfig
// and a target for them, per-server failures, and clear errors for wrong options and missing peers.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { request } from 'undici';
import { BalancerError } from '../../src/errors.ts';
import { createBalancer } from '../../src/index.ts';
import { requirePackages } from '../../src/testing/packages.ts';
import { generatePki, startApiservers, type Apiservers } from '../../src/testing/index.ts';

/** GET /api/v1/namespaces through `dispatcher` `n` times; the statuses. */
async function list(apiservers: Apiservers, dispatcher: ReturnType<typeof createBalancer>, n: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await request(`${apiservers.server}/api/v1/namespaces`, { dispatcher, headers: apiservers.authHeaders });
    await res.body.dump();
    statuses.push(res.statusCode);
  }
  return statuses;
}

test('three apiservers: a kubeconfig (string and 0600 file), a target; requests spread; crash, restart, drain, slow, black hole; close cleans up', async (t) => {
  t.timeout(60_000);
  const apiservers = await startApiservers();
  const balancer = createBalancer({ origin: apiservers.server, target: apiservers.target, tls: { ca: apiservers.ca }, probe: { intervalMs: 100 } });
  try {
    t.deepEqual(
      apiservers.servers.map((s) => [s.name, s.host, s.state]),
      [1, 2, 3].map((i) => [`apiserver-${i}`, `127.0.0.${i + 1}`, 'running']),
    );
    const port = apiservers.servers[0]!.port;
    t.is(apiservers.target, `static:///127.0.0.2:${port},127.0.0.3:${port},127.0.0.4:${port}`);
    t.is(apiservers.server, `https://127.0.0.2:${port}`);
    t.is(await readFile(apiservers.kubeconfigPath, 'utf8'), apiservers.kubeconfig);
    t.is((await stat(apiservers.kubeconfigPath)).mode & 0o777, 0o600);
    t.true(apiservers.kubeconfig.includes(`token: "${apiservers.token}"`) && apiservers.token.length >= 32, 'a random token, in the kubeconfig');

    t.deepEqual(await list(apiservers, balancer, 9), Array(9).fill(200));
    t.true(apiservers.servers.every((s) => s.instance.requestsWhere({ resource: 'namespaces' }).length > 0), 'every server served some');

    const [a, b, c] = apiservers.servers as [Apiservers['servers'][0], Apiservers['servers'][0], Apiservers['servers'][0]];
    await b.crash();
    t.is(b.state, 'crashed');
    t.deepEqual(await list(apiservers, balancer, 6), Array(6).fill(200), 'the balancer goes around the crashed one');
    await b.restart();
    t.is(b.state, 'running');

    const drained = c.drain({ drainMs: 100, timeoutMs: 1_000 });
    t.true(['terminating', 'draining'].includes(c.state));
    await drained;
    t.is(c.state, 'stopped');
    await c.restart();
    t.is(c.state, 'running');

    a.slow(50);
    t.is(a.instance.modes.latencyMs, 50);
    a.slow(0);
    c.blackHole();
    t.true(c.instance.modes.blackHole);
    c.blackHole(false);
    t.false(c.instance.modes.blackHole);
    t.true(a.requests > 0);
    t.throws(() => a.slow(-1), { code: 'ERR_INVALID_OPTION', message: /slow\(ms\)/ } as never);
  } finally {
    await balancer.close();
    await apiservers.close();
    await apiservers.close(); // twice is fine
  }
  t.false(existsSync(apiservers.kubeconfigPath), 'the kubeconfig file is gone');
  t.true(apiservers.servers.every((s) => s.state === 'closed'));
});

test('count beyond the default addresses: the generated certificate covers every host; kubeconfigPath is written, never overwritten, and removed', async (t) => {
  t.timeout(60_000);
  const dir = await mkdtemp(join(tmpdir(), 'kb-testing-'));
  try {
    const kubeconfigPath = join(dir, 'kubeconfig.yaml');
    const apiservers = await startApiservers({ count: 5, kubeconfigPath });
    const balancer = createBalancer({ origin: apiservers.servers[4]!.url, target: apiservers.target, tls: { ca: apiservers.ca } });
    try {
      t.is(apiservers.servers.at(-1)!.host, '127.0.0.6');
      t.is(apiservers.kubeconfigPath, kubeconfigPath);
      // Verified against the fifth server's IP: outside the default SANs, added by generatePki({ ips }).
      t.deepEqual(await list({ ...apiservers, server: apiservers.servers[4]!.url }, balancer, 5), Array(5).fill(200));
    } finally {
      await balancer.close();
      await apiservers.close();
    }
    t.false(existsSync(kubeconfigPath));

    await writeFile(kubeconfigPath, 'mine');
    await t.throwsAsync(startApiservers({ count: 1, kubeconfigPath }), { code: 'ERR_INVALID_OPTION', message: /options\.kubeconfigPath .* already exists/ } as never);
    t.is(await readFile(kubeconfigPath, 'utf8'), 'mine', 'an existing file is left alone');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('wrong options are ERR_INVALID_OPTION naming the field, before anything starts; a Promise is called one', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [{ pki: generatePki() }, /^options\.pki must be .*; got a Promise \(a missing await\?\)$/],
    [Promise.resolve({}), /^startApiservers options must be an object; got a Promise/],
    [{ count: '3' }, /^options\.count must be a whole number from 1 to 253; got "3"$/],
    [{ count: 0 }, /^options\.count/],
    [{ count: 2, hosts: ['127.0.0.2'] }, /^options\.count must match options\.hosts/],
    [{ hosts: ['localhost'] }, /^options\.hosts\[0\] must be an IP address/],
    [{ hosts: ['127.0.0.2', '127.0.0.2'] }, /^options\.hosts must not repeat/],
    [{ port: 70_000 }, /^options\.port/],
    [{ token: 'has space' }, /^options\.token/],
    [{ h2: 'yes' }, /^options\.h2 must be true or false/],
    [{ anonymous: 'some' }, /^options\.anonymous must be one of public-info, all, none/],
    [{ kubeconfig: 'x' }, /^options\.kubeconfig must be an object/],
    [{ pki: { ca: 'x' } }, /^options\.pki\.ca must be PEM text/],
    [{ cuont: 3 }, /^options\.cuont is not an option of startApiservers \(options: count, hosts/],
  ];
  for (const [options, message] of cases) {
    const error = await t.throwsAsync(startApiservers(options as never), { instanceOf: BalancerError });
    t.is(error?.code, 'ERR_INVALID_OPTION');
    t.regex(error?.message ?? '', message);
  }
  // The pki Promise of the first case, settled so it leaks nothing.
  await (cases[0]![0] as { pki: Promise<unknown> }).pki;
});

test('a missing optional peer is ERR_MISSING_PACKAGE naming it and the install command', async (t) => {
  const notFound = (name: string) => Object.assign(new Error(`Cannot find package '${name}' imported from /x.js`), { code: 'ERR_MODULE_NOT_FOUND' });
  const load = (missing: readonly string[]) => (name: string) => (missing.includes(name) ? Promise.reject(notFound(name)) : Promise.resolve());
  const both = await t.throwsAsync(requirePackages(['ws', 'jsrsasign'], 'kube-balancer/testing', load(['ws', 'jsrsasign'])), { instanceOf: BalancerError });
  t.is(both?.code, 'ERR_MISSING_PACKAGE');
  t.is(both?.message, 'kube-balancer/testing needs ws and jsrsasign, not installed here (optional peer dependencies of kube-balancer). Fix: npm install --save-dev ws jsrsasign');
  const one = await t.throwsAsync(requirePackages(['ws', 'jsrsasign'], 'kube-balancer/testing', load(['jsrsasign'])));
  t.regex(one?.message ?? '', /needs jsrsasign, .*Fix: npm install --save-dev jsrsasign$/);
  await t.notThrowsAsync(requirePackages(['ws', 'jsrsasign'], 'kube-balancer/testing'), 'both are installed here');
  // Another failure of the package (not its absence) is not disguised as one.
  const broken = await t.throwsAsync(requirePackages(['ws'], 'x', () => Promise.reject(new SyntaxError('bad'))));
  t.true(broken instanceof SyntaxError);
});
