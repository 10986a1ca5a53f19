// CLIENT_LOAD_BALANCE: on, loadBalancedKubeConfig() gives an attached KubeConfig; off, exactly
// what client-node's own loadFromDefault() gives, down to the connections it opens.
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import test from 'ava';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { attachmentOf, loadBalancedKubeConfig } from '../../src/index.ts';
import { until } from '../helpers/poll.ts';

let cluster: ApiserverCluster;

test.before(async () => {
  cluster = await ApiserverCluster.start();
  process.env.KUBECONFIG = await cluster.kubeconfigFile();
});

test.after.always(async () => {
  delete process.env.KUBECONFIG;
  await cluster?.close();
});

function setSwitch(value: string | undefined, target?: string): void {
  if (value === undefined) delete process.env.CLIENT_LOAD_BALANCE;
  else process.env.CLIENT_LOAD_BALANCE = value;
  if (target === undefined) delete process.env.CLIENT_LOAD_BALANCE_TARGET;
  else process.env.CLIENT_LOAD_BALANCE_TARGET = target;
}

/** Six requests; what every instance saw of them: its requests (method, path, user) and its TLS connections. */
async function observe(kc: KubeConfig): Promise<Array<{ requests: string[]; connections: number }>> {
  for (const instance of cluster.instances) instance.resetCounters();
  const core = kc.makeApiClient(CoreV1Api);
  for (let i = 0; i < 3; i++) await core.listNamespace();
  for (let i = 0; i < 3; i++) await core.listNamespacedConfigMap({ namespace: 'default' });
  return cluster.instances.map((i) => ({
    // Not the probes, nor the resolver's EndpointSlice list and watch.
    requests: i.requests.filter((r) => r.path !== '/readyz' && r.resource !== 'endpointslices').map((r) => `${r.method} ${r.path} ${r.user} ${r.protocol}`),
    connections: i.counters.tlsConnections,
  }));
}

test.serial('unset, false or 0: the KubeConfig is client-node’s own, requests and connections the same as without this package', async (t) => {
  const plain = new KubeConfig();
  plain.loadFromDefault();
  const expected = await observe(plain);
  t.is(expected[0]!.connections, 6, 'client-node 2.0.1 opens a connection per request');
  for (const value of [undefined, 'false', '0', '']) {
    setSwitch(value, cluster.target);
    const kc = await loadBalancedKubeConfig();
    t.is(attachmentOf(kc), undefined);
    t.false(Object.hasOwn(kc, 'applySecurityAuthentication'));
    t.deepEqual(await observe(kc), expected, `CLIENT_LOAD_BALANCE=${String(value)}`);
  }
});

test.serial('anything else is off too, with a warning', async (t) => {
  const warnings: Error[] = [];
  const onWarning = (w: Error): void => void warnings.push(w);
  process.on('warning', onWarning);
  try {
    setSwitch('yes');
    const kc = await loadBalancedKubeConfig();
    t.is(attachmentOf(kc), undefined);
    await until(() => warnings.some((w) => /CLIENT_LOAD_BALANCE="yes" is neither true nor false/.test(w.message)), { what: 'the warning' });
  } finally {
    process.off('warning', onWarning);
  }
});

test.serial('true with CLIENT_LOAD_BALANCE_TARGET: spread over the instances, one connection each', async (t) => {
  setSwitch('true', cluster.target);
  const kc = await loadBalancedKubeConfig({ probe: false, hedge: false });
  const attachment = attachmentOf(kc);
  try {
    t.true(attachment?.attached);
    const seen = await observe(kc);
    t.deepEqual(seen.map((s) => s.requests.length), [2, 2, 2]);
    t.deepEqual(seen.map((s) => s.connections), [1, 1, 1]);
  } finally {
    await attachment?.detach();
  }
});

test.serial('true without a target: the default/kubernetes EndpointSlice; a target list falls through to the next when one finds nothing', async (t) => {
  for (const target of [undefined, 'kubernetes:///default/missing kubernetes:///default/kubernetes']) {
    setSwitch('1', target);
    const kc = await loadBalancedKubeConfig({ probe: false, hedge: false });
    const attachment = attachmentOf(kc)!;
    try {
      await until(() => attachment.balancer!.endpoints().filter((e) => e.priority === 0).length === 3, { what: `the instances found through ${String(target)}` });
      const seen = await observe(kc);
      t.deepEqual(seen.map((s) => s.requests.length), [2, 2, 2]);
    } finally {
      await attachment.detach();
    }
  }
  setSwitch(undefined);
});
