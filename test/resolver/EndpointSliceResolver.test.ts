// The kubernetes:/// resolver against the apiserver simulator, whose default/kubernetes
// EndpointSlice follows its instances as the apiserver's lease reconciler does.
import { once } from 'node:events';
import { createServer } from 'node:http';
import test from 'ava';
import { ApiserverCluster, RESOURCES } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { systemClock } from '../../src/clock.ts';
import { ApiClient } from '../../src/resolver/ApiClient.ts';
import { EndpointSliceResolver } from '../../src/resolver/EndpointSliceResolver.ts';
import { defaultOptions } from '../../src/options/BalancerOptions.ts';
import type { HeadersSource } from '../../src/net/headers.ts';
import { createResolver } from '../../src/resolver/parseTarget.ts';
import type { EndpointAddress, Resolver } from '../../src/resolver/Resolver.ts';
import { endpointKey } from '../../src/net/endpointKey.ts';
import { activeResources, leftOver } from '../helpers/leaks.ts';
import { until } from '../helpers/poll.ts';

interface Seen {
  sets: string[][];
  errors: Error[];
  warnings: string[];
  latest(): string[];
}

function start(target: string, server: string, headers: HeadersSource): { resolver: Resolver; seen: Seen } {
  const resolver = createResolver(target, {
    clock: systemClock,
    dns: defaultOptions.dns,
    tls: () => ({ ca: certs.ca, rejectUnauthorized: true }),
    bootstrap: { server: new URL(server), headers, lastResort: false },
  });
  const seen: Seen = {
    sets: [],
    errors: [],
    warnings: [],
    latest: () => seen.sets.at(-1) ?? [],
  };
  resolver.start({
    endpoints: (set: readonly EndpointAddress[]) => seen.sets.push(set.map((e) => `${endpointKey(e)}/${e.source}`)),
    error: (error) => seen.errors.push(error),
    warning: (message) => seen.warnings.push(message),
  });
  return { resolver, seen };
}

const sameSet = (seen: Seen, expected: string[]) => (): boolean => JSON.stringify(seen.latest()) === JSON.stringify(expected);

