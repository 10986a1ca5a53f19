// Hedged GETs end to end: three simulated apiservers over real TLS HTTP/2, one of which becomes a
// black hole mid-load (connections stay open, nothing is read or answered, not even HTTP/2 PINGs).
// Probes and PINGs are off, so only hedges can rescue a GET caught there, or tell the black hole:
// without them those GETs would wait for their 20-s request timeout.
import diagnostics_channel from 'node:diagnostics_channel';
import test from 'ava';
import type { RetryMessage } from '../../src/observability/channels.ts';
import { configMapCluster } from '../helpers/configMaps.ts';
import { firstPicks } from '../helpers/firstPicks.ts';
import { load } from '../helpers/load.ts';

const WARM_UP = 400;
const ACROSS = 200;
const REQUEST_TIMEOUT = 20_000;

test('a black hole costs no GET its ejection: every GET caught there is hedged elsewhere and succeeds, the hole is ejected by hedges alone or gets no more GETs, nothing is left hanging on it', async (t) => {
  const { cluster, balancer, get, close } = await configMapCluster(WARM_UP + ACROSS, () => ({ probe: false, requestTimeout: REQUEST_TIMEOUT, hedge: {} }));
  const hole = cluster.instances[0]!;
  // Where each GET (one ConfigMap each, so its path names it) went first, and which were hedged.
  const { picks: firstTo, stop: stopPicks } = firstPicks(balancer, (m) => m.endpoint.key);
  const hedged = new Map<string, string>();
  const onRetry = (message: unknown): void => {
    const m = message as RetryMessage;
    // A hedge, or once hedges have ejected it as silent, a move of what is unanswered there.
    if (m.balancer === balancer && (m.reason === 'hedge' || m.reason === 'moved')) hedged.set(m.request.path, m.from.key);
  };
  diagnostics_channel.subscribe('kube-balancer:retry', onRetry);
  const ejected: string[] = [];
  balancer.on('eject', (e, reason) => ejected.push(`${e.key} ${reason}`));
  try {
    // One load throughout: the hole opens under it, with GETs in flight there (some sent before the
    // last answer from there, which a hedge must not wait on forever).
    let steady = balancer.stats().totals;
    const all = await load(WARM_UP + ACROSS, 12, (i) => {
      if (i === WARM_UP) {
        steady = balancer.stats().totals;
        hole.setModes({ blackHole: true });
      }
      return get(i);
    });
    const results = all.slice(WARM_UP);
    const caught = [...firstTo].filter(([path, key]) => key === hole.authority && Number(/cm-(\d+)$/.exec(path)![1]) >= WARM_UP).map(([path]) => path);
    const ms = results.map((r) => r.value ?? Infinity);
    const totals = balancer.stats().totals;
    t.log(`steady state: ${steady.retries.hedge} hedges / ${steady.requests} requests; across the black hole: ${caught.length} GETs caught there, ${totals.retries.hedge - steady.retries.hedge} hedges, slowest ${Math.round(Math.max(...ms))} ms; ejections: ${ejected.join(', ')}`);
    t.deepEqual(results.filter((r) => r.error).map((r) => r.error!.message), [], 'every GET succeeded');
    t.true(caught.length > 0, 'the black hole caught GETs');
    t.deepEqual(caught.filter((path) => hedged.get(path) !== hole.authority), [], 'each GET caught there was hedged (or moved once the hole was ejected)');
    // Out of the way: ejected by hedges alone (probes and PINGs are off), or — when its silence
    // took its load factor down before three hedges had won after twice the delay, a race on a busy
    // machine — sent no more than a trickle of the later GETs.
    const late = caught.filter((path) => Number(/cm-(\d+)$/.exec(path)![1]) >= WARM_UP + ACROSS / 2).length;
    t.true(ejected.includes(`${hole.authority} unreachable`) || late <= 2, `hedges that kept winning ejected it, or it got almost none of the later GETs (${late})`);
    t.is(totals.retries.timeout, 0, 'no GET waited for its request timeout');
    t.true(Math.max(...ms) < REQUEST_TIMEOUT / 4, 'no GET waited anywhere near its timeout');
    t.is(balancer.endpoints().find((e) => e.key === hole.authority)!.inFlight, 0, 'the originals stuck there were aborted');
    // 2 % of the requests earned, plus what a start earns up front (100): never more, whatever the load.
    t.true(steady.retries.hedge <= steady.requests * 0.02 + 100, 'hedges in the healthy warm-up within the earned share');
  } finally {
    stopPicks();
    diagnostics_channel.unsubscribe('kube-balancer:retry', onRetry);
    await close();
  }
});
