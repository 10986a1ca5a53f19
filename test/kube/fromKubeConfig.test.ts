// What a kubeconfig says about TLS and credentials, honoured as client-node honours it, on every
// endpoint: tokens, client certificates (an exec plugin's, rotating), tls-server-name, an IP
// server, insecure-skip-tls-verify, in-cluster config; proxy-url is not attached.
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import test from 'ava';
import * as undici from 'undici';
import { ApiserverCluster, KUBERNETES_SERVICE_IP, type KubeconfigOptions } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { BalancerError, attachToKubeConfig, attachmentOf, fromKubeConfig, type KubeBalancerOptions } from '../../src/index.ts';
import { until } from '../helpers/poll.ts';

let cluster: ApiserverCluster;
let tmp: string;

test.before(async () => {
  cluster = await ApiserverCluster.start();
  tmp = await mkdtemp(join(tmpdir(), 'kube-balancer-kc-'));
});

test.after.always(async () => {
  await cluster?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

function kubeConfig(options: KubeconfigOptions = {}): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig(options));
  return kc;
}

/** Attaches, sends six requests (two per instance, no hedge to add one), detaches; returns what the instances saw of them. */
async function sixRequests(kc: KubeConfig, options: KubeBalancerOptions = {}) {
  for (const instance of cluster.instances) instance.resetCounters();
  const attachment = await attachToKubeConfig(kc, { target: cluster.target, probe: false, hedge: false, ...options });
  try {
    const core = kc.makeApiClient(CoreV1Api);
    for (let i = 0; i < 6; i++) await core.listNamespace();
  } finally {
    await attachment.detach();
  }
  const requests = cluster.instances.flatMap((i) => i.requestsWhere({ resource: 'namespaces' }));
  return { requests, perInstance: cluster.instances.map((i) => i.requestsWhere({ resource: 'namespaces' }).length) };
}

test.serial('token: the bearer token on every endpoint; an IP server is verified as that IP and sent no SNI; Host stays the server', async (t) => {
  const { requests, perInstance } = await sixRequests(kubeConfig());
  t.deepEqual(perInstance, [2, 2, 2]);
  for (const r of requests) t.like(r, { user: 'sim-admin', authMethod: 'token', sni: false, host: cluster.instances[0]!.authority, status: 200 });
});

test.serial('client certificate: presented to every endpoint, no Authorization header', async (t) => {
  const { requests, perInstance } = await sixRequests(kubeConfig({ user: 'client-cert' }));
  t.deepEqual(perInstance, [2, 2, 2]);
  for (const r of requests) t.like(r, { user: 'kube-balancer-test', authMethod: 'client-certificate', authorization: undefined, status: 200 });
});

test.serial('tls-server-name: sent as SNI to every endpoint and verified', async (t) => {
  const { requests } = await sixRequests(kubeConfig({ tlsServerName: 'kubernetes.default.svc' }));
  t.is(requests.length, 6);
  for (const r of requests) t.like(r, { sni: 'kubernetes.default.svc', status: 200 });
  const wrong = kubeConfig({ tlsServerName: 'other.example' });
  const error = await t.throwsAsync(sixRequests(wrong, { maxAttempts: 1 }));
  t.regex(`${error.message} ${String((error.cause as Error | undefined)?.message)}`, /ERR_TLS_CERT_ALTNAME_INVALID|other\.example/);
});

test.serial('the in-cluster server https://10.96.0.1:443: each apiserver is verified against the Service IP in its certificate', async (t) => {
  const kc = kubeConfig({ server: `https://${KUBERNETES_SERVICE_IP}:443` });
  // Loopback only: the Service IP is never dialled (no last resort); the instances are the target.
  const { requests } = await sixRequests(kc, { bootstrap: { lastResort: false } });
  t.is(requests.length, 6);
  for (const r of requests) t.like(r, { sni: false, host: KUBERNETES_SERVICE_IP, status: 200 });
});

test.serial('insecure-skip-tls-verify: no verification, as the kubeconfig says; without it and without a CA, nothing connects', async (t) => {
  const { requests } = await sixRequests(kubeConfig({ insecure: true }));
  t.is(requests.length, 6);
  const balancer = await fromKubeConfig(kubeConfig({ insecure: true }), { target: cluster.target, probe: false });
  t.like(balancer.endpoints()[0], { state: 'ready' });
  await balancer.close();

  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig().replace(/ {4}certificate-authority-data: .*\n/, ''));
  await t.throwsAsync(sixRequests(kc, { maxAttempts: 1 }));
});

