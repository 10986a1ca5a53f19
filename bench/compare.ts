// The benchmark side by side: kube-balancer against plain undici (Pool, BalancedPool,
// interceptors.dns) and haproxy (mode tcp, pinned; mode http, roundrobin and leastconn), one run
// each, over three capacity-bound servers in child processes (4 requests at once each, bench/server.ts):
//   equal       three 20-ms servers, 64 requests at once (saturated): ideal 600 req/s
//   slow        20/20/100 ms, 64 at once: ideal 440 req/s, the sum of the capacities
//   slow-light  20/20/100 ms, paced at 110 req/s (a quarter of the capacities): p99 vs 20 ms,
//               measured for 10 s (1,100 requests) so that its p99 is the 11th slowest, not the 4th
//               (330 requests in 3 s: one or two requests on the slow server or one GC decided it)
//   crash       three 20-ms servers at 200 req/s; server 0 is SIGKILLed at 1/3 of the run
//   blackhole   the same; server 0 is SIGSTOPped (connections stay open, nothing answers)
//   drain       the same; server 0 shuts down gracefully (/readyz fails, 429 + Retry-After, GOAWAY)
// Every request: GET of one ConfigMap over HTTP/2, a 3-s deadline. CPU per request is this
// process's user+system time (process.cpuUsage) over the requests completed; the servers and
// haproxy run in other processes (haproxy's own CPU is read from /proc and shown apart).
// Results: bench/results/compare.json, and a copy in bench/runs/ for `npm run bench:report`.
// BENCH_ONLY=equal,slow and BENCH_CLIENTS=kube-balancer,haproxy limit a run (a client's whole name
// picks it alone), BENCH_ROUNDS=n repeats each scenario's clients in turn; BENCH_TRACE=1 prints
// where each cell's tail comes from (bench/trace.ts); BENCH_BASELINE adds another build (below).
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, BalancedPool, Pool, interceptors, type Dispatcher } from 'undici';
import { APISERVER_NAME, certs } from '../fixtures/certs/index.ts';
import { Haproxy } from '../fixtures/haproxy/Haproxy.ts';
import { createBalancer, type Policy } from '../src/index.ts';
import { importBuild, keepRun, machine, percentile, startServerProcess, table, writeResults, type ServerProcess } from './lib.ts';
import { Trace, type Sample } from './trace.ts';

const HOSTS = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
const PATH = '/api/v1/namespaces/default/configmaps/bench';
const SLOTS = 4;
const MS = Number(process.env.BENCH_MS ?? 3000);
const WARMUP_MS = 500;
const DEADLINE_MS = 3000;
/** Each client's discarded cell that warms the process up before the first measured one. */
const WARM_MS = Number(process.env.BENCH_WARM_MS ?? 1500);
const tls = { ca: certs.ca, servername: APISERVER_NAME };

interface Scenario {
  name: string;
  serviceMs: number[];
  /** Closed loop: this many requests at once. */
  concurrency?: number;
  /** Open loop: requests per second, evenly paced. */
  rate?: number;
  /** Milliseconds measured, if not BENCH_MS. */
  ms?: number;
  /** What happens to server 0 at a third of the run. */
  event?: (server: ServerProcess) => void;
  /** Requests per second a perfect client would complete. */
  ideal: number;
  /** The `i`-th request's method and path, if not a GET of one ConfigMap (issue 27's request mixes). */
  mix?: (i: number) => { method: string; path: string };
}

const LIST = { method: 'GET', path: '/api/v1/namespaces/default/configmaps' };
const DISCOVERY = { method: 'GET', path: '/api' };
/** Half GETs of one object; the rest LISTs, writes (DELETE: the bench server serves every method but POST alike) and discovery. */
const mixed = (i: number): { method: string; path: string } =>
  i % 2 === 0 ? { method: 'GET', path: PATH } : [LIST, { method: 'DELETE', path: `/api/v1/namespaces/default/configmaps/c${i}` }, DISCOVERY][(i >> 1) % 3]!;
/** The scenario being measured: its request mix, read by every client's `send`. */
let current: Scenario | undefined;

const capacity = (serviceMs: number[]): number => serviceMs.reduce((sum, ms) => sum + (SLOTS * 1000) / ms, 0);

