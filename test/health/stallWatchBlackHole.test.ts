// The stall watch end to end: three simulated apiservers over real TLS HTTP/2, one of which becomes
// a black hole mid-load (connections stay open, nothing is read or answered, not even HTTP/2
// PINGs). Nothing hedges, PINGs are off and the scheduled probe is an hour away, and the client is
// a closed loop of 12 workers, all of which are soon waiting on the hole: no answer comes to tell
// anything. Only the watch (a look every 250 ms, an out-of-turn probe with its 1-s timeout) can
// eject it before the GETs' 20-s request timeout.
import test from 'ava';
import { configMapCluster } from '../helpers/configMaps.ts';
import { load } from '../helpers/load.ts';

const WARM_UP = 300;
const ACROSS = 300;
const REQUEST_TIMEOUT = 20_000;
/**
 * The slowest GET across the event: the watch needs ~1.3–1.5 s (a stall of 250 ms, the next look,
 * the probe's 1 s), and without it the GETs wait for their 20-s timeout. 3× room for a busy machine.
 */
const BOUND_MS = 5_000;

test('a black hole is found with nothing hedging and no answer coming: the stall watch probes it at once, it is ejected as unreachable, every GET succeeds well within its timeout', async (t) => {
  const { cluster, balancer, get, close } = await configMapCluster(WARM_UP + ACROSS, (cluster) => ({
    hedge: false,
    requestTimeout: REQUEST_TIMEOUT,
    probe: { intervalMs: 3_600_000, headers: cluster.authHeaders },
  }));
  const hole = cluster.instances[0]!;
  const ejected: Array<{ key: string; reason: string; at: number }> = [];
  balancer.on('eject', (e, reason) => ejected.push({ key: e.key, reason, at: performance.now() }));
  try {
    let holedAt = 0;
    const all = await load(WARM_UP + ACROSS, 12, (i) => {
      if (i === WARM_UP) {
        holedAt = performance.now();
        hole.setModes({ blackHole: true });
      }
      return get(i);
    });
    const results = all.slice(WARM_UP);
    const ms = results.map((r) => r.value ?? Infinity);
    const slowest = Math.max(...ms);
    const out = ejected.find((e) => e.key === hole.authority);
    t.log(`slowest GET across the black hole ${Math.round(slowest)} ms; ejections: ${ejected.map((e) => `${e.key} ${e.reason} after ${Math.round(e.at - holedAt)} ms`).join(', ')}`);
    t.deepEqual(results.filter((r) => r.error).map((r) => r.error!.message), [], 'every GET succeeded');
    t.is(out?.reason, 'unreachable', 'the hole was ejected as unreachable');
    t.deepEqual(
      ejected.filter((e) => e.key !== hole.authority),
      [],
      'no other endpoint was ejected',
    );
    t.true(slowest < BOUND_MS, `the slowest GET took ${Math.round(slowest)} ms (bound ${BOUND_MS}; without the watch, ~${REQUEST_TIMEOUT})`);
    t.is(balancer.stats().totals.retries.timeout, 0, 'no GET waited for its request timeout');
  } finally {
    await close();
  }
});
