// Failover under a fixed load: 500 req/s (70 % GET, 30 % POST) over 3 servers; one crashes at 3 s,
// another is black-holed at 6 s. kube-balancer against two anchors in the same run: undici's
// BalancedPool, and interceptors.dns composed with interceptors.retry.
// Targets: 0 failed GETs, 0 failed unsent POSTs, crash ejected at the first failure, black hole <= 2 s.
import { Agent, BalancedPool, interceptors, type Dispatcher } from 'undici';
import { APISERVER_NAME, certs } from '../fixtures/certs/index.ts';
import { TestServer } from '../fixtures/server/TestServer.ts';
import { createBalancer } from '../src/index.ts';
import { percentile, table } from './lib.ts';

const RATE = Number(process.env.BENCH_RATE ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 9);
const CRASH_AT = (SECONDS / 3) * 1000;
const BLACKHOLE_AT = ((2 * SECONDS) / 3) * 1000;
const WINDOW = 1500;
const DEADLINE = 5000;
const HOSTS = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];

interface Sample {
  at: number;
  method: 'GET' | 'POST';
  ms: number;
  error?: string;
}

interface Client {
  name: string;
  dispatcher: Dispatcher;
  origin: string;
  ejections: () => Record<string, number>;
  close: () => Promise<void>;
  /** Hedged requests sent so far (kube-balancer). */
  hedges?: () => number;
}

async function startCluster(): Promise<TestServer[]> {
  // The same port on every address, so the DNS anchor (which keeps the URL's port) can reach all three.
  // The first server's free port may be taken on another address: try another port, a few times.
  for (let tries = 1; ; tries++) {
    const first = await TestServer.start({ host: HOSTS[0] });
    const rest = await Promise.allSettled(HOSTS.slice(1).map((host) => TestServer.start({ host, port: first.port })));
    const started = rest.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failure = rest.find((r) => r.status === 'rejected')?.reason as NodeJS.ErrnoException | undefined;
    if (!failure) return [first, ...started];
    await Promise.all([first, ...started].map((s) => s.close()));
    if (failure.code !== 'EADDRINUSE' || tries >= 5) throw failure;
  }
}

/** Hedges sent before the crash (a healthy steady state, requests counted from the start) and in all. */
interface Hedges {
  steady: number;
  total: number;
}

async function runScenario(client: Client, servers: TestServer[], hedges: Hedges): Promise<Sample[]> {
  const samples: Sample[] = [];
  const inFlight = new Set<Promise<void>>();
  const start = performance.now();
  let crashed = false;
  let holed = false;
  let sent = 0;
  const total = Math.round((RATE * SECONDS));
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const elapsed = performance.now() - start;
      if (!crashed && elapsed >= CRASH_AT) {
        crashed = true;
        hedges.steady = client.hedges?.() ?? NaN;
        void servers[1]!.crash();
      }
      if (!holed && elapsed >= BLACKHOLE_AT) {
        holed = true;
        servers[2]!.blackhole();
      }
      const due = Math.min(total, Math.floor((elapsed / 1000) * RATE));
      for (; sent < due; sent++) {
        const method = sent % 10 < 7 ? 'GET' : 'POST';
        const at = performance.now();
        const p = send(client, method, sent).then(
          () => void samples.push({ at: at - start, method, ms: performance.now() - at }),
          (error: Error & { code?: string }) => void samples.push({ at: at - start, method, ms: performance.now() - at, error: error.code ?? error.name }),
        );
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
      if (sent >= total) {
        clearInterval(tick);
        resolve();
      }
    }, 5);
  });
  await Promise.all(inFlight);
  hedges.total = client.hedges?.() ?? NaN;
  return samples;
}

async function send(client: Client, method: 'GET' | 'POST', i: number): Promise<void> {
  const res = await client.dispatcher.request({
    origin: client.origin,
    path: '/api/v1/namespaces/default/configmaps',
    method,
    headers: { host: `${APISERVER_NAME}:6443`, 'content-type': 'application/json' },
    body: method === 'POST' ? JSON.stringify({ metadata: { name: `cm-${i}` } }) : null,
    signal: AbortSignal.timeout(DEADLINE),
  });
  await res.body.dump();
  if (res.statusCode >= 500) throw Object.assign(new Error(`HTTP ${res.statusCode}`), { code: `HTTP_${res.statusCode}` });
}

function p99(values: number[]): number {
  return Math.round(percentile([...values].sort((a, b) => a - b), 0.99));
}

