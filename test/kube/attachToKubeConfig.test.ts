// The real @kubernetes/client-node 2.x, attached to a balancer, against three simulated apiservers.
import { PassThrough } from 'node:stream';
import {
  CoreV1Api,
  Exec,
  KubeConfig,
  KubernetesObjectApi,
  Log,
  Watch,
  makeInformer,
  type V1ConfigMap,
  type V1Status,
} from '@kubernetes/client-node';
import test from 'ava';
import { ApiserverCluster, RESOURCES, type ApiserverInstance, type KubeconfigOptions } from '../../fixtures/apiserver/index.ts';
import { attachToKubeConfig, attachmentOf, type KubeAttachment, type KubeBalancerOptions } from '../../src/index.ts';
import { activeResources, leftOver } from '../helpers/leaks.ts';
import { until } from '../helpers/poll.ts';

function kubeConfig(cluster: ApiserverCluster, options: KubeconfigOptions = {}): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig(options));
  return kc;
}

/** No hedges: these tests count requests per instance, and a hedge on a busy machine adds one. */
async function attached(kc: KubeConfig, options: KubeBalancerOptions): Promise<KubeAttachment> {
  const attachment = await attachToKubeConfig(kc, { hedge: false, ...options });
  if (!attachment.attached) throw new Error(attachment.reason);
  return attachment;
}

const configMap = (name: string): V1ConfigMap => ({ metadata: { name }, data: { name } });
const count = (instance: ApiserverInstance, match: Parameters<ApiserverInstance['requestsWhere']>[0]): number => instance.requestsWhere(match).length;

/** Runs a command in a pod and resolves once it is connected; `finish` ends its stdin and waits for the status. */
async function startExec(kc: KubeConfig, pod: string): Promise<{ finish(): Promise<{ output: string; status: V1Status }> }> {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  let output = '';
  stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let status: V1Status | undefined;
  await new Exec(kc).exec('default', pod, 'main', ['cat'], stdout, new PassThrough(), stdin, false, (s) => (status = s));
  return {
    async finish() {
      stdin.end('done');
      await until(() => status, { what: 'the exec status' });
      return { output, status: status! };
    },
  };
}

