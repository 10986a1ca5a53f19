// What holding short GET responses until complete (`maxHeldResponse`) costs in time to first byte:
// one endpoint over HTTP/2, concurrency 1, bodies of several sizes, held (the default) against not
// held (`maxHeldResponse: 0`), in alternating rounds. TTFB = from the call to the response headers.
import { APISERVER_NAME, certs } from '../fixtures/certs/index.ts';
import { createBalancer, type Balancer } from '../src/index.ts';
import { median, percentile, startServerProcess, table, writeResults } from './lib.ts';

const ORIGIN = `https://${APISERVER_NAME}:6443`;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 1500);
const SIZES = [200, 16 * 1024, 256 * 1024];

async function ttfb(balancer: Balancer, size: number): Promise<{ p50Us: number; p99Us: number }> {
  const samples: number[] = [];
  for (let i = 0; i < REQUESTS + 100; i++) {
    const start = performance.now();
    const res = await balancer.request({ origin: ORIGIN, path: `/api/v1/namespaces/default/configmaps/bench?size=${size}`, method: 'GET' });
    const first = performance.now();
    await res.body.dump({ limit: Infinity });
    if (i >= 100) samples.push(first - start);
  }
  samples.sort((a, b) => a - b);
  return { p50Us: Math.round(percentile(samples, 0.5) * 1000), p99Us: Math.round(percentile(samples, 0.99) * 1000) };
}

export async function run(): Promise<unknown> {
  const server = await startServerProcess('127.0.0.2', 'h2');
  const rows: Array<Record<string, string | number>> = [];
  try {
    const held = createBalancer({ origin: ORIGIN, target: `static:///127.0.0.2:${server.port}`, tls: { ca: certs.ca }, probe: false });
    const streamed = createBalancer({ origin: ORIGIN, target: `static:///127.0.0.2:${server.port}`, tls: { ca: certs.ca }, probe: false, maxHeldResponse: 0 });
    try {
      for (const size of SIZES) {
        const runs = { held: [] as Array<{ p50Us: number; p99Us: number }>, streamed: [] as Array<{ p50Us: number; p99Us: number }> };
        for (let round = 0; round < ROUNDS; round++) {
          runs.streamed.push(await ttfb(streamed, size));
          runs.held.push(await ttfb(held, size));
        }
        const mid = (name: 'held' | 'streamed', key: 'p50Us' | 'p99Us'): number => median(runs[name].map((r) => r[key]));
        rows.push({
          'body bytes': size,
          'streamed p50 µs': mid('streamed', 'p50Us'),
          'held p50 µs': mid('held', 'p50Us'),
          'p50 cost µs': mid('held', 'p50Us') - mid('streamed', 'p50Us'),
          'streamed p99 µs': mid('streamed', 'p99Us'),
          'held p99 µs': mid('held', 'p99Us'),
        });
      }
    } finally {
      await Promise.all([held.close(), streamed.close()]);
    }
  } finally {
    await server.stop();
  }
  console.log('time to first byte, held until complete (maxHeldResponse default) vs streamed (maxHeldResponse: 0); h2, concurrency 1');
  console.log(table(rows));
  return { rows, rounds: ROUNDS, requests: REQUESTS };
}

if (import.meta.main) writeResults('holdback', await run());