const SCENARIOS: Scenario[] = [
  { name: 'equal', serviceMs: [20, 20, 20], concurrency: 64, ideal: capacity([20, 20, 20]) },
  { name: 'slow', serviceMs: [20, 20, 100], concurrency: 64, ideal: capacity([20, 20, 100]) },
  { name: 'slow-light', serviceMs: [20, 20, 100], rate: 110, ideal: 110, ms: Math.max(MS, 10_000) },
  { name: 'crash', serviceMs: [20, 20, 20], rate: 200, ideal: 200, event: (s) => void s.child.kill('SIGKILL') },
  { name: 'blackhole', serviceMs: [20, 20, 20], rate: 200, ideal: 200, event: (s) => void s.child.kill('SIGSTOP') },
  { name: 'drain', serviceMs: [20, 20, 20], rate: 200, ideal: 200, event: (s) => s.send({ drain: true }) },
  // Issue 27's request mixes over the slow set-up, saturated and light (p99 against the Pool's to one fast server).
  ...([['slow-mixed', mixed], ['slow-lists', () => LIST], ['slow-discovery', () => DISCOVERY]] as const).flatMap(([name, mix]): Scenario[] => [
    { name, serviceMs: [20, 20, 100], concurrency: 64, ideal: capacity([20, 20, 100]), mix },
    { name: `${name}-light`, serviceMs: [20, 20, 100], rate: 110, ideal: 110, ms: Math.max(MS, 10_000), mix },
  ]),
];

/** An answer's status, and its `x-served` header (server and its own time, for `BENCH_TRACE`). */
interface Answer {
  status: number;
  served: string;
}

interface Client {
  send: (signal: AbortSignal) => Promise<Answer>;
  close: () => Promise<void>;
  proxyPid?: number | undefined;
  /** Hedged requests (and exploration copies) sent so far (kube-balancer). */
  hedges?: () => number;
  /** Retries of every other reason so far (kube-balancer). */
  retries?: () => number;
  /** Each endpoint's load factor and latency estimate (kube-balancer), for `BENCH_TRACE`. */
  weights?: () => string;
}

type Make = (servers: ServerProcess[]) => Client | Promise<Client>;

let sent = 0;
const viaDispatcher = (dispatcher: Dispatcher, origin?: string) => async (signal: AbortSignal): Promise<Answer> => {
  const { method, path } = current?.mix?.(sent++) ?? { method: 'GET', path: PATH };
  const res = await dispatcher.request({ ...(origin ? { origin } : {}), path, method, headers: { host: `${APISERVER_NAME}:6443` }, signal });
  await res.body.dump();
  const served = res.headers['x-served'];
  return { status: res.statusCode, served: typeof served === 'string' ? served : '' };
};

const addresses = (servers: ServerProcess[]): string[] => servers.map((s, i) => `${HOSTS[i]}:${s.port}`);

function kubeBalancer(policy?: Policy, hedge?: false, create: typeof createBalancer = createBalancer): Make {
  return (servers) => {
    const origin = `https://${APISERVER_NAME}:6443`;
    const balancer = create({ origin, target: `static:///${addresses(servers).join(',')}`, tls: { ca: certs.ca }, ...(policy ? { policy } : {}), ...(hedge === false ? { hedge } : {}) });
    const retries = (): number => Object.entries(balancer.stats().totals.retries).reduce((sum, [reason, n]) => (reason === 'hedge' ? sum : sum + n), 0);
    const weights = (): string => balancer.endpoints().map((e) => `${e.loadFactor.toFixed(3)}@${e.latencyMs ?? '-'}`).join(' ');
    return { send: viaDispatcher(balancer, origin), close: () => balancer.close(), hedges: () => balancer.stats().totals.retries.hedge, retries, weights };
  };
}

function haproxy(mode: 'tcp' | 'http', balance: 'roundrobin' | 'leastconn'): Make {
  return async (servers) => {
    const proxy = await Haproxy.start({ backends: addresses(servers), mode, balance, check: mode === 'http' });
    const pool = new Pool(proxy.url, { connect: tls });
    return {
      send: viaDispatcher(pool),
      proxyPid: proxy.pid,
      close: async () => {
        await pool.destroy();
        await proxy.stop();
      },
    };
  };
}

