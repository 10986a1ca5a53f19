// Overhead of the balancer: one endpoint through kube-balancer vs a plain undici Pool to the same
// server, in the same run, HTTP/1.1 and HTTP/2, concurrency 1 and 64. Target ratio >= 0.95 (goal 0.98).
// `CPU ratio`: the client process's CPU time per request (process.cpuUsage; the server runs in
// another process) through the balancer over the Pool's: the steadier measure on a shared machine.
// Then the CPU phase: HTTP/2 only, many short interleaved runs with an A/A pair (target CPU ratio <= 1.02),
// each ratio with its 95 % bootstrap interval; BENCH_CPU_ONLY=1 runs it alone. BENCH_CPU_BASELINE=<another checkout>/src/index.ts adds that build's
// balancer as a fourth contender in the same rounds (a branch against main in one process: on a shared
// machine far steadier than two runs), e.g. after `git worktree add /tmp/main main`; or
// bench/repro/thin-dispatcher.mjs, the floor of any Dispatcher. A run with the default settings is
// kept in bench/runs/ for `npm run bench:report`.
import { join, relative } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { fetch, Pool, type Dispatcher } from 'undici';
import { APISERVER_NAME, certs } from '../fixtures/certs/index.ts';
import { seeded } from '../fleet/sim/random.ts';
import { createBalancer, type BalancerOptions } from '../src/index.ts';
import { compare, importBuild, keepRun, machine, median, startServerProcess, table, writeResults, type Machine } from './lib.ts';

const ORIGIN = `https://${APISERVER_NAME}:6443`;
const PATH = '/api/v1/namespaces/default/configmaps/bench';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MS = Number(process.env.BENCH_MS ?? 1500);
/**
 * The CPU phase: rounds of short runs side by side, `CPU_REQUESTS` requests each at concurrency 64
 * (a quarter of that at 1): the Pool, the balancer, and the Pool again (the A/A pair: the noise
 * floor). Their order is shuffled each round, so no contender always runs after another; short runs
 * side by side see the same load on a shared machine. Reported: the median of the paired ratios,
 * with a bootstrap confidence interval of that median (rounds resampled). Rounds go on until the
 * intervals are within ±`CPU_TARGET_HALF_WIDTH`, or `CPU_SECONDS` per concurrency have passed.
 * Short runs pair better than long ones here: at load 3-5, 30 rounds of 1,000/2,000 requests gave
 * an interquartile range of ±10-15 % per pair; 300 rounds of 64/256 give an interval of ±1-2 %.
 * The interval assumes rounds independent: drift across rounds (another engineer's job starting)
 * widens the truth beyond it, which is what the A/A line shows.
 */
const CPU_MIN_ROUNDS = Number(process.env.BENCH_CPU_ROUNDS ?? 40);
const CPU_MAX_ROUNDS = Number(process.env.BENCH_CPU_MAX_ROUNDS ?? 2000);
const CPU_SECONDS = Number(process.env.BENCH_CPU_SECONDS ?? 55);
const CPU_TARGET_HALF_WIDTH = Number(process.env.BENCH_CPU_HALF_WIDTH ?? 0.008);
const CPU_REQUESTS = Number(process.env.BENCH_CPU_REQUESTS ?? 256);
/** More options for this build's balancer (JSON), e.g. `{"maxHeldResponse":0}`, to price a feature against the baseline. */
const CPU_OPTIONS = JSON.parse(process.env.BENCH_CPU_OPTIONS ?? '{}') as Partial<BalancerOptions>;
const CPU_CONCURRENCY = (process.env.BENCH_CPU_CONCURRENCY ?? '1,64').split(',').map(Number);
/** The client: `request` (Dispatcher.request, the body dumped) or `fetch` (undici's, the body read as text). */
const CPU_CLIENT = process.env.BENCH_CPU_CLIENT === 'fetch' ? 'fetch' : 'request';
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
 * Client CPU time per request (`process.cpuUsage`, every thread of this process; the server is
 * another process), HTTP/2, one endpoint. Target: the balancer ≤ 1.02× the Pool. `CPU ratio` is the
 * median over rounds of the balancer's run over the Pool's in the same round, with its 95 %
 * bootstrap interval; `A/A ratio` the same for the Pool's second run over its first: how far apart
 * two runs of the same code fall here and now (it should come out 1.00 within its interval).
 */
