// `npm run bench -- proxy` (issue 29, item 6): the real `kubectl proxy` against `kube-balancer
// proxy`, side by side in one run, over the same three simulated apiservers (fixtures/apiserver, in
// a child process: bench/proxyCluster.ts) and with the same client (an undici Pool from this process,
// GET of one ConfigMap over HTTP/1.1 to the proxy, open loop at 200 req/s, a 5-s deadline).
//
// Both proxies get the same kubeconfig, whose server is a haproxy `mode tcp` in front of the three
// apiservers (fixtures/haproxy): the single URL most clusters give their clients. kubectl proxy keeps
// one HTTP/2 connection through it, so it is pinned to one apiserver until that connection breaks;
// kube-balancer proxy reads the three addresses from the `default/kubernetes` EndpointSlice through it.
// Each proxy is its own child process, so its CPU time is read from /proc/<pid>/stat (10-ms ticks).
//
// Phases, each after a discarded 1-s warm-up at the same rate:
//   steady   BENCH_ROUNDS (2) rounds of BENCH_MS (6 s) each for direct requests (an undici Pool over
//            HTTP/2 straight to apiserver 0, with the token), kubectl proxy and kube-balancer proxy,
//            interleaved: latency (added = proxied − direct), share of the requests each apiserver saw
//            (spread: the largest share over the smallest), CPU per request of the proxy process.
//   rolling  each apiserver in turn restarted gracefully (kube-apiserver's defaults: no shutdown delay,
//            503 + Retry-After on open connections for 1 s, then GOAWAY), 1.5 s apart: failed requests.
//   crash    6 s; at 2 s the apiserver that had served the most of this phase is killed (connections
//            reset, new ones refused) and revived after the phase: failed requests.
// A request failed when it got anything but 200 or no answer in time. Results: bench/results/proxy.json
// and a copy in bench/runs/ for `npm run bench:report`.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { certs } from '../fixtures/certs/index.ts';
import { Haproxy } from '../fixtures/haproxy/Haproxy.ts';
import { keepRun, machine, percentile, table, writeResults, type Machine } from './lib.ts';
import { BENCH_PATH, Cluster } from './proxyCluster.ts';

const RATE = Number(process.env.BENCH_RATE ?? 200);
const MS = Number(process.env.BENCH_MS ?? 6000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 2));
const WARM_MS = 1000;
const CRASH_MS = 6000;
const STARTUP_MS = 3000;
const QUIET_MS = 2000;
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 3000);
const DEADLINE_MS = 5000;
/** After an apiserver is back: its lease renewed and the EndpointSlice updated (leaseTtlMs 1 s), then read by the proxy. */
const SETTLE_MS = 1500;

export const KUBECTL = 'kubectl proxy';
export const KUBE_BALANCER = 'kube-balancer proxy';
export const DIRECT = 'direct (apiserver 0)';

export type Phase = 'steady' | 'rolling restart' | 'crash';

export interface ProxyRow {
  phase: Phase;
  round: number;
  client: string;
  requests: number;
  failed: number;
  /** Answers by status (0: no answer), failures included. */
  statuses: Record<string, number>;
  p50: number;
  p99: number;
  max: number;
  /** The proxy process's user + system CPU µs per request (null for direct requests). */
  proxyCpuUs: number | null;
  /** The proxy process's threads' time runnable but waiting for a CPU, ms per second of the phase. */
  proxyWaitMsPerS: number | null;
  /** The bench GETs each apiserver saw, and their share. */
  seen: number[];
  share: number[];
  /** crash: the apiserver killed. */
  crashed?: number;
  /** rolling restart: how long each apiserver's graceful restart took, ms. */
  restartMs?: number[];
}

export interface ProxySummary {
  client: string;
  /** Steady: the largest apiserver share over the smallest (null: one apiserver saw nothing, pinned). */
  spread: number | null;
  failedRolling: number;
  failedCrash: number;
  p50: number;
  p99: number;
  addedP50: number;
  addedP99: number;
  /** Steady: the proxy process's CPU over every steady request, µs per request. */
  cpuUs: number;
}