test.serial('follows instances joining, shutting down and crashing; lists then watches through the bootstrap server with its credentials', async (t) => {
  const baseline = activeResources();
  const cluster = await ApiserverCluster.start();
  const [first, second, third] = cluster.instances;
  const port = cluster.port;
  const endpoint = (host: string): string => `${host}:${port}/kubernetes`;
  // Credentials asked for per request: a function, as fromKubeConfig passes them.
  let asked = 0;
  const { resolver, seen } = start('kubernetes:///default/kubernetes', first!.url, () => {
    asked++;
    return cluster.authHeaders;
  });
  try {
    await until(sameSet(seen, ['127.0.0.2', '127.0.0.3', '127.0.0.4'].map(endpoint)), { what: 'the three instances' });

    await cluster.addInstance('127.0.0.5');
    await until(sameSet(seen, ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'].map(endpoint)), { what: 'the fourth instance' });

    void third!.shutdown({ delayMs: 100, drainMs: 100 });
    await until(sameSet(seen, ['127.0.0.2', '127.0.0.3', '127.0.0.5'].map(endpoint)), { what: 'the instance shutting down to leave at once' });

    await second!.crash();
    await until(sameSet(seen, ['127.0.0.2', '127.0.0.5'].map(endpoint)), { what: 'the crashed instance to leave when its lease expires' });

    const requests = first!.requests.filter((r) => r.resource === 'endpointslices');
    t.deepEqual([...new Set(requests.map((r) => r.verb))], ['list', 'watch']);
    t.true(requests.every((r) => r.user === 'sim-admin' && r.path.includes('labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes')));
    t.true(requests.every((r) => r.protocol === 'http/1.1'));
    t.is(asked, requests.length, 'credentials were asked for before every request');
    t.true(first!.requestsWhere({ verb: 'watch', resource: 'endpointslices' })[0]!.path.includes('allowWatchBookmarks=true'));
    t.true(seen.sets.every((set) => set.length > 0));
    t.deepEqual(seen.errors, []);
  } finally {
    await resolver.close?.();
    await cluster.close();
  }
  t.deepEqual(await leftOver(baseline), {}, 'no socket or timer left behind');
});

test.serial('keeps its set while the bootstrap server is down, then resumes; a resourceVersion compacted meanwhile means a re-list (410)', async (t) => {
  const cluster = await ApiserverCluster.start();
  const first = cluster.instances[0]!;
  const port = cluster.port;
  const { resolver, seen } = start('kubernetes:///default/kubernetes', first.url, cluster.authHeaders);
  try {
    await until(() => seen.latest().length === 3, { what: 'the first set' });
    await first.crash();
    await until(() => seen.errors.length > 0, { what: 'the broken watch to be reported' });
    await cluster.addInstance('127.0.0.6');
    cluster.store.compact();
    await first.restart();
    await until(() => seen.latest().includes(`127.0.0.6:${port}/kubernetes`), { what: 'the instance added while the watch was down' });
    t.true(seen.sets.every((set) => set.length > 0), 'the set was never emptied');
    t.is(first.requestsWhere({ verb: 'list', resource: 'endpointslices' }).length, 2, 'listed again after the 410');
    t.regex(seen.errors[0]!.message, /EndpointSlices of default\/kubernetes/);
  } finally {
    await resolver.close?.();
    await cluster.close();
  }
});

test.serial('ready: false is skipped and unset counts as ready; the port named https, else the only port; FQDN slices ignored', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2'] });
  const slice = (name: string, body: Record<string, unknown>) =>
    cluster.store.create(RESOURCES.endpointslices, {
      metadata: { name, namespace: 'kube-system', labels: { 'kubernetes.io/service-name': 'apiservers' } },
      ...body,
    });
  slice('v4', {
    addressType: 'IPv4',
    ports: [{ name: 'metrics', port: 9000 }, { name: 'https', port: 6443 }],
    endpoints: [
      { addresses: ['10.0.0.1'], conditions: { ready: true } },
      { addresses: ['10.0.0.2'], conditions: { ready: false } },
      { addresses: ['10.0.0.3', '10.0.0.33'] },
    ],
  });
  slice('v6', { addressType: 'IPv6', ports: [{ port: 7443 }], endpoints: [{ addresses: ['fd00::1'], conditions: {} }] });
  slice('names', { addressType: 'FQDN', ports: [{ name: 'https', port: 443 }], endpoints: [{ addresses: ['api.example.com'] }] });
  slice('two-ports', { addressType: 'IPv4', ports: [{ name: 'a', port: 1 }, { name: 'b', port: 2 }], endpoints: [{ addresses: ['10.0.0.9'] }] });
  const { resolver, seen } = start('kubernetes:///kube-system/apiservers', cluster.instances[0]!.url, cluster.authHeaders);
  try {
    await until(() => seen.latest().length > 0);
    t.deepEqual(seen.latest(), ['10.0.0.1:6443/kubernetes', '10.0.0.3:6443/kubernetes', '[fd00::1]:7443/kubernetes']);
    t.true(seen.warnings.some((w) => /two-ports has no port named "https"/.test(w)));

    cluster.store.update(RESOURCES.endpointslices, {
      ...cluster.store.get(RESOURCES.endpointslices, 'kube-system', 'v4')!,
      endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: false } }],
    });
    await until(sameSet(seen, ['[fd00::1]:7443/kubernetes']), { what: 'the slice update' });
    cluster.store.delete(RESOURCES.endpointslices, 'kube-system', 'v6');
    await until(() => seen.warnings.some((w) => /list no ready endpoint; keeping the previous set/.test(w)), { what: 'the warning' });
    t.deepEqual(seen.latest(), ['[fd00::1]:7443/kubernetes'], 'nothing ready: the last set stays');
  } finally {
    await resolver.close?.();
    await cluster.close();
  }
});

test.serial('without credentials the apiserver says 403: the error names the RBAC it needs, and it keeps trying', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2'] });
  const { resolver, seen } = start('kubernetes:///default/kubernetes', cluster.instances[0]!.url, {});
  try {
    await until(() => seen.errors.length >= 2, { what: 'two failed attempts' });
    t.regex(seen.errors[0]!.message, /forbidden; grant list and watch on discovery.k8s.io endpointslices in "default"/);
    t.deepEqual(seen.sets, []);
  } finally {
    await resolver.close?.();
    await cluster.close();
  }
});

