// npm run soak: memory over a long mixed workload through one balancer and three endpoints.
// Three bench servers (HTTP/2, each its own process) on 127.0.0.2-4; 64 workers send GETs, LISTs and
// POSTs (one in ten each), four more keep watches open (each ends after 1 s and is opened again).
// Every SOAK_EVERY requests (default 100,000) it prints the heap after a full GC; it stops at
// SOAK_REQUESTS (default 1,000,000) or after SOAK_SECONDS (default 1200), idles 2 s and measures
// once more. Exits 1 when the heap grows by more than SOAK_MAX_GROWTH_MB (default 1) per 100,000.
import diagnostics from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { APISERVER_NAME, certs } from '../fixtures/certs/index.ts';
import { createBalancer } from '../src/index.ts';
import { startServerProcess } from './lib.ts';

export interface SoakOptions {
  /** Stop after this many requests (watches count as one each). */
  requests: number;
  /** Stop after this many seconds, whatever the count. */
  seconds: number;
  /** Measure the heap every this many completed requests. */
  every: number;
  log?: (line: string) => void;
}

export interface Checkpoint {
  requests: number;
  seconds: number;
  heapMB: number;
  /** ClientHttp2Stream objects not yet garbage collected (in-flight ones included). */
  streams: number;
}

export interface SoakResult {
  checkpoints: Checkpoint[];
  /** After the load stopped, the balancer idled 2 s, and a full GC ran. */
  idle: Checkpoint;
  failed: number;
  /** Least-squares slope of the heap over the checkpoints after the first, in MB per 100,000 requests. */
  growthPer100kMB: number;
}

const ORIGIN = `https://${APISERVER_NAME}:6443`;
const PATH = '/api/v1/namespaces/default/configmaps';
const WATCHERS = 4;
const CONCURRENCY = 64;

/** A full GC (twice, so finalizers of the first have run), then the heap in use, in MB. */
export async function heapAfterGc(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc ?? exposeGc();
  gc();
  await sleep(10);
  gc();
  await sleep(10);
  return v8.getHeapStatistics().used_heap_size / 1e6;
}

