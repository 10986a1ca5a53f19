// Property: client-node informers through the balancer, over three apiservers whose watch caches
// lag behind the store by different amounts, while writes happen and apiservers restart (which
// breaks watches and makes the balancer move them onto the restarted one), never stop, always
// converge to the store, and never hand a handler an object older than one they already gave it.
import { CoreV1Api, KubeConfig, makeInformer, type KubernetesObject, type V1ConfigMap } from '@kubernetes/client-node';
import test from 'ava';
import fc from 'fast-check';
import { ApiserverCluster, RESOURCES } from '../../fixtures/apiserver/index.ts';
import { attachToKubeConfig } from '../../src/index.ts';
import { until } from '../helpers/poll.ts';

/** Runs per test run (one seed); LAG_RUNS overrides, LAG_SEED replays a seed. */
const RUNS = Number(process.env.LAG_RUNS ?? 40);
const SEED = process.env.LAG_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.LAG_SEED);
/** The whole property stops starting runs after this long (a busy machine gets fewer, and says so). */
const TIME_LIMIT_MS = 150_000;

type Action =
  | { kind: 'write'; op: 'create' | 'update' | 'delete'; key: number }
  | { kind: 'lag'; instance: number; ms: number }
  | { kind: 'restart'; instance: number; graceful: boolean }
  | { kind: 'pause'; ms: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('write' as const), op: fc.constantFrom('create' as const, 'update' as const, 'delete' as const), key: fc.nat(5) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('lag' as const), instance: fc.nat(2), ms: fc.integer({ min: 0, max: 400 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const), instance: fc.nat(2), graceful: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('pause' as const), ms: fc.integer({ min: 0, max: 150 }) }) },
);