test.serial('close() ends a list request the server never answers, rather than waiting out its timeout', async (t) => {
  const server = createServer();
  const asked = once(server, 'request');
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const api = new ApiClient({ server: new URL(`http://127.0.0.1:${port}`), headers: {}, tls: () => ({ rejectUnauthorized: true }) });
  const resolver = new EndpointSliceResolver('default', 'kubernetes', api, systemClock);
  const errors: Error[] = [];
  resolver.start({ endpoints: () => {}, error: (error) => errors.push(error) });
  try {
    await asked;
    const started = performance.now();
    await resolver.close();
    t.true(performance.now() - started < 1000, `close() took ${Math.round(performance.now() - started)} ms`);
    t.deepEqual(errors, [], 'a request aborted by close() is no failure');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test.serial('default/kubernetes: only the slices the control plane writes count; others labelled for the Service are skipped with a warning', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2', '127.0.0.3'] });
  const forged = (name: string, labels: Record<string, string>, address: string) =>
    cluster.store.create(RESOURCES.endpointslices, {
      metadata: { name, namespace: 'default', labels: { 'kubernetes.io/service-name': 'kubernetes', ...labels } },
      addressType: 'IPv4',
      ports: [{ name: 'https', port: 6443 }],
      endpoints: [{ addresses: [address], conditions: { ready: true } }],
    });
  // What the reconciler writes, as the simulator shows it: exactly one label.
  const own = cluster.store.get(RESOURCES.endpointslices, 'default', 'kubernetes')!;
  t.deepEqual(own.metadata.labels, { 'kubernetes.io/service-name': 'kubernetes' });
  forged('kubernetes-controller', { 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' }, '10.6.6.1');
  forged('kubernetes-extra', { app: 'evil' }, '10.6.6.2');
  forged('evil', {}, '10.6.6.3');
  const { resolver, seen } = start('kubernetes:///default/kubernetes', cluster.instances[0]!.url, cluster.authHeaders);
  try {
    await until(() => seen.latest().length > 0);
    t.deepEqual(
      seen.latest().map((e) => e.split(':')[0]),
      ['127.0.0.2', '127.0.0.3'],
    );
    for (const name of ['kubernetes-controller', 'kubernetes-extra', 'evil']) {
      t.true(
        seen.warnings.some((w) => w.includes(`default/${name} was not written by the control plane`)),
        name,
      );
    }
    // One added while watching is skipped as well.
    forged('kubernetes-later', { 'endpointslice.kubernetes.io/managed-by': 'x' }, '10.6.6.4');
    await until(() => seen.warnings.some((w) => w.includes('default/kubernetes-later')), { what: 'the watch event' });
    t.false(seen.sets.flat().some((e) => e.startsWith('10.6.6.')));
  } finally {
    await resolver.close?.();
    await cluster.close();
  }
});

test.serial('addresses an EndpointSlice lists that are never dialled are left out with a warning', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2'] });
  cluster.store.create(RESOURCES.endpointslices, {
    metadata: { name: 'mixed', namespace: 'kube-system', labels: { 'kubernetes.io/service-name': 'apiservers' } },
    addressType: 'IPv4',
    ports: [{ name: 'https', port: 6443 }],
    endpoints: ['0.0.0.0', '169.254.1.1', '224.0.0.5', '255.255.255.255', '10.0.0.1', '127.0.0.9'].map((a) => ({ addresses: [a] })),
  });
  const { resolver, seen } = start('kubernetes:///kube-system/apiservers', cluster.instances[0]!.url, cluster.authHeaders);
  try {
    await until(() => seen.latest().length > 0);
    t.deepEqual(seen.latest(), ['10.0.0.1:6443/kubernetes', '127.0.0.9:6443/kubernetes']);
    t.true(seen.warnings.some((w) => /mixed lists addresses that are never dialled, left out: 0\.0\.0\.0 \(unspecified\), 169\.254\.1\.1 \(link-local\), 224\.0\.0\.5 \(multicast\), 255\.255\.255\.255 \(broadcast\)/.test(w)));
  } finally {
    await resolver.close?.();
    await cluster.close();
  }
});
