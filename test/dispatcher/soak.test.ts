// Memory stays flat over a long mixed workload on three HTTP/2 endpoints: a bounded `npm run soak`
// (bench/soak.ts). Before requests kept their body timeout themselves (see BodyTimer), 2-4 % of
// HTTP/2 streams stayed reachable for undici's 300 s body timeout: ~1,300 streams and +2 MB here.
import test from 'ava';
import { soak } from '../../bench/soak.ts';

test('30,000 GETs, LISTs, POSTs and watches over three HTTP/2 endpoints: no stream left behind, heap after GC flat', async (t) => {
  t.timeout(240_000);
  const result = await soak({ requests: 30_000, seconds: 180, every: 5_000, log: (line) => t.log(line) });
  t.is(result.failed, 0);
  t.true(result.checkpoints.length >= 3, `only ${result.checkpoints.length} checkpoints in the time allowed`);
  // Each checkpoint is taken with nothing in flight; at most a few streams wait for their finalizer.
  t.true(result.idle.streams <= 100, `${result.idle.streams} HTTP/2 streams still reachable after the load ended`);
  const growth = result.idle.heapMB - result.checkpoints[0]!.heapMB;
  t.true(growth < 1, `heap after GC grew ${growth.toFixed(2)} MB from the first checkpoint`);
});
