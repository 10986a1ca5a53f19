// A starved proxy (its event loop stalled, as on a machine loaded far past its cores) in front of
// three alike apiservers still spreads its requests evenly: the answers wait for its own loop, and
// that wait must not pass for an apiserver's latency (`reweigh`'s `ownLagMs`).
import test from 'ava';
import { Pool } from 'undici';
import { RESOURCES } from '../../fixtures/apiserver/index.ts';
import { proxiedCluster } from './helpers.ts';

const PATH = '/api/v1/namespaces/default/configmaps/starved';
const REQUESTS = 600;

test('a proxy whose own event loop stalls spreads GETs of one object over alike apiservers within 1.25×', async (t) => {
  const { cluster, proxy, close } = await proxiedCluster();
  t.teardown(close);
  cluster.store.create(RESOURCES.configmaps, { metadata: { name: 'starved', namespace: 'default' }, data: { key: 'value' } });
  const pool = new Pool(proxy.url!);
  t.teardown(() => pool.close());
  for (let i = 0; i < 30; i++) await (await pool.request({ path: PATH, method: 'GET' })).body.dump();
  for (const server of cluster.instances) server.resetCounters();
  // Every 50 ms the loop is held busy 0–60 ms (a fixed, uneven cycle): answers wait for it, unevenly.
  const lengths = [5, 60, 20, 45, 0, 35, 55, 10, 40, 25];
  let turn = 0;
  const stall = setInterval(() => {
    const end = performance.now() + lengths[turn++ % lengths.length]!;
    while (performance.now() < end);
  }, 50);
  const sent: Array<Promise<number>> = [];
  for (let i = 0; i < REQUESTS; i++) {
    sent.push(pool.request({ path: PATH, method: 'GET' }).then(async (res) => (await res.body.dump(), res.statusCode)));
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const statuses = await Promise.all(sent);
  clearInterval(stall);
  t.true(statuses.every((s) => s === 200));
  const seen = cluster.instances.map((s) => s.requests.filter((r) => r.path === PATH).length);
  t.true(seen.reduce((a, b) => a + b) >= REQUESTS);
  t.true(Math.max(...seen) / Math.min(...seen) <= 1.25, `spread evenly over the three: ${seen.join('/')}`);
});
