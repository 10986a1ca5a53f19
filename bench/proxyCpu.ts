// `npm run bench -- proxycpu`: kube-balancer proxy's CPU per proxied request alone, to compare
// before and after a change to its request path without kubectl proxy, haproxy or the restarts of
// `npm run bench -- proxy`. The same apiservers (bench/proxyCluster.ts, a child process) and the same
// request (GET of one ConfigMap over HTTP/1.1, paced at BENCH_RATE, default 200 req/s); the proxy is
// `kube-balancer proxy` in a child process of its own, its CPU read from /proc (10-ms ticks) over
// BENCH_REQUESTS (default 3000) requests after 1,000 discarded ones. BENCH_CPU_PROF=<dir> runs the
// proxy under `node --cpu-prof` and leaves its profile there. BENCH_PROXY_FLOOR=1 measures, in
// BENCH_ROUNDS (default 2) interleaved rounds, kubectl proxy and the thinnest Node proxy
// (bench/repro/thin-proxy.ts) beside it, each given the same kubeconfig (one apiserver).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { machine, type Machine } from './lib.ts';
import { BENCH_PATH, Cluster } from './proxyCluster.ts';

const RATE = Number(process.env.BENCH_RATE ?? 200);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3000);
const WARM = 1000;

interface ProxyCpuRun {
  startedAt: string;
  machine: Machine;
  rate: number;
  requests: number;
  failed: number;
  /** Proxy process user + system CPU per request, µs, its idle CPU (measured apart) taken off. */
  cpuUs: number;
  idleCpuMsPerS: number;
  p50: number;
  p99: number;
  seen: number[];
  spread: number | null;
}

function processCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** `count` GETs at RATE per second, evenly paced; the latency of each and how many failed. */
async function paced(pool: Pool, count: number): Promise<{ ms: number[]; failed: number }> {
  const ms: number[] = [];
  let failed = 0;
  const one = async (): Promise<void> => {
    const start = performance.now();
    try {
      const res = await pool.request({ path: BENCH_PATH, method: 'GET', signal: AbortSignal.timeout(5000) });
      await res.body.dump();
      if (res.statusCode !== 200) failed++;
    } catch {
      failed++;
    }
    ms.push(performance.now() - start);
  };
  const inFlight: Array<Promise<void>> = [];
  const start = performance.now();
  while (inFlight.length < count) {
    const due = Math.min(count, Math.floor(((performance.now() - start) / 1000) * RATE) + 1);
    while (inFlight.length < due) inFlight.push(one());
    await sleep(2);
  }
  await Promise.all(inFlight);
  return { ms: ms.sort((a, b) => a - b), failed };
}

/** A proxy to measure: how to start it and how to read its URL from what it prints. */
interface ProxyCommand {
  name: string;
  command: string;
  args: (kubeconfig: string) => string[];
  url: (output: string) => string | undefined;
}

const KUBE_BALANCER: ProxyCommand = {
  name: 'kube-balancer proxy',
  command: process.execPath,
  args: (kubeconfig) => {
    const prof = process.env.BENCH_CPU_PROF;
    const main = join(import.meta.dirname, '..', 'src', 'cli', 'main.ts');
    return [...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []), main, 'proxy', '--kubeconfig', kubeconfig, '--port', '0'];
  },
  url: (out) => /Starting to serve on (http:\/\/\S+)/.exec(out)?.[1],
};

/** BENCH_PROXY_FLOOR=1: beside it, the thinnest Node proxy (one apiserver) and kubectl proxy, rounds interleaved. */
const FLOOR: ProxyCommand[] = [
  {
    name: 'node:http + undici Pool (floor)',
    command: process.execPath,
    args: (kubeconfig) => [join(import.meta.dirname, 'repro', 'thin-proxy.ts'), kubeconfig],
    url: KUBE_BALANCER.url,
  },
  {
    name: 'kubectl proxy',
    command: 'kubectl',
    args: (kubeconfig) => ['proxy', `--kubeconfig=${kubeconfig}`, '--port=0'],
    url: (out) => /Starting to serve on (127\.0\.0\.1:\d+)/.exec(out)?.[1]?.replace(/^/, 'http://'),
  },
];

export async function run(): Promise<ProxyCpuRun | Array<ProxyCpuRun & { proxy: string; round: number }>> {
  const dir = mkdtempSync(join(tmpdir(), 'kube-balancer-proxycpu-'));
  const cluster = await Cluster.start();
  try {
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, cluster.info.kubeconfig, { mode: 0o600 });
    if (!process.env.BENCH_PROXY_FLOOR) return await measure(KUBE_BALANCER, cluster, kubeconfig);
    const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
    const results: Array<ProxyCpuRun & { proxy: string; round: number }> = [];
    for (let round = 1; round <= rounds; round++) {
      for (const proxy of [KUBE_BALANCER, ...FLOOR]) results.push({ proxy: proxy.name, round, ...(await measure(proxy, cluster, kubeconfig)) });
    }
    for (const proxy of [KUBE_BALANCER, ...FLOOR]) {
      const mine = results.filter((r) => r.proxy === proxy.name);
      console.log(`${proxy.name}: CPU µs/req ${mine.map((r) => r.cpuUs).join(' / ')}; p50 ${mine.map((r) => r.p50).join(' / ')} ms; p99 ${mine.map((r) => r.p99).join(' / ')} ms`);
    }
    return results;
  } finally {
    await cluster.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measure(proxy: ProxyCommand, cluster: Cluster, kubeconfig: string): Promise<ProxyCpuRun> {
  const startedAt = new Date().toISOString();
  const child = spawn(proxy.command, proxy.args(kubeconfig), { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        output += chunk.toString();
        const found = proxy.url(output);
        if (found) resolve(found);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code) => reject(new Error(`${proxy.name} exited with ${code}: ${output}`)));
    });
    const pool = new Pool(url);
    await paced(pool, WARM);
    await sleep(1000);
    const idleFrom = performance.now();
    const idleBefore = processCpuUs(child.pid!);
    await sleep(2000);
    const idleMsPerS = (processCpuUs(child.pid!) - idleBefore) / (performance.now() - idleFrom);
    await cluster.call('reset');
    const from = performance.now();
    const before = processCpuUs(child.pid!);
    const { ms, failed } = await paced(pool, REQUESTS);
    const cpu = processCpuUs(child.pid!) - before - idleMsPerS * (performance.now() - from);
    const seen = await cluster.call<number[]>('counts');
    // BENCH_DEBUG: the proxy's own metrics (ejections, hedges, retries) after the run.
    if (process.env.BENCH_DEBUG && proxy === KUBE_BALANCER) console.log(await (await pool.request({ path: '/.kube-balancer/metrics', method: 'GET' })).body.text());
    await pool.close();
    const result: ProxyCpuRun = {
      startedAt,
      machine: machine(),
      rate: RATE,
      requests: REQUESTS,
      failed,
      cpuUs: Math.round(cpu / REQUESTS),
      idleCpuMsPerS: Math.round(idleMsPerS * 10) / 10,
      p50: Math.round(ms[Math.floor(ms.length * 0.5)]! * 1000) / 1000,
      p99: Math.round(ms[Math.floor(ms.length * 0.99)]! * 1000) / 1000,
      seen,
      spread: Math.min(...seen) === 0 ? null : Math.round((Math.max(...seen) / Math.min(...seen)) * 1000) / 1000,
    };
    console.log(JSON.stringify({ proxy: proxy.name, ...result }));
    return result;
  } finally {
    child.kill('SIGTERM');
    await Promise.race([once(child, 'exit'), sleep(5000)]);
  }
}
