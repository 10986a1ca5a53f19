// A minimal HTTPS server for benchmarks, run as a child process so it has its own core, and so that
// the client's CPU time (process.cpuUsage) is the client's alone.
// argv: <host> <h2|h1> [port] [slots] [serviceMs]. Prints the port on stdout once listening.
// `GET /__count` answers the number of requests served since the last such call (and resets it),
// so benchmarks can see the spread; `GET /__stats` answers that and the slots' busy, free and
// timer-late milliseconds (JSON, also reset; read it or /__count, not both). `?size=N` answers a JSON body of about N bytes instead of the
// small ConfigMap. A POST is read and answered 201 with the same object; `?watch=true` streams one
// event every 50 ms and ends cleanly after `timeoutSeconds` (default 1), as an apiserver ends a watch.
// With `slots` > 0 it is capacity-bound like an apiserver under API Priority and Fairness: at most
// `slots` requests are served at once, each takes `serviceMs`, the rest wait in order.
// Messages from the parent: `{ serviceMs }` changes the service time; `{ drain: true }` starts a
// graceful shutdown as kube-apiserver does with --shutdown-send-retry-after (landscape-2026.md):
// /readyz fails, new requests get 429 + Retry-After (+ GOAWAY on HTTP/2, Connection: close on 1.1).
// A crash is SIGKILL (the kernel resets every connection, new ones are refused); a black hole is
// SIGSTOP (connections stay open and the kernel still completes handshakes into the backlog, but
// nothing is answered, not even HTTP/2 PINGs).
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { certs } from '../fixtures/certs/index.ts';

const [host = '127.0.0.1', protocol = 'h2', portArg = '0', slotsArg = '0', serviceArg = '0'] = process.argv.slice(2);
const body = JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'bench', namespace: 'default' } });
const slots = Number(slotsArg);
let serviceMs = Number(serviceArg);
let draining = false;
let served = 0;
let busy = 0;
const waiting: Array<() => void> = [];
/**
 * For `GET /__stats` (since its last call): slot-milliseconds held (`busy` integrated over time),
 * slot-milliseconds free while nothing waited (the client sent too little: the balancer's or the
 * client's fault), and how late the service timers fired in all (this process's or the machine's).
 */
let statsSince = performance.now();
let changedAt = statsSince;
let busyMs = 0;
let freeMs = 0;
let lateMs = 0;
let holds = 0;
/** Integrates `busy` up to now; called before it changes. */
const account = (): void => {
  const now = performance.now();
  busyMs += busy * (now - changedAt);
  if (waiting.length === 0) freeMs += (slots - busy) * (now - changedAt);
  changedAt = now;
};

interface Res {
  writeHead(s: number, h: Record<string, string>): void;
  write(chunk: string): void;
  end(b?: string): void;
  on(event: 'close', listener: () => void): void;
}
type Req = {
  url?: string;
  method?: string;
  httpVersionMajor?: number;
  stream?: { session?: { goaway(): void } };
  on(event: 'data', listener: (chunk: Buffer) => void): void;
  on(event: 'end', listener: () => void): void;
};

/** A watch: one MODIFIED event every 50 ms, a clean end after `timeoutSeconds`. */
function watch(url: string, res: Res): void {
  const seconds = Number(/[?&]timeoutSeconds=(\d+)/.exec(url)?.[1] ?? 1);
  res.writeHead(200, { 'content-type': 'application/json' });
  let resourceVersion = 0;
  const tick = setInterval(() => {
    resourceVersion++;
    res.write(`{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"bench","namespace":"default","resourceVersion":"${resourceVersion}"}}}\n`);
  }, 50);
  const end = setTimeout(() => {
    clearInterval(tick);
    res.end();
  }, seconds * 1000);
  res.on('close', () => {
    clearInterval(tick);
    clearTimeout(end);
  });
}

/** A create: the object sent comes back with 201. */
function echo(req: Req, res: Res): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    res.writeHead(201, { 'content-type': 'application/json' });
    res.end(Buffer.concat(chunks).toString() || body);
  });
}