test.serial('CoreV1Api, KubernetesObjectApi, Watch, Log, makeInformer and Exec reach every instance, evenly, over one TLS connection each for short requests and one for watches', async (t) => {
  const baseline = activeResources();
  const cluster = await ApiserverCluster.start();
  const instances = cluster.instances;
  const kc = kubeConfig(cluster);
  const attachment = await attached(kc, { target: cluster.target });
  t.is(attachmentOf(kc), attachment);
  const core = kc.makeApiClient(CoreV1Api);
  const informers: Array<ReturnType<typeof makeInformer<V1ConfigMap>>> = [];
  const watches: AbortController[] = [];
  try {
    // CoreV1Api: list, create, replace, delete.
    for (let i = 0; i < 30; i++) await core.createNamespacedConfigMap({ namespace: 'default', body: configMap(`cm-${i}`) });
    for (let i = 0; i < 3; i++) t.is((await core.listNamespacedConfigMap({ namespace: 'default' })).items.length, 30);
    for (let i = 0; i < 3; i++) {
      const current = await core.readNamespacedConfigMap({ name: `cm-${i}`, namespace: 'default' });
      await core.replaceNamespacedConfigMap({ name: `cm-${i}`, namespace: 'default', body: { ...current, data: { replaced: 'yes' } } });
    }
    for (let i = 0; i < 3; i++) await core.deleteNamespacedConfigMap({ name: `cm-${i}`, namespace: 'default' });
    for (const instance of instances) {
      t.is(count(instance, { verb: 'create', resource: 'configmaps' }), 10, `${instance.name}: a third of the creates`);
      for (const verb of ['list', 'get', 'update', 'delete']) t.is(count(instance, { verb, resource: 'configmaps' }), 1, `${instance.name}: one ${verb}`);
    }

    // KubernetesObjectApi: discovery, then the requests themselves.
    const objects = KubernetesObjectApi.makeApiClient(kc);
    const before = instances.map((i) => i.requests.filter((r) => r.path !== '/readyz').length);
    for (let i = 0; i < 3; i++) await objects.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `obj-${i}`, namespace: 'default' } });
    for (let i = 0; i < 3; i++) await objects.list('v1', 'ConfigMap', 'default');
    const objectRequests = instances.map((i, k) => i.requests.filter((r) => r.path !== '/readyz').length - before[k]!);
    t.true(objectRequests.every((n) => n >= 2), `KubernetesObjectApi requests per instance: ${objectRequests.join('/')}`);
    t.true(Math.max(...objectRequests) - Math.min(...objectRequests) <= 1);

    // Log (not followed: short requests, round robin).
    cluster.addPod('web');
    for (let i = 0; i < 3; i++) {
      const out = new PassThrough();
      let text = '';
      out.on('data', (chunk: Buffer) => (text += chunk.toString()));
      await new Log(kc).log('default', 'web', 'main', out, { tailLines: 1 });
      await until(() => text.includes('line'), { what: 'the log line' });
    }
    for (const instance of instances) t.is(count(instance, { subresource: 'log' }), 1, `${instance.name}: one log`);

    // Watch and informers: long-running, placed where the fewest streams are open.
    for (let i = 0; i < 3; i++) {
      watches.push(await new Watch(kc).watch('/api/v1/namespaces/default/configmaps', {}, () => {}, () => {}));
    }
    await until(() => instances.every((i) => i.counters.openWatches === 1), { what: 'one watch per instance' });
    const seen = new Map<number, Set<string>>();
    // client-node reports the AbortError of its own stop() as an error too: only those before count.
    const informerErrors: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const informer = makeInformer(kc, '/api/v1/namespaces/default/configmaps', () => core.listNamespacedConfigMap({ namespace: 'default' }));
      const names = new Set<string>();
      seen.set(i, names);
      informer.on('add', (o) => names.add(o.metadata!.name!));
      informer.on('error', (err) => informerErrors.push(err));
      await informer.start();
      informers.push(informer);
    }
    await until(() => instances.every((i) => i.counters.openWatches === 2), { what: 'one informer watch per instance' });
    await core.createNamespacedConfigMap({ namespace: 'default', body: configMap('late') });
    await until(() => [...seen.values()].every((names) => names.has('late')), { what: 'every informer to see the new object' });
    t.deepEqual(informerErrors, []);

    // Exec: WebSockets through the balancing https.Agent, one session per instance.
    cluster.addPod('shell');
    const sessions = await Promise.all([0, 1, 2].map(() => startExec(kc, 'shell')));
    for (const instance of instances) t.is(count(instance, { subresource: 'exec', status: 101 }), 1, `${instance.name}: one exec`);
    for (const session of sessions) t.like(await session.finish(), { output: 'done', status: { status: 'Success' } });

    // Evenness and connections.
    const api = (instance: ApiserverInstance): number => instance.requests.filter((r) => r.path.startsWith('/api') && r.subresource !== 'exec').length;
    const shares = instances.map(api);
    t.true(Math.max(...shares) - Math.min(...shares) <= 2, `API requests per instance: ${shares.join('/')}`);
    for (const instance of instances) {
      const execs = count(instance, { subresource: 'exec' });
      // Watches and other long-running requests have a connection of their own (see Origins.routeOf).
      const http = instance.counters.tlsConnections - execs;
      t.true(http >= 1 && http <= 2, `${instance.name}: ${http} TLS connections: one for short requests, one for watches (and one per exec WebSocket)`);
      t.true(instance.requests.filter((r) => r.subresource !== 'exec').every((r) => r.protocol === 'h2' && r.user === 'sim-admin'));
      t.true(instance.requests.every((r) => r.host === instances[0]!.authority || r.path === '/readyz'), 'the Host header keeps the kubeconfig server');
    }
  } finally {
    for (const watch of watches) watch.abort();
    for (const informer of informers) await informer.stop();
    await attachment.detach();
    await cluster.close();
  }
  t.deepEqual(await leftOver(baseline), {}, 'no socket or timer left behind');
});

test.serial('an instance crashes while an informer runs and objects are created: the informer ends with every object, no error, its watch on a live instance', async (t) => {
  const cluster = await ApiserverCluster.start();
  const kc = kubeConfig(cluster);
  const attachment = await attached(kc, { target: cluster.target });
  const core = kc.makeApiClient(CoreV1Api);
  const informer = makeInformer(kc, '/api/v1/namespaces/default/configmaps', () => core.listNamespacedConfigMap({ namespace: 'default' }));
  const errors: unknown[] = [];
  informer.on('error', (err) => errors.push(err));
  try {
    await informer.start();
    const watching = await until(() => cluster.instances.find((i) => i.counters.openWatches === 1), { what: 'the informer’s watch' });
    const create = async (name: string): Promise<void> => {
      // A create in flight on the crashing instance may fail (written, then reset): try again; 409 means it had landed.
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          await core.createNamespacedConfigMap({ namespace: 'default', body: configMap(name) });
          return;
        } catch (error) {
          if ((error as { code?: number }).code === 409) return;
        }
      }
      throw new Error(`could not create ${name}`);
    };
    const names = Array.from({ length: 40 }, (_, i) => `obj-${i}`);
    const writing = (async () => {
      for (const name of names) await create(name);
    })();
    await until(() => informer.list('default').length >= 10, { what: 'the first objects' });
    await watching.crash();
    await writing;
    await until(() => informer.list('default').length === names.length, { what: 'every object in the informer', timeoutMs: 30_000 });
    t.deepEqual(informer.list('default').map((o) => o.metadata!.name).sort(), [...names].sort());
    t.deepEqual(errors, [], 'no error callback');
    await until(() => cluster.instances.filter((i) => i !== watching).some((i) => i.counters.openWatches === 1), { what: 'the watch on a live instance' });
    t.is(attachment.balancer!.endpoints().find((e) => e.address === watching.host)?.streams, 0);
  } finally {
    await informer.stop();
    await attachment.detach();
    await cluster.close();
  }
});