async function cpuPhase(): Promise<unknown> {
  const startedAt = new Date().toISOString();
  const server = await startServerProcess('127.0.0.2', 'h2');
  const rows: Array<Record<string, number | string>> = [];
  const results: unknown[] = [];
  const other = CPU_BASELINE ? await importBuild(CPU_BASELINE) : undefined;
  const url = `${ORIGIN}${PATH}`;
  try {
    for (const concurrency of CPU_CONCURRENCY) {
      const requests = concurrency === 1 ? Math.ceil(CPU_REQUESTS / 4) : CPU_REQUESTS;
      const balancer = createBalancer({ origin: ORIGIN, target: `static:///127.0.0.2:${server.port}`, tls: { ca: certs.ca }, ...CPU_OPTIONS });
      const pool = new Pool(`https://127.0.0.2:${server.port}`, { connect: { ca: certs.ca, servername: APISERVER_NAME } });
      const baseline = other?.createBalancer({ origin: ORIGIN, target: `static:///127.0.0.2:${server.port}`, tls: { ca: certs.ca } });
      // The Pool is addressed as the balancer addresses its own: the apiserver's Host header.
      const viaPool =
        CPU_CLIENT === 'fetch'
          ? async (): Promise<void> => void (await (await fetch(`https://127.0.0.2:${server.port}${PATH}`, { dispatcher: pool, headers: { host: `${APISERVER_NAME}:6443` } })).text())
          : async (): Promise<void> => (await pool.request({ path: PATH, method: 'GET', headers: { host: `${APISERVER_NAME}:6443` } })).body.dump();
      const via = (dispatcher: Dispatcher): (() => Promise<void>) =>
        CPU_CLIENT === 'fetch'
          ? async () => void (await (await fetch(url, { dispatcher })).text())
          : async () => (await dispatcher.request({ origin: ORIGIN, path: PATH, method: 'GET' })).body.dump();
      const arms = { pool: viaPool, balancer: via(balancer), poolAgain: viaPool, ...(baseline ? { baseline: via(baseline) } : {}) };
      const names = Object.keys(arms) as Array<keyof typeof arms>;
      // Warm-up: connections and the JIT.
      for (let i = 0; i < 3; i++) for (const name of names) await countedRun(arms[name]!, concurrency, requests);
      const runs = { pool: [] as number[], balancer: [] as number[], poolAgain: [] as number[], baseline: [] as number[] };
      const threadRuns = { pool: [] as number[], balancer: [] as number[], poolAgain: [] as number[], baseline: [] as number[] };
      const started = performance.now();
      const random = seeded(concurrency);
      let rounds = 0;
      for (; rounds < CPU_MAX_ROUNDS; rounds++) {
        // A fresh order each round: no contender always runs first, or right after another (whose
        // garbage or cache footprint it might pay for).
        for (const name of shuffled(names, random)) {
          const { process, thread } = await countedRun(arms[name]!, concurrency, requests);
          runs[name].push(process);
          threadRuns[name].push(thread);
        }
        if (rounds + 1 < CPU_MIN_ROUNDS || (rounds + 1) % 10 !== 0) continue;
        if (performance.now() - started > CPU_SECONDS * 1000) break;
        const narrow = (a: number[], b: number[]): boolean => halfWidth(medianRatio(a, b)) <= CPU_TARGET_HALF_WIDTH;
        if (narrow(runs.balancer, runs.pool) && narrow(runs.poolAgain, runs.pool) && (!baseline || narrow(runs.balancer, runs.baseline))) break;
      }
      rounds = runs.pool.length;
      await balancer.close();
      await baseline?.close();
      await pool.close();
      const cpu = medianRatio(runs.balancer, runs.pool);
      const aa = medianRatio(runs.poolAgain, runs.pool);
      const row = {
        concurrency,
        'pool CPU µs/req': round(median(runs.pool)),
        'balancer CPU µs/req': round(median(runs.balancer)),
        'CPU ratio': cpu.median,
        'CPU ratio 95% CI': interval(cpu),
        'A/A ratio': aa.median,
        'A/A 95% CI': interval(aa),
        ...(baseline ? baselineColumns(runs.balancer, runs.baseline) : {}),
        'thread CPU ratio': medianRatio(threadRuns.balancer, threadRuns.pool).median,
        rounds,
        'requests/run': requests,
        seconds: Math.round((performance.now() - started) / 1000),
      };
      rows.push(row);
      results.push({ ...row, client: CPU_CLIENT, cpuRatio: cpu, aaRatio: aa, runs, threadRuns });
    }
  } finally {
    await server.stop();
  }
  console.log(
    `client CPU per request (${CPU_CLIENT}), h2, one endpoint, median of paired runs with its 95 % bootstrap interval (target CPU ratio <= 1.02; A/A: the Pool against itself, the noise floor)`,
  );
  console.log(table(rows));
  keep(startedAt, rows);
  return results;
}