export interface ProxyRun {
  startedAt: string;
  machine: Machine;
  settings: { rate: number; ms: number; rounds: number; warmMs: number; crashMs: number; deadlineMs: number; kubectl: string; upstream: string };
  direct: { p50: number; p99: number };
  /** Each proxy's CPU ms per second with no request, measured before the phases. */
  idleCpuMsPerS: Record<string, number>;
  summary: ProxySummary[];
  rows: ProxyRow[];
}

interface Proxy {
  name: string;
  url: string;
  pid: number;
  stop: () => Promise<void>;
}

/** Spawns a proxy and waits for its "Starting to serve on …" line, which both print. */
async function spawnProxy(name: string, command: string, args: string[], url: (line: string) => string | undefined): Promise<Proxy> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const found = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const at = url(output);
      if (at) resolve(at);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}: ${output}`)));
    setTimeout(() => reject(new Error(`${name} did not start in 15 s: ${output}`)), 15_000).unref();
  });
  return {
    name,
    url: found,
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await Promise.race([once(child, 'exit'), sleep(5000).then(() => child.kill('SIGKILL'))]);
    },
  };
}

/** User + system CPU of a process (every thread) from /proc, in µs (clock ticks of 10 ms). */
function processCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/**
 * How long the process's threads waited, runnable, for a CPU (µs; /proc/<pid>/task/<tid>/schedstat's
 * second field): on a shared machine, the part of a proxy's latency that is the machine's.
 */
function processWaitUs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
    } catch {
      // the thread ended
    }
  }
  return ns / 1000;
}

interface Sample {
  ms: number;
  status: number;
}

/** GETs at RATE per second, evenly paced, until `stop()` says so after `ms` at least; every answer timed. */
async function paced(pool: Pool, headers: Record<string, string>, ms: number, stop: () => boolean = () => true, during?: (elapsed: number) => void): Promise<Sample[]> {
  const samples: Sample[] = [];
  const inFlight: Array<Promise<void>> = [];
  const one = async (): Promise<void> => {
    const start = performance.now();
    let status = 0;
    try {
      const res = await pool.request({ path: BENCH_PATH, method: 'GET', headers, signal: AbortSignal.timeout(DEADLINE_MS) });
      await res.body.dump();
      status = res.statusCode;
    } catch {
      status = 0;
    }
    samples.push({ ms: performance.now() - start, status });
    if (process.env.BENCH_DEBUG && status !== 200) console.log(`${Math.round(start - DEBUG_T0)} ms: failed ${status} after ${Math.round(performance.now() - start)} ms`);
  };
  const start = performance.now();
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const elapsed = performance.now() - start;
      during?.(elapsed);
      const due = Math.floor((elapsed / 1000) * RATE);
      if (elapsed >= ms && stop()) {
        clearInterval(tick);
        resolve();
        return;
      }
      while (inFlight.length < due) inFlight.push(one());
    }, 2);
  });
  await Promise.all(inFlight);
  return samples;
}

const DEBUG_T0 = performance.now();
const round1 = (x: number): number => Math.round(x * 10) / 10;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;

function spreadOf(seen: number[]): number | null {
  const min = Math.min(...seen);
  return min === 0 ? null : round3(Math.max(...seen) / min);
}

interface Contender {
  name: string;
  pool: Pool;
  headers: Record<string, string>;
  pid: number | undefined;
}

async function measure(cluster: Cluster, c: Contender, phase: Phase, round: number): Promise<{ row: ProxyRow; samples: Sample[] }> {
  await paced(c.pool, c.headers, WARM_MS);
  await cluster.call('reset');
  const cpuBefore = c.pid === undefined ? NaN : processCpuUs(c.pid);
  const waitBefore = c.pid === undefined ? NaN : processWaitUs(c.pid);
  const measuredFrom = performance.now();
  let crashed: number | undefined;
  let restartMs: number[] | undefined;
  const phaseStart = DEBUG_T0;
  let samples: Sample[];
  if (phase === 'steady') {
    samples = await paced(c.pool, c.headers, MS);
  } else if (phase === 'rolling restart') {
    let done = false;
    restartMs = [];
    const rolling = (async () => {
      await sleep(1000);
      for (let i = 0; i < cluster.info.hosts.length; i++) {
        const start = performance.now();
        if (process.env.BENCH_DEBUG) console.log(`${Math.round(performance.now() - phaseStart)} ms: restart ${i}`);
        await cluster.call('restart', i);
        if (process.env.BENCH_DEBUG) console.log(`${Math.round(performance.now() - phaseStart)} ms: restarted ${i}`);
        restartMs.push(Math.round(performance.now() - start));
        await sleep(SETTLE_MS);
      }
      done = true;
    })();
    samples = await paced(c.pool, c.headers, 1000, () => done);
    await rolling;
  } else {
    let fired = false;
    let crash: Promise<void> | undefined;
    samples = await paced(c.pool, c.headers, CRASH_MS, undefined, (elapsed) => {
      if (fired || elapsed < CRASH_MS / 3) return;
      fired = true;
      crash = (async () => {
        const seen = await cluster.call<number[]>('counts');
        crashed = seen.indexOf(Math.max(...seen));
        await cluster.call('crash', crashed);
      })();
    });
    await crash;
  }
  const cpu = c.pid === undefined ? NaN : processCpuUs(c.pid) - cpuBefore;
  const wait = c.pid === undefined ? NaN : processWaitUs(c.pid) - waitBefore;
  const seconds = (performance.now() - measuredFrom) / 1000;
  const seen = await cluster.call<number[]>('counts');
  if (crashed !== undefined) {
    await cluster.call('revive', crashed);
    await sleep(SETTLE_MS);
  }
  // A proxy that fell behind still works off its backlog after the client gave up: let it finish before
  // the next phase, whose counts and CPU would otherwise take it in.
  await sleep(QUIET_MS);
  const latencies = samples.map((s) => s.ms).sort((a, b) => a - b);
  const statuses: Record<string, number> = {};
  for (const s of samples) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
  const total = seen.reduce((a, b) => a + b, 0) || 1;
  const row: ProxyRow = {
    phase,
    round,
    client: c.name,
    requests: samples.length,
    failed: samples.filter((s) => s.status !== 200).length,
    statuses,
    p50: round3(percentile(latencies, 0.5)),
    p99: round3(percentile(latencies, 0.99)),
    max: round1(latencies.at(-1) ?? 0),
    proxyCpuUs: Number.isNaN(cpu) ? null : round1(cpu / Math.max(1, samples.length)),
    proxyWaitMsPerS: Number.isNaN(wait) ? null : round1(wait / 1000 / seconds),
    seen,
    share: seen.map((n) => round3(n / total)),
    ...(crashed === undefined ? {} : { crashed }),
    ...(restartMs === undefined ? {} : { restartMs }),
  };
  return { row, samples };
}

export async function run(): Promise<ProxyRun> {
  const startedAt = new Date().toISOString();
  const dir = mkdtempSync(join(tmpdir(), 'kube-balancer-proxybench-'));
  const cluster = await Cluster.start();
  const stops: Array<() => Promise<void>> = [() => cluster.close(), () => Promise.resolve(rmSync(dir, { recursive: true, force: true }))];
  try {
    const { port, hosts, token } = cluster.info;
    const haproxy = await Haproxy.start({ backends: hosts.map((h) => `${h}:${port}`), mode: 'tcp' });
    stops.unshift(() => haproxy.stop());
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, cluster.info.kubeconfig.replace(/server: "[^"]*"/, `server: "${haproxy.url}"`), { mode: 0o600 });
    const kubectl = await spawnProxy(KUBECTL, 'kubectl', ['proxy', `--kubeconfig=${kubeconfig}`, '--port=0'], (out) => /Starting to serve on (127\.0\.0\.1:\d+)/.exec(out)?.[1]?.replace(/^/, 'http://'));
    stops.unshift(() => kubectl.stop());
    const main = join(import.meta.dirname, '..', 'src', 'cli', 'main.ts');
    const balancer = await spawnProxy(KUBE_BALANCER, process.execPath, [main, 'proxy', '--kubeconfig', kubeconfig, '--port', '0'], (out) => /Starting to serve on (http:\/\/\S+)/.exec(out)?.[1]);
    stops.unshift(() => balancer.stop());
    const contenders: Contender[] = [
      { name: DIRECT, pool: new Pool(`https://${hosts[0]}:${port}`, { connect: { ca: certs.ca }, allowH2: true }), headers: { authorization: `Bearer ${token}` }, pid: undefined },
      ...[kubectl, balancer].map((p) => ({ name: p.name, pool: new Pool(p.url), headers: {}, pid: p.pid })),
    ];
    stops.unshift(async () => void (await Promise.all(contenders.filter((c) => !c.pool.destroyed).map((c) => c.pool.destroy()))));
    const rows: ProxyRow[] = [];
    const steady = new Map<string, Sample[]>(contenders.map((c) => [c.name, []]));
    const log = (r: ProxyRow): void => {
      rows.push(r);
      const crashed = (r.crashed === undefined ? '' : `  crashed apiserver ${r.crashed}`) + (r.restartMs === undefined ? '' : `  restarts took ${r.restartMs.join('/')} ms`);
      console.log(`${r.phase.padEnd(15)} ${r.client.padEnd(20)} requests ${r.requests}  failed ${r.failed}  p50 ${r.p50}  p99 ${r.p99}  max ${r.max} ms  proxy CPU ${r.proxyCpuUs ?? '-'} µs/req, waited for a CPU ${r.proxyWaitMsPerS ?? '-'} ms/s  seen ${r.seen.join('/')}  statuses ${JSON.stringify(r.statuses)}${crashed}`);
    };
    // What each proxy costs doing nothing (its probes, its EndpointSlice watch, timers), apart, once
    // kube-balancer proxy's start-up is over: Node compiles for its first ~2 s (250 ms of CPU).
    await sleep(STARTUP_MS);
    const idleFrom = performance.now();
    const idleBefore = [kubectl, balancer].map((p) => processCpuUs(p.pid));
    for (let t = 0; t < IDLE_MS; t += 1000) {
      await sleep(1000);
      if (process.env.BENCH_DEBUG) console.log(`idle ${t + 1000} ms: CPU ${[kubectl, balancer].map((p, i) => (processCpuUs(p.pid) - idleBefore[i]!) / 1000).join(' / ')} ms`);
    }
    const idleS = (performance.now() - idleFrom) / 1000;
    const idle = Object.fromEntries([kubectl, balancer].map((p, i) => [p.name, round1((processCpuUs(p.pid) - idleBefore[i]!) / 1000 / idleS)]));
    console.log(`idle CPU ms/s: ${JSON.stringify(idle)}`);
    // BENCH_ONLY=steady,rolling,crash (trials): some phases alone.
    const only = process.env.BENCH_ONLY?.split(',');
    for (let round = 0; round < (only && !only.includes('steady') ? 0 : ROUNDS); round++) {
      // Every other round in the reverse order, so that drift on the shared machine hits all alike.
      for (const c of round % 2 ? [...contenders].reverse() : contenders) {
        const { row, samples } = await measure(cluster, c, 'steady', round);
        steady.get(c.name)!.push(...samples);
        log(row);
      }
    }
    // The direct Pool's idle HTTP/2 connection to apiserver 0 would hold up its graceful shutdown.
    await contenders[0]!.pool.close();
    for (const phase of ['rolling restart', 'crash'] as const) {
      if (only && !only.some((word) => phase.startsWith(word))) continue;
      for (const c of contenders.slice(1)) log((await measure(cluster, c, phase, 0)).row);
    }
    const pct = (name: string, p: number): number => percentile(steady.get(name)!.map((s) => s.ms).sort((a, b) => a - b), p);
    const direct = { p50: round3(pct(DIRECT, 0.5)), p99: round3(pct(DIRECT, 0.99)) };
    const summary = contenders.slice(1).map(({ name }): ProxySummary => {
      const mine = rows.filter((r) => r.client === name);
      const steadyRows = mine.filter((r) => r.phase === 'steady');
      const seen = hosts.map((_, i) => steadyRows.reduce((sum, r) => sum + (r.seen[i] ?? 0), 0));
      const requests = steadyRows.reduce((sum, r) => sum + r.requests, 0);
      const cpu = steadyRows.reduce((sum, r) => sum + (r.proxyCpuUs ?? 0) * r.requests, 0);
      const p50 = round3(pct(name, 0.5));
      const p99 = round3(pct(name, 0.99));
      return {
        client: name,
        spread: spreadOf(seen),
        failedRolling: mine.find((r) => r.phase === 'rolling restart')?.failed ?? NaN,
        failedCrash: mine.find((r) => r.phase === 'crash')?.failed ?? NaN,
        p50,
        p99,
        addedP50: round3(p50 - direct.p50),
        addedP99: round3(p99 - direct.p99),
        cpuUs: round1(cpu / Math.max(1, requests)),
      };
    });
    console.log(table(rows.map((r) => ({ ...r, statuses: JSON.stringify(r.statuses), seen: r.seen.join('/'), share: r.share.join('/'), proxyCpuUs: r.proxyCpuUs ?? '-', proxyWaitMsPerS: r.proxyWaitMsPerS ?? '-', crashed: r.crashed ?? '-', restartMs: r.restartMs?.join('/') ?? '-' }))));
    console.log(`\ndirect: p50 ${direct.p50} ms, p99 ${direct.p99} ms\n`);
    console.log(table(targetRows(summary)));
    const kubectlVersion = await version();
    const result: ProxyRun = {
      startedAt,
      machine: machine(),
      settings: { rate: RATE, ms: MS, rounds: ROUNDS, warmMs: WARM_MS, crashMs: CRASH_MS, deadlineMs: DEADLINE_MS, kubectl: kubectlVersion, upstream: 'haproxy mode tcp in front of the three apiservers' },
      direct,
      idleCpuMsPerS: idle,
      summary,
      rows,
    };
    // Only the default settings' runs are kept for BENCHMARKS.md: a shortened one is a trial.
    if (process.env.BENCH_MS === undefined && process.env.BENCH_ROUNDS === undefined && process.env.BENCH_RATE === undefined && !only) console.log(`kept in ${keepRun('proxy', startedAt, result)}`);
    return result;
  } finally {
    for (const stop of stops) await stop().catch((error: unknown) => console.error(`proxy bench: cleanup: ${String(error)}`));
  }
}

