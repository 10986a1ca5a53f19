// Overhead of the balancer: one endpoint through kube-balancer vs a plain undici Pool to the same
// server, in the same run, HTTP/1.1 and HTTP/2, concurrency 1 and 64. Target ratio >= 0.95 (goal 0.98).
import { Pool } from 'undici';
import { APISERVER_NAME, certs } from '../fixtures/certs/index.ts';
import { createBalancer } from '../src/index.ts';
import { compare, startServerProcess, table, writeResults } from './lib.ts';

const ORIGIN = `https://${APISERVER_NAME}:6443`;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MS = Number(process.env.BENCH_MS ?? 1500);

export async function run(): Promise<unknown> {
  const rows: Array<Record<string, string | number>> = [];
  const results: unknown[] = [];
  for (const protocol of ['h1', 'h2'] as const) {
    const server = await startServerProcess('127.0.0.2', protocol);
    try {
      for (const concurrency of [1, 64]) {
        const balancer = createBalancer({ origin: `https://${APISERVER_NAME}:6443`, target: `static:///127.0.0.2:${server.port}`, tls: { ca: certs.ca } });
        const pool = new Pool(`https://127.0.0.2:${server.port}`, { connect: { ca: certs.ca, servername: APISERVER_NAME } });
        const viaBalancer = async (): Promise<void> => {
          const res = await balancer.request({ origin: ORIGIN, path: '/api/v1/namespaces/default/configmaps/bench', method: 'GET' });
          await res.body.dump();
        };
        const viaPool = async (): Promise<void> => {
          const res = await pool.request({ path: '/api/v1/namespaces/default/configmaps/bench', method: 'GET', headers: { host: `${APISERVER_NAME}:6443` } });
          await res.body.dump();
        };
        const { row: medians, runs } = await compare({ pool: viaPool, balancer: viaBalancer }, { rounds: ROUNDS, concurrency, ms: MS });
        await balancer.close();
        await pool.close();
        const row = { protocol, concurrency, ...medians };
        rows.push(row);
        results.push({ ...row, runs });
      }
    } finally {
      await server.stop();
    }
  }
  console.log('dispatch overhead: one endpoint via kube-balancer vs plain undici Pool (target ratio >= 0.95)');
  console.log(table(rows));
  return { rows: results };
}

if (import.meta.main) writeResults('dispatch', await run());