test('informers over lagging watch caches, with watches moved between apiservers: never stop, converge, no time travel', async (t) => {
  const cluster = await ApiserverCluster.start();
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  // Quick probes and rebalancing: restarted apiservers are back, and take watches, within the run.
  // Ejections at the same scale: the runs restart each apiserver a dozen times in two minutes, and
  // each restart a request meets while it is down ejects it for twice as long as the last (the
  // count is forgiven after 4 × maxEjectionMs); with the default 30-s cap a loaded run's fifth
  // ejection (16.8 s seen, load 23) outlasted the 15-s wait for every apiserver back.
  const attachment = await attachToKubeConfig(kc, { target: cluster.target, probe: { intervalMs: 200 }, rebalanceWatches: { maxPerSecond: 20 }, maxEjectionMs: 4_000 });
  if (!attachment.attached) throw new Error(attachment.reason);
  const balancer = attachment.balancer!;
  const core = kc.makeApiClient(CoreV1Api);
  let rebalanced = 0;
  balancer.on('rebalance', () => rebalanced++);
  let runs = 0;
  let restarts = 0;
  let writes = 0;
  let relists = 0;
  /** Watches that ended and were opened again (client-node emits `connect`), wherever the balancer put them. */
  let rewatches = 0;
  const started = Date.now();
  let failure = '';
  try {
    await fc.assert(
      fc.asyncProperty(fc.tuple(fc.nat(300), fc.nat(300), fc.nat(300)), fc.array(action, { minLength: 4, maxLength: 20 }), async (lags, actions) => {
        const run = ++runs;
        const namespace = `run-${run}`;
        cluster.store.create(RESOURCES.namespaces, { metadata: { name: namespace } });
        lags.forEach((ms, i) => cluster.instances[i]!.setModes({ watchCacheLagMs: ms }));
        const informers: Array<ReturnType<typeof makeInformer<V1ConfigMap>>> = [];
        const problems: string[] = [];
        try {
          for (let k = 0; k < 2; k++) {
            const informer = makeInformer(kc, `/api/v1/namespaces/${namespace}/configmaps`, () => {
              relists++;
              return core.listNamespacedConfigMap({ namespace });
            });
            const newest = new Map<string, number>();
            const check = (how: string) => (object: KubernetesObject) => {
              const name = object.metadata!.name!;
              const rv = Number(object.metadata!.resourceVersion);
              if (rv < (newest.get(name) ?? 0)) problems.push(`informer ${k} ${how} ${name}@${rv} after @${newest.get(name)}: time travel`);
              newest.set(name, Math.max(rv, newest.get(name) ?? 0));
            };
            informer.on('add', check('add'));
            informer.on('update', check('update'));
            informer.on('delete', check('delete'));
            informer.on('connect', () => rewatches++);
            informer.on('error', (err) => problems.push(`informer ${k} stopped: ${describe(err)}`));
            await informer.start();
            informers.push(informer);
          }
          for (const a of actions) {
            if (a.kind === 'write') {
              writes++;
              const name = `cm-${a.key}`;
              const current = cluster.store.get(RESOURCES.configmaps, namespace, name);
              if (!current) cluster.store.create(RESOURCES.configmaps, { metadata: { name, namespace }, data: { v: '0' } });
              else if (a.op === 'delete') cluster.store.delete(RESOURCES.configmaps, namespace, name);
              else cluster.store.update(RESOURCES.configmaps, { ...current, data: { v: String(Number((current.data as { v: string }).v) + 1) } });
            } else if (a.kind === 'lag') {
              cluster.instances[a.instance]!.setModes({ watchCacheLagMs: a.ms });
            } else if (a.kind === 'restart') {
              restarts++;
              const instance = cluster.instances[a.instance]!;
              await instance.restart(a.graceful ? { shutdown: { drainMs: 100, timeoutMs: 300 } } : { graceful: false });
              // One at a time, as in a rolling restart: two apiservers lost in the same instant and the
              // third not yet known to be back leave a watch nowhere to go, and client-node's informer
              // stops for good on any failed watch (seed 99 found that outage; it is not this property).
              await until(() => balancer.endpoints().every((e) => e.state === 'ready'), { what: 'every apiserver back', timeoutMs: 15_000 });
            } else {
              await new Promise((resolve) => setTimeout(resolve, a.ms));
            }
          }
          const expected = (): string =>
            cluster.store
              .list(RESOURCES.configmaps, namespace)
              .items.map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`)
              .join(',');
          const seen = (informer: (typeof informers)[number]): string =>
            informer
              .list(namespace)
              .map((o) => `${o.metadata!.name}@${o.metadata!.resourceVersion}`)
              .sort()
              .join(',');
          await until(() => problems.length > 0 || informers.every((i) => seen(i) === expected()), { what: `run ${run}: the informers to converge`, timeoutMs: 40_000 }).catch(
            (error: Error) => problems.push(`${error.message}: store ${expected()}; informers ${informers.map(seen).join(' | ')}`),
          );
        } finally {
          for (const informer of informers) await informer.stop();
        }
        if (problems.length > 0) {
          failure = `run ${run}, lags ${lags.join('/')}:\n${problems.join('\n')}`;
          throw new Error(failure);
        }
      }),
      { numRuns: RUNS, seed: SEED, interruptAfterTimeLimit: TIME_LIMIT_MS, markInterruptAsFailure: false, endOnFailure: true },
    ).catch((error: unknown) => {
      t.log(`seed ${SEED}: ${failure}`);
      throw error;
    });
    t.log(`seed ${SEED}: ${runs} runs (asked ${RUNS}) in ${((Date.now() - started) / 1000).toFixed(1)} s; ${writes} writes, ${restarts} restarts, ${rewatches} re-watches (${rebalanced} of them moved by rebalancing), ${relists} lists`);
    t.true(runs >= Math.min(RUNS, 3), `${runs} runs`);
    t.true(restarts > 0, 'some runs restarted apiservers');
  } finally {
    await attachment.detach();
    await cluster.close();
  }
});

/** An error with its chain of causes (a BalancerError's per-endpoint causes included). */
function describe(error: unknown): string {
  const parts: string[] = [];
  let e = error as { message?: string; code?: string | number; cause?: unknown; causes?: Array<{ endpoint: string; error: Error }> } | undefined;
  for (let depth = 0; e && depth < 5; depth++) {
    parts.push(`${e.code ?? ''} ${e.message ?? ''}`.trim());
    if (e.causes) parts.push(e.causes.map((c) => `${c.endpoint}: ${c.error.message}`).join('; '));
    e = e.cause as typeof e;
  }
  return parts.join(' <- ');
}
