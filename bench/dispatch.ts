// Overhead of the balancer: one endpoint through kube-balancer vs a plain undici Pool to the same
// server, in the same run, HTTP/1.1 and HTTP/2, concurrency 1 and 64. Target ratio >= 0.95 (goal 0.98).
// `CPU ratio`: the client process's CPU time per request (process.cpuUsage; the server runs in
// another process) through the balancer over the Pool's: the steadier measure on a shared machine.
// Then the CPU phase: HTTP/2 only, many short interleaved runs with an A/A pair (target CPU ratio <= 1.02);
// BENCH_CPU_ONLY=1 runs it alone. BENCH_CPU_BASELINE=<another checkout>/src/index.ts adds that build's
// balancer as a fourth contender in the same rounds (a branch against main in one process: on a shared
// machine far steadier than two runs), e.g. after `git worktree add /tmp/main main`.
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Pool } from 'undici';
import { APISERVER_NAME, certs } from '../fixtures/certs/index.ts';
import { createBalancer } from '../src/index.ts';
import { compare, median, percentile, startServerProcess, table, writeResults } from './lib.ts';

const ORIGIN = `https://${APISERVER_NAME}:6443`;
const PATH = '/api/v1/namespaces/default/configmaps/bench';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MS = Number(process.env.BENCH_MS ?? 1500);
/**
 * The CPU phase: rounds of three short runs, `CPU_REQUESTS` requests each at concurrency 64 (half
 * of that at 1): the Pool, the balancer, and the Pool again (the A/A pair: the noise floor). Their
 * order turns with each round, so no contender always runs after another; short runs side by side
 * see the same load on a shared machine, and the median of the paired ratios is what is reported,
 * with its interquartile range.
 */
const CPU_ROUNDS = Number(process.env.BENCH_CPU_ROUNDS ?? 30);
const CPU_REQUESTS = Number(process.env.BENCH_CPU_REQUESTS ?? 2000);
const CPU_BASELINE = process.env.BENCH_CPU_BASELINE;

export async function run(): Promise<unknown> {
  const rows: Array<Record<string, string | number>> = [];
  const results: unknown[] = [];
  for (const protocol of process.env.BENCH_CPU_ONLY ? [] : (['h1', 'h2'] as const)) {
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
  console.log('dispatch overhead: one endpoint via kube-balancer vs plain undici Pool (target ratio >= 0.95; CPU ratio: client CPU per request)');
  console.log(table(rows));
  const cpu = await cpuPhase();
  return { rows: results, cpu };
}

/**
 * Client CPU time per request (`process.cpuUsage`; the server is another process), HTTP/2, one
 * endpoint. Target: the balancer ≤ 1.02× the Pool. `CPU ratio` is the median over rounds of the
 * balancer's run over the Pool's in the same round, `A/A ratio` the same for the Pool's second run
 * over its first: how far apart two runs of the same code fall here and now.
 */
async function cpuPhase(): Promise<unknown> {
  const server = await startServerProcess('127.0.0.2', 'h2');
  const rows: Array<Record<string, number | string>> = [];
  const results: unknown[] = [];
  const other = CPU_BASELINE ? ((await import(pathToFileURL(CPU_BASELINE).href)) as { createBalancer: typeof createBalancer }) : undefined;
  try {
    for (const concurrency of [1, 64]) {
      const requests = concurrency === 1 ? Math.ceil(CPU_REQUESTS / 2) : CPU_REQUESTS;
      const balancer = createBalancer({ origin: ORIGIN, target: `static:///127.0.0.2:${server.port}`, tls: { ca: certs.ca } });
      const pool = new Pool(`https://127.0.0.2:${server.port}`, { connect: { ca: certs.ca, servername: APISERVER_NAME } });
      const viaPool = async (): Promise<void> => (await pool.request({ path: PATH, method: 'GET', headers: { host: `${APISERVER_NAME}:6443` } })).body.dump();
      const viaBalancer = async (): Promise<void> => (await balancer.request({ origin: ORIGIN, path: PATH, method: 'GET' })).body.dump();
      const baseline = other?.createBalancer({ origin: ORIGIN, target: `static:///127.0.0.2:${server.port}`, tls: { ca: certs.ca } });
      const viaBaseline = async (): Promise<void> => (await baseline!.request({ origin: ORIGIN, path: PATH, method: 'GET' })).body.dump();
      const arms = { pool: viaPool, balancer: viaBalancer, poolAgain: viaPool, ...(baseline ? { baseline: viaBaseline } : {}) };
      const names = Object.keys(arms) as Array<keyof typeof arms>;
      // Warm-up: connections and the JIT.
      for (const name of names) await countedRun(arms[name]!, concurrency, requests);
      const runs = { pool: [] as number[], balancer: [] as number[], poolAgain: [] as number[], baseline: [] as number[] };
      for (let i = 0; i < CPU_ROUNDS; i++) {
        for (let k = 0; k < names.length; k++) {
          const name = names[(i + k) % names.length]!;
          runs[name].push(await countedRun(arms[name]!, concurrency, requests));
        }
      }
      await balancer.close();
      await baseline?.close();
      await pool.close();
      const ratios = runs.pool.map((p, i) => runs.balancer[i]! / p);
      const aa = runs.pool.map((p, i) => runs.poolAgain[i]! / p);
      const row = {
        concurrency,
        'pool CPU µs/req': round(median(runs.pool)),
        'balancer CPU µs/req': round(median(runs.balancer)),
        'CPU ratio': Number(median(ratios).toFixed(3)),
        'CPU ratio IQR': iqr(ratios),
        'A/A ratio': Number(median(aa).toFixed(3)),
        'A/A IQR': iqr(aa),
        ...(baseline ? baselineColumns(runs.balancer, runs.baseline) : {}),
        rounds: CPU_ROUNDS,
        'requests/run': requests,
      };
      rows.push(row);
      results.push({ ...row, runs });
    }
  } finally {
    await server.stop();
  }
  console.log('client CPU per request, h2, one endpoint, median of paired runs (target CPU ratio <= 1.02; A/A: the Pool against itself, the noise floor)');
  console.log(table(rows));
  return results;
}

/**
 * A minor GC, run inside each measured run at its end: every run starts with an empty young
 * generation and pays for the scavenges its own garbage causes, not for the previous run's.
 */
const collect: (() => void) | undefined = (() => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as ((options?: object) => void) | undefined;
  return gc && (() => gc({ type: 'minor', execution: 'sync' }));
})();

/** Sends exactly `requests` requests with `concurrency` workers; returns this process's CPU µs per request. */
async function countedRun(send: () => Promise<void>, concurrency: number, requests: number): Promise<number> {
  let left = requests;
  const worker = async (): Promise<void> => {
    while (left > 0) {
      left--;
      await send();
    }
  };
  collect?.();
  const start = process.cpuUsage();
  await Promise.all(Array.from({ length: concurrency }, worker));
  collect?.();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / requests;
}

/** This build's balancer against the baseline build's, round by round. */
function baselineColumns(balancer: number[], baseline: number[]): Record<string, number | string> {
  const ratios = balancer.map((b, i) => b / baseline[i]!);
  return { 'baseline CPU µs/req': round(median(baseline)), 'vs baseline': Number(median(ratios).toFixed(3)), 'vs baseline IQR': iqr(ratios) };
}

/** The interquartile range of `values`, as "p25–p75". */
function iqr(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  return `${percentile(sorted, 0.25).toFixed(3)}–${percentile(sorted, 0.75).toFixed(3)}`;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

if (import.meta.main) writeResults('dispatch', await run());