/**
 * A run of the CPU phase as the target is measured (defaults: this build's default options, the
 * `request` client, concurrency 1 and 64; a baseline build allowed, such as the thin Dispatcher) is
 * also kept in bench/runs/ (committed), which `npm run bench:report` puts into BENCHMARKS.md.
 */
function keep(startedAt: string, rows: Array<Record<string, number | string>>): void {
  if (Object.keys(CPU_OPTIONS).length > 0 || CPU_CLIENT !== 'request' || CPU_CONCURRENCY.join(',') !== '1,64') return;
  const baseline = CPU_BASELINE === undefined ? null : relative(join(import.meta.dirname, '..'), CPU_BASELINE);
  const run: DispatchRun = { startedAt, machine: machine(), baseline, rows };
  console.log(`kept in ${keepRun('dispatch', startedAt, run)}`);
}

/** A kept run of the CPU phase (bench/runs/dispatch-*.json), as `npm run bench:report` reads it. */
export interface DispatchRun {
  startedAt: string;
  machine: Machine;
  /** The build measured beside it (`BENCH_CPU_BASELINE`), relative to the root; null for none. */
  baseline: string | null;
  rows: Array<Record<string, number | string>>;
}

interface MedianRatio {
  median: number;
  low: number;
  high: number;
}

/**
 * The median of the paired ratios `a[i] / b[i]`, with its 95 % percentile-bootstrap interval: rounds
 * drawn with replacement 2,000 times (a fixed seed, so the same runs give the same interval).
 */
function medianRatio(a: number[], b: number[]): MedianRatio {
  const ratios = b.map((x, i) => a[i]! / x);
  const n = ratios.length;
  const draws = 2000;
  const medians = new Float64Array(draws);
  const sample = new Array<number>(n);
  const random = seeded(0x9e3779b9);
  for (let d = 0; d < draws; d++) {
    for (let i = 0; i < n; i++) sample[i] = ratios[Math.floor(random() * n)]!;
    medians[d] = median(sample);
  }
  medians.sort();
  const fixed = (x: number): number => Number(x.toFixed(4));
  return { median: fixed(median(ratios)), low: fixed(medians[Math.floor(draws * 0.025)]!), high: fixed(medians[Math.ceil(draws * 0.975) - 1]!) };
}

function shuffled<T>(values: readonly T[], random: () => number): T[] {
  const out = [...values];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function halfWidth({ low, high }: MedianRatio): number {
  return (high - low) / 2;
}

/** An interval as "low–high". */
function interval({ low, high }: MedianRatio): string {
  return `${low.toFixed(3)}–${high.toFixed(3)}`;
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

/**
 * Sends exactly `requests` requests with `concurrency` workers; returns this process's CPU µs per
 * request (every thread: GC helpers and compiler threads included) and its main thread's alone.
 */
async function countedRun(send: () => Promise<void>, concurrency: number, requests: number): Promise<{ process: number; thread: number }> {
  let left = requests;
  const worker = async (): Promise<void> => {
    while (left > 0) {
      left--;
      await send();
    }
  };
  collect?.();
  const start = process.cpuUsage();
  const threadStart = process.threadCpuUsage();
  await Promise.all(Array.from({ length: concurrency }, worker));
  collect?.();
  const used = process.cpuUsage(start);
  const thread = process.threadCpuUsage(threadStart);
  return { process: (used.user + used.system) / requests, thread: (thread.user + thread.system) / requests };
}

/** This build's balancer against the baseline build's, round by round. */
function baselineColumns(balancer: number[], baseline: number[]): Record<string, number | string> {
  const ratio = medianRatio(balancer, baseline);
  return { 'baseline CPU µs/req': round(median(baseline)), 'vs baseline': ratio.median, 'vs baseline 95% CI': interval(ratio) };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

if (import.meta.main) writeResults('dispatch', await run());