test.serial('a fourth instance joins the EndpointSlice: informer watches spread to it within watches / maxPerSecond seconds, and none misses an event', async (t) => {
  const baseline = activeResources();
  const cluster = await ApiserverCluster.start();
  const kc = kubeConfig(cluster);
  const maxPerSecond = 2;
  // The default target: the default/kubernetes EndpointSlice, read through the kubeconfig's server.
  // No grace: the fixture instances share one store, so their watch caches are never behind.
  const attachment = await attached(kc, { rebalanceWatches: { maxPerSecond, graceMs: 0 } });
  const balancer = attachment.balancer!;
  const moves: number[] = [];
  // The balancer paces moves by `performance.now()`; Date.now() is whole milliseconds of another
  // clock, so two moves exactly 500 ms apart could read as 499.
  balancer.on('rebalance', () => moves.push(performance.now()));
  const core = kc.makeApiClient(CoreV1Api);
  const informers: Array<{ informer: ReturnType<typeof makeInformer<V1ConfigMap>>; names: Set<string> }> = [];
  const errors: unknown[] = [];
  const streams = (): number[] => balancer.endpoints().map((e) => e.streams);
  let writing = true;
  let written = 0;
  try {
    await until(() => balancer.endpoints().length === 3 && balancer.endpoints().every((e) => e.priority === 0), { what: 'the three instances from the EndpointSlice' });
    const watches = 8;
    for (let i = 0; i < watches; i++) {
      const informer = makeInformer(kc, '/api/v1/namespaces/default/configmaps', () => core.listNamespacedConfigMap({ namespace: 'default' }));
      const names = new Set<string>();
      informer.on('add', (o) => names.add(o.metadata!.name!));
      informer.on('error', (err) => errors.push(err));
      await informer.start();
      informers.push({ informer, names });
    }
    await until(() => streams().reduce((a, b) => a + b, 0) === watches, { what: 'every informer watching' });
    t.deepEqual(streams().sort(), [2, 3, 3]);

    const writer = (async () => {
      while (writing && written < 2000) {
        await core.createNamespacedConfigMap({ namespace: 'default', body: configMap(`w-${written}`) });
        written++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const joined = Date.now();
    await cluster.addInstance('127.0.0.5');
    const spread = await until(
      () => {
        const now = streams();
        return now.length === 4 && now.reduce((a, b) => a + b, 0) === watches && Math.max(...now) - Math.min(...now) <= 1 ? now : undefined;
      },
      { what: 'the watches to spread over four instances', timeoutMs: 45_000 },
    );
    const elapsed = (Date.now() - joined) / 1000;
    t.deepEqual([...spread].sort(), [2, 2, 2, 2]);
    t.true(elapsed <= watches / maxPerSecond + 15, `spread after ${elapsed.toFixed(1)} s (bound ${watches / maxPerSecond} s, plus slack for a busy machine)`);
    t.true(moves.length >= 2, `${moves.length} moves`);
    // The events are read after each move, not at it: a few microseconds, unless this process is
    // preempted between the balancer's clock reading and its event (milliseconds on a loaded
    // machine). 20 ms of slack: a limiter that let moves come 480 ms apart would still pass, one
    // that did not pace them at all (both moves at once) fails.
    const span = (moves.at(-1)! - moves[0]! + 20) / 1000;
    t.true(moves.length <= Math.floor(span * maxPerSecond) + 1, `${moves.length} moves in ${span.toFixed(1)} s: at most ${maxPerSecond} a second`);
    await until(() => cluster.instance('127.0.0.5').counters.openWatches === 2, { what: 'two watches on the newcomer' });

    writing = false;
    await writer;
    const all = cluster.store.list(RESOURCES.configmaps, 'default').items.map((o) => o.metadata.name!);
    await until(() => informers.every(({ names }) => all.every((name) => names.has(name))), { what: 'every informer to have every object', timeoutMs: 30_000 });
    t.deepEqual(errors, [], 'no informer error');
    t.true(written > 0);
  } finally {
    writing = false;
    for (const { informer } of informers) await informer.stop();
    await attachment.detach();
    await cluster.close();
  }
  t.deepEqual(await leftOver(baseline), {}, 'the EndpointSlice watch, probes and pools are all gone');
});