test.serial('an endpoint whose certificate does not verify gets no request, and no credentials: the others serve', async (t) => {
  const impostor = await cluster.addInstance('127.0.0.5', { tls: certs.foreign });
  try {
    const { perInstance } = await sixRequests(kubeConfig(), { target: `${cluster.target},${impostor.authority}` });
    t.is(perInstance.reduce((a, b) => a + b, 0), 6);
    t.is(impostor.requests.length, 0, 'the TLS handshake failed before any HTTP');
    t.true(impostor.counters.tcpConnections > 0);
  } finally {
    await cluster.removeInstance(impostor);
  }
});

test.serial('proxy-url, or a server that is not https: not attached, with a warning; the KubeConfig is untouched', async (t) => {
  const warnings: Error[] = [];
  const onWarning = (w: Error): void => void warnings.push(w);
  process.on('warning', onWarning);
  try {
    const kc = kubeConfig({ proxyUrl: 'http://127.0.0.1:1' });
    const before: unknown = Reflect.get(kc, 'applySecurityAuthentication');
    const attachment = await attachToKubeConfig(kc, { target: cluster.target });
    t.false(attachment.attached);
    t.is(attachment.balancer, undefined);
    t.regex(attachment.reason ?? '', /proxy-url http:\/\/127\.0\.0\.1:1.*bypass the proxy/);
    t.true(Reflect.get(kc, 'applySecurityAuthentication') === before, 'untouched');
    t.is(attachmentOf(kc), undefined);
    await until(() => warnings.some((w) => w.name === 'KubeBalancerWarning' && /proxy-url/.test(w.message)), { what: 'the process warning' });
    await attachment.detach();
    const error = await t.throwsAsync(fromKubeConfig(kc), { instanceOf: BalancerError });
    t.is(error.code, 'ERR_KUBECONFIG');

    // A plain http: server (kubectl proxy) has nothing to balance, however its scheme is spelt.
    for (const server of ['http://127.0.0.1:1', 'HTTP://127.0.0.1:1', 'ws://127.0.0.1:1']) {
      const local = kubeConfig({ server, insecure: true });
      const notAttached = await attachToKubeConfig(local);
      t.false(notAttached.attached, server);
      t.regex(notAttached.reason ?? '', /is not https/);
      t.is((await t.throwsAsync(fromKubeConfig(local), { instanceOf: BalancerError })).code, 'ERR_KUBECONFIG');
    }
  } finally {
    process.off('warning', onWarning);
  }
});

test.serial('in-cluster config: the service-account token and CA from their files, the Service IP verified', async (t) => {
  const root = join(tmp, 'pod');
  const dir = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'ca.crt'), certs.ca);
  await writeFile(join(dir, 'token'), cluster.token);
  await writeFile(join(dir, 'namespace'), 'default');
  const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
  process.env.KUBERNETES_SERVICE_HOST = KUBERNETES_SERVICE_IP;
  process.env.KUBERNETES_SERVICE_PORT = '443';
  try {
    const kc = new KubeConfig();
    kc.loadFromCluster(root);
    t.is(kc.getCurrentCluster()?.server, `https://${KUBERNETES_SERVICE_IP}:443`);
    const { requests } = await sixRequests(kc, { bootstrap: { lastResort: false } });
    t.is(requests.length, 6);
    for (const r of requests) t.like(r, { user: 'sim-admin', authMethod: 'token', sni: false, host: KUBERNETES_SERVICE_IP });
  } finally {
    process.env.KUBERNETES_SERVICE_HOST = saved.host;
    process.env.KUBERNETES_SERVICE_PORT = saved.port;
    if (saved.host === undefined) delete process.env.KUBERNETES_SERVICE_HOST;
    if (saved.port === undefined) delete process.env.KUBERNETES_SERVICE_PORT;
  }
});

