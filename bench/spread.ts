// How requests spread, and what it costs: one client through kube-balancer (per request, straight to
// the apiservers) against a real haproxy in `mode tcp` (per connection, the usual L4 load balancer)
// and a plain undici Pool to one server, in the same run. HTTP/2, concurrency 64.
import { Pool, type Dispatcher } from 'undici';
import { APISERVER_NAME, certs } from '../fixtures/certs/index.ts';
import { Haproxy } from '../fixtures/haproxy/Haproxy.ts';
import { createBalancer } from '../src/index.ts';
import { measure, median, startServerProcess, table, type RunResult } from './lib.ts';

const HOSTS = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
const MS = Number(process.env.BENCH_MS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = 64;
const PATH = '/api/v1/namespaces/default/configmaps/bench';
const tls = { ca: certs.ca, servername: APISERVER_NAME };

interface Client {
  name: string;
  send: () => Promise<void>;
  close: () => Promise<void>;
}

export async function run(): Promise<unknown> {
  const servers = await Promise.all(HOSTS.map((host) => startServerProcess(host, 'h2')));
  const addresses = HOSTS.map((host, i) => `${host}:${servers[i]!.port}`);
  const haproxy = await Haproxy.start({ backends: addresses });
  // One pool straight to each server, for reading its request count.
  const countPools = addresses.map((address) => new Pool(`https://${address}`, { connect: tls }));
  const counts = async (): Promise<number[]> =>
    Promise.all(
      countPools.map(async (pool) => {
        const res = await pool.request({ path: '/__count', method: 'GET' });
        return Number(await res.body.text());
      }),
    );
  const viaPool = (dispatcher: Dispatcher) => async (): Promise<void> => {
    const res = await dispatcher.request({ path: PATH, method: 'GET', headers: { host: `${APISERVER_NAME}:6443` } });
    await res.body.dump();
  };
  const clients: Array<() => Client> = [
    () => {
      const balancer = createBalancer({ origin: `https://${APISERVER_NAME}:6443`, target: `static:///${addresses.join(',')}`, tls: { ca: certs.ca }, probe: false });
      return {
        name: 'kube-balancer, one client',
        send: async () => {
          const res = await balancer.request({ origin: `https://${APISERVER_NAME}:6443`, path: PATH, method: 'GET' });
          await res.body.dump();
        },
        close: () => balancer.close(),
      };
    },
    () => {
      const pool = new Pool(haproxy.url, { connect: tls });
      return { name: 'haproxy (L4), one client', send: viaPool(pool), close: () => pool.close() };
    },
    () => {
      // Eight processes, each with its own HTTP/2 connection: haproxy spreads connections, not requests.
      const pools = Array.from({ length: 8 }, () => new Pool(haproxy.url, { connect: tls }));
      let next = 0;
      const sends = pools.map(viaPool);
      return {
        name: 'haproxy (L4), 8 clients',
        send: () => sends[next++ % sends.length]!(),
        close: async () => void (await Promise.all(pools.map((p) => p.close()))),
      };
    },
    () => {
      const pool = new Pool(`https://${addresses[0]}`, { connect: tls });
      return { name: 'undici Pool, one server', send: viaPool(pool), close: () => pool.close() };
    },
  ];
  const rows: Array<Record<string, string | number>> = [];
  try {
    const results: Array<{ name: string; runs: RunResult[]; share: number[] }> = [];
    for (const make of clients) {
      const client = make();
      await measure(client.send, { concurrency: CONCURRENCY, ms: 200, warmupMs: 0 }); // connect before counting
      await counts();
      const runs: RunResult[] = [];
      const totals = [0, 0, 0];
      for (let round = 0; round < ROUNDS; round++) {
        runs.push(await measure(client.send, { concurrency: CONCURRENCY, ms: MS }));
        (await counts()).forEach((n, i) => (totals[i]! += n));
      }
      await client.close();
      const sum = totals.reduce((a, b) => a + b, 0) || 1;
      results.push({ name: client.name, runs, share: totals.map((n) => Math.round((100 * n) / sum)) });
    }
    const reference = median(results[1]!.runs.map((r) => r.rps));
    for (const r of results) {
      const rps = median(r.runs.map((x) => x.rps));
      rows.push({
        client: r.name,
        rps,
        'vs haproxy': Number((rps / reference).toFixed(2)),
        'p50 µs': median(r.runs.map((x) => x.p50Us)),
        'p99 µs': median(r.runs.map((x) => x.p99Us)),
        'CPU µs/req': median(r.runs.map((x) => x.cpuUs)),
        'share per server %': r.share.join(' / '),
      });
    }
  } finally {
    await Promise.all(countPools.map((p) => p.close()));
    await haproxy.stop();
    await Promise.all(servers.map((s) => s.stop()));
  }
  console.log(`spread: GET at concurrency ${CONCURRENCY} over 3 apiserver-like servers (HTTP/2), ${ROUNDS} × ${MS} ms each`);
  console.log(table(rows));
  return { concurrency: CONCURRENCY, rows };
}

if (import.meta.main) await run();
