// attachToFluentClient reroutes kubernetes-fluent-client's own agents only: the application's
// agents of the same undici copy — to the cluster's server itself, to another TLS server, the
// global dispatcher — go where they were sent and never present the kubeconfig's client certificate.
import { createRequire } from 'node:module';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import test from 'ava';
import { K8s, kind } from 'kubernetes-fluent-client';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { attachToFluentClient } from '../../src/index.ts';

interface KfcAgent {
  close(): Promise<void>;
}
interface KfcResponse {
  statusCode: number;
  body: { dump(): Promise<void> };
}
const kfcUndici = createRequire(import.meta.resolve('kubernetes-fluent-client'))('undici') as {
  Agent: new (options: { connect: Record<string, unknown> }) => KfcAgent;
  request(url: string, options: { dispatcher?: unknown }): Promise<KfcResponse>;
  fetch(url: string, init?: { dispatcher?: unknown }): Promise<{ status: number; text(): Promise<string> }>;
  getGlobalDispatcher(): unknown;
  setGlobalDispatcher(dispatcher: unknown): void;
};

let cluster: ApiserverCluster;

test.before(async () => {
  cluster = await ApiserverCluster.start();
  // A kubeconfig with a client certificate: the credential the application's agents must never get.
  process.env.KUBECONFIG = await cluster.kubeconfigFile({ user: 'client-cert' });
});

test.after.always(async () => {
  delete process.env.KUBECONFIG;
  await cluster?.close();
});

/** An https server that records the client certificate offered on each request (if any). */
async function tlsServer(): Promise<{ url: string; offered: string[]; close(): Promise<void> }> {
  const offered: string[] = [];
  const server = https.createServer({ ...certs.apiserver, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    offered.push(String(peer.subject?.CN ?? 'none'));
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    offered,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

test.serial('the application’s own agents, fetch with a dispatcher and the global dispatcher are never rerouted nor handed the client certificate', async (t) => {
  const other = await tlsServer();
  const first = cluster.instances[0]!;
  const attachment = await attachToFluentClient({ target: cluster.target, probe: false, hedge: false });
  const savedGlobal = kfcUndici.getGlobalDispatcher();
  const agents: KfcAgent[] = [];
  const agent = (connect: Record<string, unknown>): KfcAgent => {
    const made = new kfcUndici.Agent({ connect });
    agents.push(made);
    return made;
  };
  try {
    t.true(attachment.attached);
    for (const instance of cluster.instances) instance.resetCounters();
    for (let i = 0; i < 3; i++) await K8s(kind.Namespace).Get();
    t.deepEqual(
      cluster.instances.map((i) => i.requestsWhere({ resource: 'namespaces', user: 'kube-balancer-test' }).length),
      [1, 1, 1],
      'KFC’s own calls are balanced, with the kubeconfig’s certificate',
    );

    for (const instance of cluster.instances) instance.resetCounters();
    const url = `${first.url}/api/v1/namespaces`;
    // An agent with only the CA, to the cluster's own server: anonymous there, as without us.
    const anonymous = await kfcUndici.request(url, { dispatcher: agent({ ca: certs.ca }) });
    await anonymous.body.dump();
    // An agent with a certificate of its own: that one is presented.
    const own = await kfcUndici.request(url, { dispatcher: agent({ ca: certs.ca, ...certs.rotated }) });
    await own.body.dump();
    // fetch with a dispatcher of its own, and the global dispatcher.
    const fetched = await kfcUndici.fetch(url, { dispatcher: agent({ ca: certs.ca }) });
    await fetched.text();
    kfcUndici.setGlobalDispatcher(agent({ ca: certs.ca }));
    const global = await kfcUndici.fetch(url);
    await global.text();
    const seen = first.requestsWhere({ resource: 'namespaces' }).map((r) => [r.user, r.status]);
    t.deepEqual(seen, [['system:anonymous', 403], ['kube-balancer-rotated', 200], ['system:anonymous', 403], ['system:anonymous', 403]]);
    t.is(first.counters.tlsConnections, 4, 'each agent its own connection to the server it named');
    t.deepEqual(cluster.instances.slice(1).map((i) => i.requests.length), [0, 0], 'none went to another apiserver');

    // Another TLS server of the process: reached as before, no certificate offered.
    const res = await kfcUndici.request(`${other.url}/`, { dispatcher: agent({ ca: certs.ca }) });
    t.is(res.statusCode, 200);
    await res.body.dump();
    t.deepEqual(other.offered, ['none']);
  } finally {
    kfcUndici.setGlobalDispatcher(savedGlobal);
    await Promise.all(agents.map((a) => a.close()));
    await attachment.detach();
    await other.close();
  }
});
