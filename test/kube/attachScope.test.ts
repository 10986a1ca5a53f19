// attachToKubeConfig balances the attached cluster only: after kc.setCurrentContext() to another
// cluster, the real @kubernetes/client-node behaves as it does on its own, and nothing of that
// cluster (TLS material, credentials) reaches the balancer.
import net, { type AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import test from 'ava';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { balancerInternals } from '../../src/dispatcher/internals.ts';
import { attachToKubeConfig, type KubeAttachment } from '../../src/index.ts';
import { connectProxy } from '../helpers/connectProxy.ts';
import { until } from '../helpers/poll.ts';

const b64 = (pem: string): string => Buffer.from(pem).toString('base64');
const B_TOKEN = 'b-token-never-through-the-balancer';

/** A TCP server that records every byte it gets and answers nothing (`hangUp`: closes at once). */
async function listener(hangUp = false): Promise<{ port: number; received: () => string; close(): Promise<void> }> {
  let received = '';
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (hangUp) socket.destroy();
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    received: () => received,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The cluster's kubeconfig (context `simulator`) plus another context `name`. */
function withContext(cluster: ApiserverCluster, name: string, entry: { server: string; caData?: string; proxyUrl?: string; token?: string; certData?: string; keyData?: string }): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  const { server, caData, proxyUrl, ...user } = entry;
  kc.addCluster({ name: `${name}-cluster`, server, skipTLSVerify: false, ...(caData ? { caData } : {}), ...(proxyUrl ? { proxyUrl } : {}) });
  kc.addUser({ name: `${name}-user`, ...user });
  kc.addContext({ name, cluster: `${name}-cluster`, user: `${name}-user` });
  return kc;
}

/** What the request fails with, or `'ok'`. */
async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return (error as Error).message;
  }
}

async function attached(kc: KubeConfig, cluster: ApiserverCluster): Promise<KubeAttachment> {
  const attachment = await attachToKubeConfig(kc, { target: cluster.target, hedge: false, probe: { intervalMs: 50 } });
  if (!attachment.attached) throw new Error(attachment.reason);
  return attachment;
}

const pools = (attachment: KubeAttachment, cluster: ApiserverCluster) => balancerInternals(attachment.balancer!).tlsFor(new URL(cluster.instances[0]!.url)).tls;

test.serial('(a) another context with an http: server: client-node refuses it as it does alone; no byte, no token reaches it', async (t) => {
  const cluster = await ApiserverCluster.start();
  const plain = await listener(true);
  const entry = { server: `http://127.0.0.1:${plain.port}`, token: B_TOKEN };
  const kc = withContext(cluster, 'b', entry);
  const attachment = await attached(kc, cluster);
  try {
    const alone = withContext(cluster, 'b', entry);
    alone.setCurrentContext('b');
    const expected = await outcome(alone.makeApiClient(CoreV1Api).listNamespace());
    t.regex(expected, /HTTP protocol is not allowed/, 'client-node on its own');

    kc.setCurrentContext('b');
    t.is(await outcome(kc.makeApiClient(CoreV1Api).listNamespace()), expected);
    t.is(plain.received(), '', 'nothing sent in clear');
    t.false(cluster.instances.some((i) => i.requests.some((r) => r.authorization?.includes(B_TOKEN))), 'b’s token reached no apiserver');
  } finally {
    await attachment.detach();
    await plain.close();
    await cluster.close();
  }
});

test.serial('(b) another context with proxy-url goes through its proxy, as client-node alone does', async (t) => {
  const cluster = await ApiserverCluster.start();
  const proxy = await connectProxy();
  const other = cluster.instances[1]!;
  const kc = withContext(cluster, 'p', { server: other.url, caData: b64(certs.ca), proxyUrl: proxy.url, token: cluster.token });
  const attachment = await attached(kc, cluster);
  try {
    kc.setCurrentContext('p');
    const before = other.requestsWhere({ resource: 'namespaces' }).length;
    t.is(await outcome(kc.makeApiClient(CoreV1Api).listNamespace()), 'ok');
    t.deepEqual(proxy.tunnels, [other.authority], 'one tunnel, to p’s server');
    t.is(other.requestsWhere({ resource: 'namespaces' }).length, before + 1);
    t.is(cluster.instances.filter((i) => i !== other).flatMap((i) => i.requestsWhere({ resource: 'namespaces' })).length, 0, 'not balanced elsewhere');
  } finally {
    await attachment.detach();
    await proxy.close();
    await cluster.close();
  }
});

test.serial('(c) after another cluster’s requests and probe readings, back on the attached context: balanced, the pools hold only its CA', async (t) => {
  const cluster = await ApiserverCluster.start();
  const closed = await listener(true);
  // Another cluster with another CA and a client certificate: none of it may reach the pools.
  const kc = withContext(cluster, 'c', { server: `https://127.0.0.1:${closed.port}`, caData: b64(certs.foreignCa), certData: b64(certs.foreign.cert), keyData: b64(certs.foreign.key) });
  const attachment = await attached(kc, cluster);
  try {
    const core = kc.makeApiClient(CoreV1Api);
    t.is(await outcome(core.listNamespace()), 'ok');
    kc.setCurrentContext('c');
    const balancer = attachment.balancer!;
    const readings = cluster.instances.map((i) => i.requestsWhere({ path: '/readyz' }).length);
    // A request to c (its server hangs up: client-node's own error), then probes long enough for
    // the credentials to be read again (every second).
    t.not(await outcome(kc.makeApiClient(CoreV1Api).listNamespace()), 'ok');
    t.true(closed.received().length > 0, 'client-node dialled c itself');
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    await until(() => cluster.instances.every((i, k) => i.requestsWhere({ path: '/readyz' }).length > readings[k]! + 2), { what: 'probes after the switch' });
    const tls = pools(attachment, cluster);
    t.is(String(tls.ca), certs.ca, 'the attached cluster’s CA only');
    t.is(tls.cert, undefined, 'no client certificate of another cluster');
    t.true(
      cluster.instances.every((i) => i.requests.every((r) => r.clientCertificate === undefined)),
      'no apiserver saw c’s client certificate',
    );

    kc.setCurrentContext('simulator');
    for (const instance of cluster.instances) instance.resetCounters();
    for (let i = 0; i < 3; i++) t.is(await outcome(core.listNamespace()), 'ok');
    t.deepEqual(cluster.instances.map((i) => i.requestsWhere({ resource: 'namespaces' }).length), [1, 1, 1], 'balanced again');
    t.true(balancer.endpoints().every((e) => e.state !== 'ejected'));
  } finally {
    await attachment.detach();
    await closed.close();
    await cluster.close();
  }
});