function exposeGc(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Counts HTTP/2 client streams created and not yet collected, through Node's http2 diagnostics channel. */
function streamCounter(): { alive: () => number; stop: () => void } {
  let created = 0;
  let collected = 0;
  const registry = new FinalizationRegistry<undefined>(() => void collected++);
  const onCreated = ({ stream }: { stream: object }): void => {
    created++;
    registry.register(stream, undefined);
  };
  diagnostics.subscribe('http2.client.stream.created', onCreated as (message: unknown) => void);
  return {
    alive: () => created - collected,
    stop: () => void diagnostics.unsubscribe('http2.client.stream.created', onCreated as (message: unknown) => void),
  };
}

export async function soak({ requests, seconds, every, log = console.log }: SoakOptions): Promise<SoakResult> {
  // V8 drops the bytecode of functions not run for a while (start-up code) a few GCs in: a one-off
  // fall of several MB that would hide a slow rise.
  v8.setFlagsFromString('--no-flush-bytecode');
  const servers = await Promise.all(['127.0.0.2', '127.0.0.3', '127.0.0.4'].map((host) => startServerProcess(host, 'h2')));
  const streams = streamCounter();
  const balancer = createBalancer({ target: `static:///${servers.map((s, i) => `127.0.0.${2 + i}:${s.port}`).join(',')}`, origin: ORIGIN, tls: { ca: certs.ca } });
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const checkpoints: Checkpoint[] = [];
  let sent = 0;
  let completed = 0;
  let failed = 0;
  const more = (): boolean => sent < requests && performance.now() < deadline;
  const measure = async (): Promise<Checkpoint> => {
    const point = { requests: completed, seconds: (performance.now() - started) / 1000, heapMB: await heapAfterGc(), streams: streams.alive() };
    const first = checkpoints[0]?.heapMB ?? point.heapMB;
    log(
      `${String(point.requests).padStart(9)} requests ${point.seconds.toFixed(0).padStart(5)} s ${String(Math.round(point.requests / point.seconds)).padStart(6)}/s` +
        `   heap after GC ${point.heapMB.toFixed(1)} MB (${sign(point.heapMB - first)} MB)   HTTP/2 streams reachable ${point.streams}`,
    );
    return point;
  };
  // At each checkpoint the workers wait until nothing is in flight: the heap is measured at rest.
  let inFlight = 0;
  let gate: Promise<void> | undefined;
  const checkpoint = async (): Promise<void> => {
    while (inFlight > 0) await sleep(5);
    checkpoints.push(await measure());
    gate = undefined;
  };
  const next = async (): Promise<boolean> => {
    while (gate) await gate;
    if (!more()) return false;
    sent++;
    inFlight++;
    return true;
  };
  const done = (): void => {
    inFlight--;
    completed++;
    if (completed % every === 0) gate ??= checkpoint();
  };
  const short = async (): Promise<void> => {
    while (await next()) {
      const i = sent;
      try {
        const res =
          i % 10 === 0
            ? await balancer.request({ origin: ORIGIN, path: PATH, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'ConfigMap', metadata: { name: `soak-${i}` }, data: { i: String(i) } }) })
            : await balancer.request({ origin: ORIGIN, path: i % 10 === 1 ? PATH : `${PATH}/bench-${i % 100}`, method: 'GET' });
        await res.body.dump();
      } catch {
        failed++;
      }
      done();
    }
  };
  const watcher = async (): Promise<void> => {
    while (await next()) {
      try {
        const res = await balancer.request({ origin: ORIGIN, path: `${PATH}?watch=true&timeoutSeconds=1`, method: 'GET' });
        for await (const chunk of res.body) void chunk;
      } catch {
        failed++;
      }
      done();
    }
  };
  try {
    await Promise.all([...Array.from({ length: CONCURRENCY }, short), ...Array.from({ length: WATCHERS }, watcher)]);
    while (gate) await gate;
    await sleep(2000);
    log('idle 2 s:');
    const idle = await measure();
    return { checkpoints, idle, failed, growthPer100kMB: slope(checkpoints.slice(1)) * 100_000 };
  } finally {
    await balancer.close();
    streams.stop();
    await Promise.all(servers.map((s) => s.stop()));
  }
}

/** Least-squares slope of heap over requests, MB per request; 0 with fewer than two points. */
function slope(points: readonly Checkpoint[]): number {
  if (points.length < 2) return 0;
  const n = points.length;
  const mx = points.reduce((a, p) => a + p.requests, 0) / n;
  const my = points.reduce((a, p) => a + p.heapMB, 0) / n;
  const sxy = points.reduce((a, p) => a + (p.requests - mx) * (p.heapMB - my), 0);
  const sxx = points.reduce((a, p) => a + (p.requests - mx) ** 2, 0);
  return sxx === 0 ? 0 : sxy / sxx;
}

function sign(mb: number): string {
  return `${mb >= 0 ? '+' : ''}${mb.toFixed(1)}`;
}

if (import.meta.main) {
  const requests = Number(process.env.SOAK_REQUESTS ?? 1_000_000);
  const seconds = Number(process.env.SOAK_SECONDS ?? 1200);
  const limit = Number(process.env.SOAK_MAX_GROWTH_MB ?? 1);
  console.log(`soak: up to ${requests} requests or ${seconds} s, 3 HTTP/2 endpoints, ${CONCURRENCY} workers (GET, LIST, POST) + ${WATCHERS} watches`);
  const result = await soak({ requests, seconds, every: Number(process.env.SOAK_EVERY ?? 100_000) });
  const verdict = result.growthPer100kMB <= limit && result.failed === 0;
  console.log(`heap growth ${sign(result.growthPer100kMB)} MB per 100,000 requests (limit ${limit}); ${result.failed} failed requests: ${verdict ? 'flat' : 'GROWS'}`);
  process.exitCode = verdict ? 0 : 1;
}