export const CLIENTS: Record<string, Make> = {
  'kube-balancer': kubeBalancer(),
  'kube-balancer least-request': kubeBalancer('least-request'),
  'kube-balancer hedge: false': kubeBalancer(undefined, false),
  'undici Pool (one server)': (servers) => {
    const pool = new Pool(`https://${addresses(servers)[0]}`, { connect: tls });
    return { send: viaDispatcher(pool), close: () => pool.destroy() };
  },
  'undici BalancedPool': (servers) => {
    const pool = new BalancedPool(addresses(servers).map((a) => `https://${a}`), { connect: tls });
    return { send: viaDispatcher(pool), close: () => pool.destroy() };
  },
  'undici interceptors.dns': (servers) => {
    const agent = new Agent({ connect: tls });
    type Lookup = (origin: unknown, opts: unknown, cb: (err: Error | null, addresses: Array<{ address: string; family: number }>) => void) => void;
    const lookup: Lookup = (_origin, _opts, cb) => cb(null, HOSTS.map((address) => ({ address, family: 4 })));
    const dispatcher = agent.compose(interceptors.dns({ lookup: lookup as never }));
    return { send: viaDispatcher(dispatcher, `https://${APISERVER_NAME}:${servers[0]!.port}`), close: () => agent.destroy() };
  },
  'haproxy tcp (pinned)': haproxy('tcp', 'roundrobin'),
  'haproxy http roundrobin': haproxy('http', 'roundrobin'),
  'haproxy http leastconn': haproxy('http', 'leastconn'),
};

// BENCH_BASELINE=<another checkout>/src/index.ts: that build's default balancer as one more
// contender, right after ours in every round (a branch against main in one run and one process).
if (process.env.BENCH_BASELINE) {
  const baseline = await importBuild(process.env.BENCH_BASELINE);
  const entries = Object.entries(CLIENTS);
  for (const name of Object.keys(CLIENTS)) delete CLIENTS[name];
  for (const [name, make] of [entries[0]!, ['kube-balancer (baseline)', kubeBalancer(undefined, undefined, baseline.createBalancer)] as const, ...entries.slice(1)]) CLIENTS[name] = make;
}

/** Three servers on one port (interceptors.dns keeps the URL's port), retried if the port is taken elsewhere. */
async function startServers(serviceMs: number[]): Promise<ServerProcess[]> {
  for (let tries = 1; ; tries++) {
    const first = await startServerProcess(HOSTS[0]!, 'h2', { slots: SLOTS, serviceMs: serviceMs[0]! });
    const rest = await Promise.allSettled(HOSTS.slice(1).map((host, i) => startServerProcess(host, 'h2', { port: first.port, slots: SLOTS, serviceMs: serviceMs[i + 1]! })));
    const started = rest.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    if (started.length === rest.length) return [first, ...started];
    await Promise.all([first, ...started].map((s) => s.stop()));
    if (tries >= 5) throw (rest.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason;
  }
}

/** What bench/server.ts's `/__stats` answers. */
interface ServerStats {
  served: number;
  ms: number;
  busyMs: number;
  freeMs: number;
  lateMs: number;
  holds: number;
  slots: number;
}

/**
 * This process's CPU µs, the main thread's and the helpers' (/proc/self/task: V8's workers that
 * compile and collect garbage, libuv's pool), less `since`; for BENCH_TRACE.
 */
function threadCpuUs(since: Record<string, number> = {}): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // Every thread is called `node`: the main one is the one whose id is the process's.
      const name = tid === String(process.pid) ? 'main' : 'helpers';
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out[name] = (out[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10_000;
    } catch {
      // the thread ended
    }
  }
  for (const name of Object.keys(out)) out[name] = out[name]! - (since[name] ?? 0);
  return out;
}

/** User + system CPU of a process from /proc (clock ticks, 100 per second on Linux), in µs. */
function processCpuUs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return NaN;
  }
}