test.serial('an exec plugin rotates the client certificate: new connections present the new one, probes carry the credentials', async (t) => {
  const state = join(tmp, 'which-cert');
  const plugin = join(tmp, 'plugin.mjs');
  await writeFile(state, 'client');
  // An ExecCredential that expires at once, so client-node runs the plugin for every request.
  await writeFile(
    plugin,
    `import { readFileSync } from 'node:fs';
const pems = ${JSON.stringify({ client: certs.client, rotated: certs.rotated })};
const pem = pems[readFileSync(process.env.STATE, 'utf8').trim()];
process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
  status: { clientCertificateData: pem.cert, clientKeyData: pem.key, expirationTimestamp: '2000-01-01T00:00:00Z' } }));
`,
  );
  await chmod(plugin, 0o755);
  for (const instance of cluster.instances) instance.resetCounters();
  const kc = kubeConfig({ user: 'exec', exec: { command: process.execPath, args: [plugin], env: { STATE: state } } });
  const attachment = await attachToKubeConfig(kc, { target: cluster.target, probe: { intervalMs: 50 } });
  try {
    const core = kc.makeApiClient(CoreV1Api);
    for (let i = 0; i < 3; i++) await core.listNamespace();
    const lastUser = () => cluster.instances.map((i) => i.requestsWhere({ resource: 'namespaces' }).at(-1)?.user);
    t.deepEqual(lastUser(), ['kube-balancer-test', 'kube-balancer-test', 'kube-balancer-test']);
    t.deepEqual(cluster.instances.map((i) => i.counters.tlsConnections), [1, 1, 1]);

    await writeFile(state, 'rotated');
    for (let i = 0; i < 3; i++) await core.listNamespace();
    t.deepEqual(lastUser(), ['kube-balancer-rotated', 'kube-balancer-rotated', 'kube-balancer-rotated']);
    t.true(cluster.instances.every((i) => i.counters.tlsConnections >= 2), 'new connections with the new certificate');
    await until(() => cluster.instances.every((i) => i.requestsWhere({ path: '/readyz', user: 'kube-balancer-rotated' }).length > 0), { what: 'probes with the new certificate' });
  } finally {
    await attachment.detach();
  }
});

test.serial('detach restores client-node: a request after it is client-node’s own again (a new connection per request)', async (t) => {
  const kc = kubeConfig();
  const method = (): unknown => Reflect.get(kc, 'applySecurityAuthentication');
  const prototypeMethod = method();
  const attachment = await attachToKubeConfig(kc, { target: cluster.target, probe: false });
  await t.throwsAsync(attachToKubeConfig(kc), { message: /already attached/ });
  t.not(method(), prototypeMethod);
  await attachment.detach();
  t.is(method(), prototypeMethod);
  t.false(Object.hasOwn(kc, 'applySecurityAuthentication'));
  for (const instance of cluster.instances) instance.resetCounters();
  const core = kc.makeApiClient(CoreV1Api);
  for (let i = 0; i < 3; i++) await core.listNamespace();
  t.deepEqual(cluster.instances.map((i) => i.counters.tlsConnections), [3, 0, 0]);
});

test.serial('closing the balancer without detach also gives the KubeConfig back', async (t) => {
  const kc = kubeConfig();
  const attachment = await attachToKubeConfig(kc, { target: cluster.target, probe: false, hedge: false });
  await attachment.balancer!.close();
  for (const instance of cluster.instances) instance.resetCounters();
  await kc.makeApiClient(CoreV1Api).listNamespace();
  t.deepEqual(cluster.instances.map((i) => i.requestsWhere({ resource: 'namespaces' }).length), [1, 0, 0]);
  t.is(attachmentOf(kc), undefined);
});

test.serial('fromKubeConfig alone: a dispatcher for undici.request to the kubeconfig server', async (t) => {
  const kc = kubeConfig();
  const balancer = await fromKubeConfig(kc, { target: cluster.target, probe: false, hedge: false });
  try {
    for (const instance of cluster.instances) instance.resetCounters();
    for (let i = 0; i < 3; i++) {
      const res = await undici.request(`${cluster.instances[0]!.url}/api/v1/namespaces`, { dispatcher: balancer, headers: cluster.authHeaders });
      t.is(res.statusCode, 200);
      await res.body.dump();
    }
    t.deepEqual(cluster.instances.map((i) => i.requestsWhere({ resource: 'namespaces' }).length), [1, 1, 1]);
  } finally {
    await balancer.close();
  }
});