/** `x-served`: which server answered and how long it held the request (ms), for `BENCH_TRACE`. */
const answer = (res: Res, size: number, since: number): void => {
  res.writeHead(200, { 'content-type': 'application/json', 'x-served': `${host} ${(performance.now() - since).toFixed(1)}` });
  res.end(size > 0 ? sized(size) : body);
};

/**
 * How much earlier than `serviceMs` the timer is set: a moving average of how late it fired,
 * capped at `MAX_BIAS_MS`. A Node timer fires on the event loop's millisecond clock, on average
 * 0.5–0.9 ms after its delay on this machine even when quiet, and a 4-slot server whose 20-ms
 * requests take 20.8 has 4 % less capacity than the scenario says (the ideal assumes 20), whichever
 * client it serves. The cap leaves a stretched timer (the process was not run) stretched: only the
 * clock's own granularity is taken back. `lateMs` is still counted against `serviceMs`.
 */
let bias = 0;
const MAX_BIAS_MS = 1.5;

/** Holds a slot for `serviceMs`, then answers and lets the next waiting request in. */
const serve = (res: Res, size: number, since: number): void => {
  account();
  busy++;
  const held = performance.now();
  const ms = serviceMs;
  const delay = Math.max(0, ms - bias);
  setTimeout(() => {
    const took = performance.now() - held;
    // Each answer moves it by at most 0.05 ms: one stall does not make the next answers early.
    bias = Math.min(MAX_BIAS_MS, Math.max(0, bias + 0.05 * Math.max(-1, Math.min(1, took - ms))));
    lateMs += took - ms;
    holds++;
    answer(res, size, since);
    account();
    busy--;
    waiting.shift()?.();
  }, delay);
};

const handler = (req: Req, res: Res): void => {
  if (req.url === '/__count') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(String(served));
    served = 0;
    return;
  }
  if (req.url === '/__stats') {
    account();
    const now = performance.now();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ served, ms: now - statsSince, busyMs, freeMs, lateMs, holds, slots }));
    statsSince = now;
    busyMs = freeMs = lateMs = holds = served = 0;
    return;
  }
  if (req.url === '/readyz' || req.url === '/livez') {
    res.writeHead(draining ? 500 : 200, { 'content-type': 'text/plain' });
    res.end(draining ? 'shutting down' : 'ok');
    return;
  }
  if (draining) {
    const h2 = req.httpVersionMajor === 2;
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '5', ...(h2 ? {} : { connection: 'close' }) });
    res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","message":"The apiserver is shutting down, please try again later.","reason":"TooManyRequests","code":429}');
    if (h2) req.stream?.session?.goaway();
    return;
  }
  served++;
  if (/[?&]watch=true/.test(req.url ?? '')) return watch(req.url ?? '', res);
  if (req.method === 'POST') return echo(req, res);
  const size = Number(/[?&]size=(\d+)/.exec(req.url ?? '')?.[1] ?? 0);
  const since = performance.now();
  if (slots <= 0) return answer(res, size, since);
  if (busy < slots) serve(res, size, since);
  else {
    account();
    waiting.push(() => serve(res, size, since));
  }
};
const bodies = new Map<number, string>();
function sized(size: number): string {
  let text = bodies.get(size);
  if (!text) {
    text = JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', data: { text: 'x'.repeat(Math.max(0, size - 60)) } });
    bodies.set(size, text);
  }
  return text;
}
const server =
  protocol === 'h1'
    ? https.createServer({ ...certs.apiserver, keepAliveTimeout: 60_000 }, handler as never)
    : http2.createSecureServer({ ...certs.apiserver, allowHTTP1: true }, handler as never);
server.on('error', (error: NodeJS.ErrnoException) => {
  process.stdout.write(`error ${error.code ?? error.message}\n`);
  process.exit(1);
});
server.listen(Number(portArg), host, () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('message', (message: { serviceMs?: number; drain?: boolean }) => {
  if (message.serviceMs !== undefined) serviceMs = message.serviceMs;
  if (message.drain) draining = true;
});
process.on('disconnect', () => process.exit(0));