export interface Row {
  scenario: string;
  client: string;
  requests: number;
  failed: number;
  /** Successful requests per second ÷ the scenario's ideal. */
  throughput: number;
  p50: number;
  p99: number;
  max: number;
  /** p99 of the answers' time held by the server, and of the rest (the wire and both processes' loops). */
  heldP99?: number;
  restP99?: number;
  /** This process's CPU µs per completed request. */
  cpuUs: number;
  proxyCpuUs: number | null;
  /** Share of the requests each server counted. */
  share: number[];
  /**
   * Each server's slots while measuring (bench/server.ts's `/__stats`): the part of the time they
   * were held; the part they were free with nothing waiting (the client sent too little); and the
   * mean ms each 20-ms service timer fired late (that server process's, or the machine's, delay).
   */
  busy?: number[];
  free?: number[];
  lateMs?: number[];
  /** Requests each server counted during the warm-up (a cold client's first 500 ms, 8 at once). */
  warmup: number[];
  /** kube-balancer: hedges sent while measuring, and those before the event (the steady state). */
  hedges?: number;
  hedgesBefore?: number;
  /** kube-balancer: retries other than hedges while measuring. */
  retries?: number;
}

async function measure(scenario: Scenario, name: string, make: Make): Promise<Row> {
  const trace = process.env.BENCH_TRACE ? new Trace(`${scenario.name} ${name}`) : undefined;
  const servers = await startServers(scenario.serviceMs);
  current = scenario;
  const client = await make(servers);
  const samples: Sample[] = [];
  const counts = async (): Promise<ServerStats[]> =>
    Promise.all(
      servers.map(async (s, i) => {
        const none = { served: 0, ms: 0, busyMs: 0, freeMs: 0, lateMs: 0, holds: 0, slots: SLOTS };
        if (s.child.exitCode !== null || s.child.signalCode !== null) return none;
        const pool = new Pool(`https://${HOSTS[i]}:${s.port}`, { connect: tls });
        try {
          const res = await pool.request({ path: '/__stats', method: 'GET', signal: AbortSignal.timeout(500) });
          return (await res.body.json()) as ServerStats;
        } catch {
          return none;
        } finally {
          await pool.destroy();
        }
      }),
    );
  let served: ServerStats[] = [];
  let warmup: number[] = [];
  const ms = scenario.ms ?? MS;
  let hedgesAtStart = 0;
  let hedgesAtEvent = NaN;
  let hedgesAtEnd = 0;
  let retriesAtStart = 0;
  let retriesAtEnd = 0;
  let cpu: NodeJS.CpuUsage | undefined;
  let proxyCpu = NaN;
  let threads: Record<string, number> = {};
  try {
    const one = async (record: boolean): Promise<void> => {
      const start = performance.now();
      let ok = false;
      let served = '';
      try {
        const answer = await client.send(AbortSignal.timeout(DEADLINE_MS));
        ok = answer.status === 200;
        served = answer.served;
      } catch {
        ok = false;
      }
      if (record) samples.push({ at: start, ms: performance.now() - start, ok, served });
    };
    // Warm up (connections, JIT), then count from zero.
    const warmEnd = performance.now() + WARMUP_MS;
    await Promise.all(Array.from({ length: Math.min(8, scenario.concurrency ?? 8) }, async () => {
      while (performance.now() < warmEnd) await one(false);
    }));
    warmup = (await counts()).map((c) => c.served);
    const start = performance.now();
    const end = start + ms;
    cpu = process.cpuUsage();
    threads = threadCpuUs();
    trace?.begin(start, client.weights);
    proxyCpu = processCpuUs(client.proxyPid);
    let fired = false;
    hedgesAtStart = client.hedges?.() ?? 0;
    retriesAtStart = client.retries?.() ?? 0;
    const fire = (): void => {
      if (!fired && scenario.event && performance.now() >= start + ms / 3) {
        fired = true;
        hedgesAtEvent = client.hedges?.() ?? 0;
        scenario.event(servers[0]!);
      }
    };
    if (scenario.concurrency !== undefined) {
      await Promise.all(Array.from({ length: scenario.concurrency }, async () => {
        while (performance.now() < end) {
          fire();
          await one(true);
        }
      }));
    } else {
      const inFlight: Array<Promise<void>> = [];
      const total = Math.round((scenario.rate! * ms) / 1000);
      await new Promise<void>((resolve) => {
        const tick = setInterval(() => {
          fire();
          const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * scenario.rate!));
          while (inFlight.length < due) inFlight.push(one(true));
          if (inFlight.length >= total) {
            clearInterval(tick);
            resolve();
          }
        }, 2);
      });
      await Promise.all(inFlight);
    }
    cpu = process.cpuUsage(cpu);
    threads = threadCpuUs(threads);
    trace?.end(samples);
    if (trace) console.log(`  CPU ms by thread: ${Object.entries(threads).filter(([, us]) => us > 0).map(([name, us]) => `${name} ${us / 1000}`).join(', ')}`);
    hedgesAtEnd = client.hedges?.() ?? 0;
    retriesAtEnd = client.retries?.() ?? 0;
    proxyCpu = processCpuUs(client.proxyPid) - proxyCpu;
  } finally {
    served = await counts();
    await client.close();
    await Promise.all(servers.map((s) => s.stop()));
  }
  const latencies = samples.map((s) => s.ms).sort((a, b) => a - b);
  const ok = samples.filter((s) => s.ok).length;
  // Each answer's time split by bench/server.ts's `x-served`: held by the server (its queue and its
  // service timer, late when its process was not run), and the rest (the wire, both event loops,
  // TLS and HTTP/2 framing, the client's clock): where a tail comes from.
  const answered = samples.filter((s) => s.ok && s.served !== '');
  const heldMs = answered.map((s) => Number(s.served.split(' ')[1])).sort((a, b) => a - b);
  const restMs = answered.map((s) => s.ms - Number(s.served.split(' ')[1])).sort((a, b) => a - b);
  const seconds = scenario.concurrency !== undefined ? ms / 1000 : samples.length / scenario.rate!;
  const sum = served.reduce((a, b) => a + b.served, 0) || 1;
  const round = (x: number): number => Math.round(x * 10) / 10;
  return {
    scenario: scenario.name,
    client: name,
    requests: samples.length,
    failed: samples.length - ok,
    throughput: Math.round((ok / seconds / scenario.ideal) * 1000) / 1000,
    p50: round(percentile(latencies, 0.5)),
    p99: round(percentile(latencies, 0.99)),
    heldP99: round(percentile(heldMs, 0.99)),
    restP99: round(percentile(restMs, 0.99)),
    max: round(latencies.at(-1) ?? 0),
    cpuUs: cpu ? round((cpu.user + cpu.system) / Math.max(1, samples.length)) : NaN,
    proxyCpuUs: Number.isNaN(proxyCpu) ? null : round(proxyCpu / Math.max(1, samples.length)),
    share: served.map((c) => Math.round((1000 * c.served) / sum) / 1000),
    busy: served.map((c) => (c.ms > 0 ? Math.round((1000 * c.busyMs) / (c.slots * c.ms)) / 1000 : 0)),
    free: served.map((c) => (c.ms > 0 ? Math.round((1000 * c.freeMs) / (c.slots * c.ms)) / 1000 : 0)),
    lateMs: served.map((c) => (c.holds > 0 ? Math.round((100 * c.lateMs) / c.holds) / 100 : 0)),
    warmup,
    ...(client.hedges ? { hedges: hedgesAtEnd - hedgesAtStart, hedgesBefore: (Number.isNaN(hedgesAtEvent) ? hedgesAtEnd : hedgesAtEvent) - hedgesAtStart } : {}),
    ...(client.retries ? { retries: retriesAtEnd - retriesAtStart } : {}),
  };
}