/** The summary with the targets, kube-balancer proxy's figure over kubectl proxy's as the ratio. */
export function targetRows(summary: readonly ProxySummary[]): Array<Record<string, string>> {
  const k = summary.find((s) => s.client === KUBECTL);
  const b = summary.find((s) => s.client === KUBE_BALANCER);
  const fmt = (v: number | null | undefined): string => (v === null ? '∞ (pinned)' : v === undefined || Number.isNaN(v) ? '–' : String(v));
  const ratio = (x: number | null | undefined, y: number | null | undefined): string => (x == null || y == null || y <= 0 ? '–' : String(round3(x / y)));
  const row = (figure: string, pick: (s: ProxySummary) => number | null, target: string, met?: (v: number | null) => boolean): Record<string, string> => {
    const kv = k ? pick(k) : undefined;
    const bv = b ? pick(b) : undefined;
    return { figure, [KUBECTL]: fmt(kv), [KUBE_BALANCER]: fmt(bv), 'kube-balancer ÷ kubectl': ratio(bv, kv), target, met: bv === undefined || !met ? '–' : met(bv) ? 'yes' : 'no' };
  };
  return [
    row('spread (max ÷ min share)', (s) => s.spread, '≤ 1.1', (v) => v !== null && v <= 1.1),
    row('failed, rolling restart', (s) => s.failedRolling, '0', (v) => v === 0),
    row('failed, crash', (s) => s.failedCrash, '0', (v) => v === 0),
    row('added p50 ms', (s) => s.addedP50, '–'),
    row('added p99 ms', (s) => s.addedP99, '≤ 1', (v) => v !== null && v <= 1),
    row('proxy CPU µs/req', (s) => s.cpuUs, "≤ kubectl proxy's", (v) => v !== null && k !== undefined && v <= k.cpuUs),
  ];
}

async function version(): Promise<string> {
  const child = spawn('kubectl', ['version', '--client', '-o', 'json'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  await once(child, 'exit');
  try {
    return (JSON.parse(out) as { clientVersion: { gitVersion: string } }).clientVersion.gitVersion;
  } catch {
    return 'unknown';
  }
}

if (import.meta.main) writeResults('proxy', await run());