function summarize(name: string, samples: Sample[], ejections: Record<string, number>, hedges: Hedges): Record<string, string | number> {
  const inWindow = (s: Sample): boolean => (s.at >= CRASH_AT && s.at < CRASH_AT + WINDOW) || (s.at >= BLACKHOLE_AT && s.at < BLACKHOLE_AT + WINDOW);
  const failed = (m: string): number => samples.filter((s) => s.method === m && s.error).length;
  // A POST that failed before reaching an apiserver (refused, TLS, or every endpoint refused) could
  // have gone elsewhere; one lost after it was written could not, safely.
  const unsent = samples.filter((s) => s.method === 'POST' && s.error && /ECONNREFUSED|CONNECT_TIMEOUT|ERR_ALL_ENDPOINTS_FAILED|ERR_NO_ENDPOINTS/.test(s.error)).length;
  const errors = [...new Set(samples.filter((s) => s.error).map((s) => s.error))].join(' ');
  // GETs sent from the black hole until every one caught there had to be done (the request deadline).
  const acrossHole = samples.filter((s) => s.method === 'GET' && s.at >= BLACKHOLE_AT - 100 && s.at < BLACKHOLE_AT + WINDOW).map((s) => s.ms);
  const beforeCrash = samples.filter((s) => s.at < CRASH_AT).length;
  return {
    client: name,
    requests: samples.length,
    'failed GET': failed('GET'),
    'failed POST': failed('POST'),
    'failed unsent POST': unsent,
    'crash eject ms': ejections.crash ?? 'never',
    'black-hole eject ms': ejections.blackhole ?? 'never',
    'p99 ms outside': p99(samples.filter((s) => !inWindow(s)).map((s) => s.ms)),
    'p99 ms in windows': p99(samples.filter(inWindow).map((s) => s.ms)),
    'GET p99 ms black hole': p99(acrossHole),
    'GET max ms black hole': Math.round(Math.max(0, ...acrossHole)),
    'hedges before crash': Number.isNaN(hedges.steady) ? '-' : `${hedges.steady} / ${beforeCrash}`,
    hedges: Number.isNaN(hedges.total) ? '-' : hedges.total,
    errors: errors || '-',
  };
}

function clients(servers: TestServer[]): Array<() => Client> {
  const port = servers[0]!.port;
  const tls = { ca: certs.ca, servername: APISERVER_NAME };
  return [
    () => {
      const hedge = process.env.BENCH_HEDGE === 'false' ? { hedge: false as const } : {};
      const balancer = createBalancer({ origin: `https://${APISERVER_NAME}:6443`, target: `static:///${servers.map((s) => s.authority).join(',')}`, tls: { ca: certs.ca }, ...hedge });
      const started = performance.now();
      const ejections: Record<string, number> = {};
      if (process.env.BENCH_DEBUG) {
        balancer.on('eject', (e, r, ms) => console.log(Math.round(performance.now() - started), 'eject', e.address, r, Math.round(ms)));
        balancer.on('restore', (e, r) => console.log(Math.round(performance.now() - started), 'restore', e.address, r));
        balancer.on('drain', (e, r) => console.log(Math.round(performance.now() - started), 'drain', e.address, r));
        let retries = 0;
        balancer.on('retry', () => {
          if (++retries % 50 === 0) console.log(Math.round(performance.now() - started), 'retries', retries);
        });
      }
      balancer.on('eject', (e) => {
        const since = performance.now() - started;
        if (e.address === HOSTS[1] && ejections.crash === undefined) ejections.crash = Math.round(since - CRASH_AT);
        if (e.address === HOSTS[2] && ejections.blackhole === undefined && since >= BLACKHOLE_AT) ejections.blackhole = Math.round(since - BLACKHOLE_AT);
      });
      return {
        name: 'kube-balancer',
        dispatcher: balancer,
        origin: `https://${APISERVER_NAME}:6443`,
        ejections: () => ejections,
        close: () => balancer.close(),
        hedges: () => balancer.stats().totals.retries.hedge,
      };
    },
    () => {
      const pool = new BalancedPool(servers.map((s) => s.url), { connect: tls });
      return { name: 'undici BalancedPool', dispatcher: pool, origin: servers[0]!.url, ejections: () => ({}), close: () => pool.destroy() };
    },
    () => {
      const agent = new Agent({ connect: tls });
      const lookup = (_origin: unknown, _opts: unknown, cb: (err: Error | null, addresses: Array<{ address: string; family: number }>) => void): void =>
        cb(null, HOSTS.map((address) => ({ address, family: 4 })));
      // The last interceptor runs first: retry outside dns, so every retry re-picks an address.
      const dispatcher = agent.compose(interceptors.dns({ lookup: lookup as never }), interceptors.retry({ throwOnError: false }));
      return { name: 'interceptors.dns + retry', dispatcher, origin: `https://${APISERVER_NAME}:${port}`, ejections: () => ({}), close: () => agent.destroy() };
    },
  ];
}

export async function run(): Promise<unknown> {
  const rows: Array<Record<string, string | number>> = [];
  const servers = await startCluster();
  try {
    // BENCH_CLIENTS=kube limits the run to the clients whose names contain one of the words; BENCH_HEDGE=false turns hedging off.
    const only = process.env.BENCH_CLIENTS?.split(',');
    for (const make of clients(servers)) {
      for (const s of servers) {
        await s.crash();
        await s.restart();
      }
      const client = make();
      if (only && !only.some((word) => client.name.includes(word))) {
        await client.close();
        continue;
      }
      const hedges: Hedges = { steady: NaN, total: NaN };
      const samples = await runScenario(client, servers, hedges);
      rows.push(summarize(client.name, samples, client.ejections(), hedges));
      if (process.env.BENCH_DEBUG) {
        const buckets = new Map<number, number>();
        for (const s of samples) if (s.error) buckets.set(Math.floor(s.at / 250) * 250, (buckets.get(Math.floor(s.at / 250) * 250) ?? 0) + 1);
        console.log(client.name, [...buckets].map(([k, v]) => `${k}:${v}`).join(' '));
      }
      await client.close();
    }
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
  console.log(`failover: ${RATE} req/s for ${SECONDS} s (70 % GET / 30 % POST) over 3 servers; crash at ${CRASH_AT / 1000} s, black hole at ${BLACKHOLE_AT / 1000} s`);
  console.log(table(rows));
  return { rate: RATE, seconds: SECONDS, rows };
}

if (import.meta.main) await run();