/**
 * BENCH_MIXES=1: issue 27's request mixes and the GET-of-one-object rows they extend, against
 * least-request, haproxy and the Pool's light-load floor (BENCH_ROUNDS rounds), kept in bench/runs/ as
 * `mixes-*.json` for the report's own section.
 */
const MIXES = process.env.BENCH_MIXES === '1';
const MIX_SCENARIOS = ['slow', 'slow-light', 'slow-mixed', 'slow-mixed-light', 'slow-lists', 'slow-lists-light', 'slow-discovery', 'slow-discovery-light'];
const MIX_CLIENTS = ['kube-balancer', 'kube-balancer least-request', 'undici Pool (one server)', 'haproxy http leastconn', 'haproxy http roundrobin', 'undici Pool again (A/A)'];
// The floor's A/A pair: the same Pool measured again in each round, so that the floor's own spread
// from one measurement to the next stands beside kube-balancer's ratio to it.
if (MIXES) CLIENTS['undici Pool again (A/A)'] = CLIENTS['undici Pool (one server)']!;

export async function run(): Promise<unknown> {
  const onlyScenarios = MIXES ? MIX_SCENARIOS : process.env.BENCH_ONLY?.split(',');
  const onlyClients = MIXES ? MIX_CLIENTS : process.env.BENCH_CLIENTS?.split(',');
  const rows: Row[] = [];
  const startedAt = new Date().toISOString();
  // BENCH_ROUNDS=n (investigations only, with BENCH_ONLY/BENCH_CLIENTS): each scenario's clients n
  // times in turn, so that drift on the shared machine hits every contender alike.
  const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
  const picked = (name: string): boolean => !onlyClients || onlyClients.some((word) => word === name || (!(word in CLIENTS) && name.includes(word)));
  // The process warms up first: every client picked runs a discarded cell of the equal servers. A
  // fresh process spends CPU compiling and growing its heap for its first ~20 s (traced by thread:
  // the main thread's µs per request fell 960 → 820 → 670 → 510 over its first cells, V8's helper
  // threads' 270 → 70, whichever client ran), and the first cell of a run — always kube-balancer's —
  // paid for all: 1,028–1,093 µs a request against 630–673 for the same code as the third cell,
  // which on two shared cores also left less CPU to the servers' 20-ms timers.
  if (process.env.BENCH_WARM !== '0') {
    for (const [name, make] of Object.entries(CLIENTS)) if (picked(name)) await measure({ ...SCENARIOS[0]!, ms: WARM_MS }, name, make);
  }
  for (const scenario of SCENARIOS) {
    if (onlyScenarios && !onlyScenarios.includes(scenario.name)) continue;
    for (const [name, make] of Array.from({ length: rounds }, () => Object.entries(CLIENTS)).flat()) {
      // A word that is a client's whole name picks that client alone ('kube-balancer' is in three names).
      if (!picked(name)) continue;
      const row = await measure(scenario, name, make);
      rows.push(row);
      const hedged = row.hedges === undefined ? '' : `  hedges ${row.hedges} (${row.hedgesBefore} before the event), retries ${row.retries}`;
      console.log(`${scenario.name.padEnd(10)} ${name.padEnd(28)} ×ideal ${row.throughput.toFixed(3)}  p50 ${row.p50}  p99 ${row.p99}  max ${row.max} ms  failed ${row.failed}  cpu ${row.cpuUs} µs/req  held/rest p99 ${row.heldP99}/${row.restP99} ms  share ${row.share.join('/')} (warm-up ${row.warmup.join('/')})${hedged}  busy ${row.busy?.join('/')} free ${row.free?.join('/')} late ${row.lateMs?.join('/')} ms`);
    }
  }
  console.log(table(rows.map((r) => ({ ...r, share: r.share.join('/'), busy: r.busy?.join('/') ?? '-', free: r.free?.join('/') ?? '-', lateMs: r.lateMs?.join('/') ?? '-', retries: r.retries ?? '-', warmup: r.warmup.join('/'), proxyCpuUs: r.proxyCpuUs ?? '-', hedges: r.hedges ?? '-', hedgesBefore: r.hedgesBefore ?? '-' }))));
  const result = {
    startedAt,
    machine: machine(),
    settings: { ms: MS, warmupMs: WARMUP_MS, deadlineMs: DEADLINE_MS, slots: SLOTS, processWarmMs: process.env.BENCH_WARM === '0' ? 0 : WARM_MS },
    rows,
  };
  // Every run is also kept in bench/runs/ (committed), which `npm run bench:report` turns into BENCHMARKS.md.
  if (MIXES) console.log(`kept in ${keepRun('mixes', startedAt, { ...result, rounds })}`);
  else if (!onlyScenarios && !onlyClients) console.log(`kept in ${keepRun('compare', startedAt, result)}`);
  return result;
}

if (import.meta.main) writeResults('compare', await run());
