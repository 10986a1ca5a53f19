// kubernetes-fluent-client (its own undici 8.10 and client-node 1.4) through a balancer: KFC takes
// no dispatcher, so its undici copy's Agent.prototype.dispatch is patched for the cluster's origin.
import { createRequire } from 'node:module';
import test from 'ava';
import { K8s, kind } from 'kubernetes-fluent-client';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { attachToFluentClient } from '../../src/index.ts';
import { until } from '../helpers/poll.ts';

interface Dispatching {
  prototype: { dispatch: unknown };
}
const kfcUndici = createRequire(import.meta.resolve('kubernetes-fluent-client'))('undici') as {
  Agent: Dispatching & (new (options: { connect: { ca: string } }) => { close(): Promise<void> });
  request(url: string, options: { dispatcher: unknown; headers?: Record<string, string> }): Promise<{ statusCode: number; body: { dump(): Promise<void> } }>;
};

let cluster: ApiserverCluster;

test.before(async () => {
  cluster = await ApiserverCluster.start();
  process.env.KUBECONFIG = await cluster.kubeconfigFile({ server: cluster.instances[0]!.url });
});

test.after.always(async () => {
  delete process.env.KUBECONFIG;
  await cluster?.close();
});

const configMaps = (verb: string) => cluster.instances.map((i) => i.requestsWhere({ verb, resource: 'configmaps' }).length);

test.serial('Get, Apply and Watch go through the balancer: spread over every instance, one TLS connection each (and one for watches)', async (t) => {
  const original = kfcUndici.Agent.prototype.dispatch;
  for (const instance of cluster.instances) instance.resetCounters();
  // No probes: KFC's undici 8.10 opens a second connection for a request that arrives while the
  // probe's connection to that instance is still being made (undici#4143), and this counts them.
  const attachment = await attachToFluentClient({ target: cluster.target, probe: false, hedge: false });
  t.true(attachment.attached);
  t.not(kfcUndici.Agent.prototype.dispatch, original);
  try {
    for (let i = 0; i < 3; i++) await K8s(kind.ConfigMap).Apply({ metadata: { name: `kfc-${i}`, namespace: 'default' }, data: { i: String(i) } }, { force: true });
    t.deepEqual(configMaps('patch'), [1, 1, 1]);
    for (let i = 0; i < 6; i++) t.deepEqual((await K8s(kind.ConfigMap).InNamespace('default').Get(`kfc-${i % 3}`)).data, { i: String(i % 3) });
    t.deepEqual(configMaps('get'), [2, 2, 2]);

    const seen: string[] = [];
    const watcher = K8s(kind.ConfigMap).InNamespace('default').Watch((cm, phase) => void seen.push(`${phase} ${cm.metadata?.name}`));
    await watcher.start();
    try {
      await until(() => cluster.instances.some((i) => i.counters.openWatches === 1), { what: 'the watch' });
      await K8s(kind.ConfigMap).Apply({ metadata: { name: 'watched', namespace: 'default' } });
      await until(() => seen.includes('ADDED watched'), { what: 'the event' });
    } finally {
      watcher.close();
    }
    for (const instance of cluster.instances) {
      // Watches have a connection of their own (see Origins.routeOf).
      const tls = instance.counters.tlsConnections;
      t.true(tls >= 1 && tls <= 2, `${instance.name}: ${tls} connections (short requests, watches), where KFC alone opens one per call`);
      t.true(instance.requestsWhere({ resource: 'configmaps' }).every((r) => r.user === 'sim-admin'));
    }

    // Another origin through KFC's undici is not balanced: it goes where it was sent.
    const other = cluster.instances[1]!;
    const before = other.counters.requests;
    // One or two already (the watch's own connection when the watch went there): one more now.
    const tlsBefore = other.counters.tlsConnections;
    const agent = new kfcUndici.Agent({ connect: { ca: certs.ca } });
    const res = await kfcUndici.request(`${other.url}/version`, { dispatcher: agent });
    t.is(res.statusCode, 200);
    await res.body.dump();
    await agent.close();
    t.is(other.counters.requests, before + 1);
    t.is(other.counters.tlsConnections, tlsBefore + 1);
  } finally {
    await attachment.detach();
  }
  t.is(kfcUndici.Agent.prototype.dispatch, original, 'detach puts KFC’s undici back as it was');
  for (const instance of cluster.instances) instance.resetCounters();
  await K8s(kind.ConfigMap).InNamespace('default').Get('kfc-0');
  t.deepEqual(configMaps('get'), [1, 0, 0], 'after detach KFC talks to the kubeconfig server itself');
});

test.serial('closing the balancer without detach lets KFC go its own way again', async (t) => {
  const attachment = await attachToFluentClient({ target: cluster.target, probe: false, hedge: false });
  await attachment.balancer!.close();
  for (const instance of cluster.instances) instance.resetCounters();
  await K8s(kind.ConfigMap).InNamespace('default').Get('kfc-0');
  t.deepEqual(configMaps('get'), [1, 0, 0]);
  await attachment.detach();
});
