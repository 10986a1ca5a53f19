// Per-request counters of one client, a plain undici Pool or the balancer (one endpoint, HTTP/2, the
// bench server in another process): CPU (user/system), wall, setTimeout / setImmediate / nextTick
// calls, GCs, event-loop utilization. Counts are what this tool saw; CPU across separate processes
// varies ±20 % here, so compare CPU with `npm run bench -- dispatch` (in-process, interleaved).
//   node bench/repro/dispatch-counters.mjs <pool|balancer> [concurrency=1] [requests=10000] [wait]
// `wait`: after the warm-up, writes its pid to /tmp/probe.ready and waits for /tmp/probe.go (to
// attach `strace -f -c -p <pid>`), then writes /tmp/probe.done. Add --cpu-prof for a profile.
import { existsSync, writeFileSync } from 'node:fs';
import console from 'node:console';
import { performance, PerformanceObserver } from 'node:perf_hooks';
import process from 'node:process';
import { Pool } from 'undici';
import { APISERVER_NAME, certs } from '../../fixtures/certs/index.ts';
import { createBalancer } from '../../src/index.ts';
import { startServerProcess } from '../lib.ts';

const [mode = 'pool', cArg = '1', nArg = '10000', waitArg = ''] = process.argv.slice(2);
const concurrency = Number(cArg);
const n = Number(nArg);
const ORIGIN = `https://${APISERVER_NAME}:6443`;
const PATH = '/api/v1/namespaces/default/configmaps/bench';
const server = await startServerProcess('127.0.0.2', 'h2');
const pool = new Pool(`https://127.0.0.2:${server.port}`, { connect: { ca: certs.ca, servername: APISERVER_NAME } });
const balancer = createBalancer({ origin: ORIGIN, target: `static:///127.0.0.2:${server.port}`, tls: { ca: certs.ca } });
const send =
  mode === 'pool'
    ? async () => (await pool.request({ path: PATH, method: 'GET', headers: { host: `${APISERVER_NAME}:6443` } })).body.dump()
    : async () => (await balancer.request({ origin: ORIGIN, path: PATH, method: 'GET' })).body.dump();
async function run(count) {
  let left = Math.min(count, 1_000_000);
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (left-- > 0) await send();
  }));
}
let counting = false;
let timers = 0;
let immediates = 0;
let ticks = 0;
let gcs = 0;
const { setTimeout: realSetTimeout, setImmediate: realSetImmediate } = globalThis;
const realNextTick = process.nextTick;
new PerformanceObserver((list) => {
  if (counting) gcs += list.getEntries().length;
}).observe({ entryTypes: ['gc'] });
await run(3000);
if (waitArg) {
  writeFileSync('/tmp/probe.ready', String(process.pid));
  for (let i = 0; i < 1200 && !existsSync('/tmp/probe.go'); i++) await new Promise((resolve) => realSetTimeout(resolve, 50));
}
globalThis.setTimeout = (...args) => {
  if (counting) timers++;
  return realSetTimeout(...args);
};
globalThis.setImmediate = (...args) => {
  if (counting) immediates++;
  return realSetImmediate(...args);
};
process.nextTick = (...args) => {
  if (counting) ticks++;
  return realNextTick.apply(process, args);
};
const elu0 = performance.eventLoopUtilization();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
counting = true;
await run(n);
counting = false;
const cpu = process.cpuUsage(cpu0);
const wall = performance.now() - t0;
const per = (x) => Number((x / n).toFixed(3));
console.log(
  JSON.stringify({
    mode,
    concurrency,
    requests: n,
    cpuUs: per(cpu.user + cpu.system),
    userUs: per(cpu.user),
    systemUs: per(cpu.system),
    wallUs: per(wall * 1000),
    setTimeout: per(timers),
    setImmediate: per(immediates),
    nextTick: per(ticks),
    gc: per(gcs),
    elu: Number(performance.eventLoopUtilization(elu0).utilization.toFixed(3)),
  }),
);
if (waitArg) writeFileSync('/tmp/probe.done', '1');
await balancer.close();
await pool.close();
await server.stop();
