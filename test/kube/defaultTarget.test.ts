// The target a kubeconfig gets when none is given: in a cluster the kubernetes-headless SRV records,
// else (or when they do not exist) the default/kubernetes EndpointSlice; the server is the last resort.
import { KubeConfig } from '@kubernetes/client-node';
import test from 'ava';
import { ApiserverCluster, RESOURCES } from '../../fixtures/apiserver/index.ts';
import { DnsTestServer } from '../../fixtures/dns/DnsTestServer.ts';
import { defaultTarget } from '../../src/kube/defaultTarget.ts';
import { fromKubeConfig } from '../../src/index.ts';
import { until } from '../helpers/poll.ts';

const SRV = '_https._tcp.kubernetes-headless.default.svc.cluster.local';

test('in a cluster (the server is KUBERNETES_SERVICE_HOST): the SRV records, then the EndpointSlice; outside: the EndpointSlice', (t) => {
  const inCluster = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };
  t.deepEqual(defaultTarget(new URL('https://10.96.0.1:443'), inCluster), [`dns+srv:///${SRV}.`, 'kubernetes:///default/kubernetes']);
  t.deepEqual(defaultTarget(new URL('https://[fd00::1]:443'), { KUBERNETES_SERVICE_HOST: 'fd00::1' }), [`dns+srv:///${SRV}.`, 'kubernetes:///default/kubernetes']);
  t.is(defaultTarget(new URL('https://api.example.com:6443'), inCluster), 'kubernetes:///default/kubernetes');
  t.is(defaultTarget(new URL('https://10.96.0.1:443'), {}), 'kubernetes:///default/kubernetes');
});

test.serial('in a cluster: kubernetes-headless SRV records when they exist; the EndpointSlice when DNS says there are none', async (t) => {
  const cluster = await ApiserverCluster.start();
  const dns = await DnsTestServer.start();
  const bootstrap = cluster.instances[0]!;
  const saved = process.env.KUBERNETES_SERVICE_HOST;
  // The test's stand-in for the Service IP: the kubeconfig server is the first instance.
  process.env.KUBERNETES_SERVICE_HOST = bootstrap.host;
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  try {
    for (const [i, instance] of cluster.instances.entries()) {
      dns.add(
        { name: SRV, type: 'SRV', ttl: 5, data: { priority: 0, weight: 33, port: instance.port, target: `10-0-0-${i}.kubernetes-headless.default.svc.cluster.local` } },
        { name: `10-0-0-${i}.kubernetes-headless.default.svc.cluster.local`, type: 'A', ttl: 5, data: instance.host },
      );
    }
    const viaDns = await fromKubeConfig(kc, { dns: { servers: [dns.address] }, probe: false });
    try {
      await until(() => viaDns.endpoints().filter((e) => e.source === 'dns+srv').length === 3, { what: 'the SRV records' });
      t.deepEqual(bootstrap.requestsWhere({ resource: 'endpointslices' }), [], 'the EndpointSlice is not needed');
    } finally {
      await viaDns.close();
    }

    dns.remove(SRV);
    const viaSlices = await fromKubeConfig(kc, { dns: { servers: [dns.address], attempts: 1 }, probe: false });
    try {
      await until(() => viaSlices.endpoints().filter((e) => e.source === 'kubernetes').length === 3, { what: 'the EndpointSlice' });
      t.true(dns.queries(`${SRV}.`).length + dns.queries(SRV).length > 0, 'DNS was asked first');
      t.true(bootstrap.requestsWhere({ resource: 'endpointslices', verb: 'list' }).length > 0);
      t.is(cluster.store.list(RESOURCES.endpointslices, 'default').items.length, 1);
    } finally {
      await viaSlices.close();
    }
  } finally {
    if (saved === undefined) delete process.env.KUBERNETES_SERVICE_HOST;
    else process.env.KUBERNETES_SERVICE_HOST = saved;
    await dns.close();
    await cluster.close();
  }
});
