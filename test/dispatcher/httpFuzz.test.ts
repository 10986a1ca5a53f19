// A hostile apiserver (issue 12): raw servers on loopback answer the balancer's requests with fuzzed
// HTTP/1.1 responses (status lines, headers, framing, bodies, or random bytes) and fuzzed HTTP/2
// frames after a valid preface and SETTINGS (HEADERS with odd HPACK literals, DATA, RST_STREAM,
// GOAWAY, WINDOW_UPDATE, unknown and misaddressed frames, or random bytes). Invariants: no uncaught
// exception or unhandled rejection; every request settles (a response, or an error with a code)
// within a bound; the endpoint set never empties; close() releases every socket and timer.
// Every case is one real request over a real socket: HTTP/1.1 over plain TCP (a TLS handshake per
// case would be most of the cost), HTTP/2 over TLS with ALPN h2, many cases per connection until a
// case kills it. `npm test` runs FUZZ_CASES (default 300) of each; `npm run fuzz` 100,000.
// Known: Node 22.23.3 itself aborts under the HTTP/2 fuzz (SIGABRT, node_http2.cc:640
// Http2Session::~Http2Session: Assertion current_nghttp2_memory_ == 0, during a GC), with the
// default seed after ~1,200 cases in one run of two (the other finished 100,000); a crash of the runtime no library code can catch.
// Trigger on 22.x not isolated (SECURITY.md); bench/repro/h2-fuzz-replay.mjs replays a FUZZ_TRACE,
// bench/repro/h2-partial-headers-abort.mjs is the pattern that aborts Node 20.
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { appendFileSync } from 'node:fs';
import net, { type AddressInfo, type Socket } from 'node:net';
import tls from 'node:tls';
import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { createBalancer, type Balancer } from '../../src/index.ts';
import { activeResources, leftOver } from '../helpers/leaks.ts';

const CASES = Number(process.env.FUZZ_CASES ?? 300);
const BATCH = 2_000;
/** A bound on the run: requests sent per fuzzed answer the servers must write. */
const MAX_REQUESTS_PER_CASE = 20;
const CONCURRENCY = 32;
/** Fixed unless FUZZ_SEED says otherwise, so that a run can be repeated (timing still varies). */
const SEED = Number(process.env.FUZZ_SEED ?? 20261201);
/** A request must settle by then: header and body timeouts are 400 ms, three attempts, plus a busy machine. */
const SETTLE_MS = 20_000;
const HOSTS = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];

const bytes = (max: number): fc.Arbitrary<Buffer> => fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a));
const token = fc.oneof(fc.constantFrom('content-type', 'content-length', 'transfer-encoding', 'connection', 'retry-after', 'x-a', 'Host', 'te', 'upgrade', 'keep-alive'), fc.string({ maxLength: 12 }));
const headerValue = fc.oneof(
  fc.constantFrom('chunked', 'gzip, chunked', 'close', 'keep-alive', '0', '-1', '18446744073709551616', '5, 7', 'application/json', 'h2c', ''),
  fc.integer({ min: -10, max: 100_000 }).map(String),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);
const headers = fc.array(fc.tuple(token, headerValue), { maxLength: 6 });
/** How an HTTP/1.1 case ends: mostly closed or complete; a hang (the timeouts must end it) now and then. */
const ending = fc.constantFrom('end', 'end', 'end', 'keep', 'keep', 'destroy', 'hang');
/** An HTTP/2 connection carries many cases: most keep it open. */
const h2Ending = fc.constantFrom('keep', 'keep', 'keep', 'keep', 'keep', 'keep', 'end', 'destroy', 'hang');

// ── HTTP/1.1 ───────────────────────────────────────────────────────────────

const h1Case = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('structured' as const),
      version: fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', 'ICY', ''),
      status: fc.oneof(fc.constantFrom('200', '200', '201', '204', '304', '429', '500', '503', '101', '100'), fc.integer({ min: -1, max: 1200 }).map(String), fc.string({ maxLength: 5 })),
      reason: fc.oneof(fc.constantFrom('OK', ''), fc.string({ maxLength: 20 })),
      headers,
      lineEnd: fc.constantFrom('\r\n', '\r\n', '\n', '\r'),
      chunked: fc.option(fc.array(fc.tuple(fc.oneof(fc.nat(64).map((n) => n.toString(16)), fc.string({ maxLength: 6 })), bytes(64)), { maxLength: 4 })),
      body: bytes(256),
      ending,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('raw' as const), bytes: bytes(400), ending }) },
);
type H1Case = typeof h1Case extends fc.Arbitrary<infer T> ? T : never;

function h1Bytes(c: H1Case): Buffer {
  if (c.kind === 'raw') return c.bytes;
  const eol = c.lineEnd;
  const head = `${c.version} ${c.status} ${c.reason}${eol}${c.headers.map(([n, v]) => `${n}: ${v}${eol}`).join('')}${eol}`;
  const body = c.chunked ? Buffer.concat([...c.chunked.flatMap(([size, data]) => [Buffer.from(`${size}\r\n`), data, Buffer.from('\r\n')]), Buffer.from('0\r\n\r\n')]) : c.body;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

function finish(socket: Socket, how: H1Case['ending']): void {
  if (how === 'end') socket.end();
  else if (how === 'destroy') socket.destroy();
  else if (how === 'hang') socket.setTimeout(5_000, () => socket.destroy()); // the client gives up long before
}

/** Plain-TCP servers that answer each request head with the next queued case (a valid 200 when none is left). */
async function h1Servers(queue: H1Case[]): Promise<net.Server[]> {
  const servers = HOSTS.map((host) => {
    const server = net.createServer((socket) => {
      socket.on('error', () => {});
      let pending = '';
      socket.on('data', (chunk: Buffer) => {
        pending += chunk.toString('latin1');
        for (let end = pending.indexOf('\r\n\r\n'); end >= 0 && !socket.destroyed; end = pending.indexOf('\r\n\r\n')) {
          pending = pending.slice(end + 4);
          const next = queue.shift();
          if (next) delivered.count++;
          if (!next) {
            socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}');
            continue;
          }
          socket.write(h1Bytes(next));
          finish(socket, next.ending);
          if (next.ending !== 'keep') return;
        }
      });
    });
    server.listen(0, host);
    return server;
  });
  await Promise.all(servers.map((s) => once(s, 'listening')));
  return servers;
}

// ── HTTP/2 ─────────────────────────────────────────────────────────────────

const PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';
const T = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;

function frame(type: number, flags: number, stream: number, payload: Buffer, declaredLength = payload.length): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(declaredLength & 0xffffff, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([header, payload]);
}

/** HPACK integer with an `n`-bit prefix. */
function hpackInt(value: number, n: number, first = 0): number[] {
  const max = (1 << n) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  for (value -= max; value >= 128; value >>= 7) out.push((value & 127) | 128);
  out.push(value);
  return out;
}

/** A header block of literals without indexing (no HPACK state to corrupt), names and values as given. */
function hpack(list: ReadonlyArray<readonly [string, string]>): Buffer {
  const out: number[] = [];
  for (const [name, value] of list) {
    const n = Buffer.from(name, 'latin1');
    const v = Buffer.from(value, 'latin1');
    out.push(0, ...hpackInt(n.length, 7), ...n, ...hpackInt(v.length, 7), ...v);
  }
  return Buffer.from(out);
}

const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};

const extraFrame = fc.oneof(
  fc.record({ t: fc.constant('data' as const), body: bytes(200), end: fc.boolean() }),
  fc.record({ t: fc.constant('rst' as const), code: fc.oneof(fc.nat(15), fc.nat()) }),
  fc.record({ t: fc.constant('trailers' as const), headers, end: fc.boolean() }),
  fc.record({ t: fc.constant('window' as const), increment: fc.oneof(fc.constant(0), fc.nat(), fc.constant(2 ** 31 - 1)), connection: fc.boolean() }),
  fc.record({ t: fc.constant('goaway' as const), last: fc.oneof(fc.constant(0), fc.nat(1000), fc.constant(2 ** 31 - 1)), code: fc.nat(15) }),
  fc.record({ t: fc.constant('other' as const), type: fc.integer({ min: 0, max: 255 }), flags: fc.integer({ min: 0, max: 255 }), stream: fc.oneof(fc.constant('same' as const), fc.nat()), payload: bytes(40), lie: fc.option(fc.nat(0xffffff)) }),
);

const h2Case = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('frames' as const),
      status: fc.oneof(fc.constantFrom('200', '200', '200', '204', '429', '503', '100', '101'), fc.integer({ min: -1, max: 1200 }).map(String), fc.string({ maxLength: 4 })),
      statusPlace: fc.constantFrom('first', 'first', 'first', 'last', 'twice', 'none'),
      headers,
      endStream: fc.boolean(),
      endHeaders: fc.constantFrom(true, true, true, true, false),
      frames: fc.array(extraFrame, { maxLength: 3 }),
      ending: h2Ending,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('raw' as const), bytes: bytes(300), ending: h2Ending }) },
);
type H2Case = typeof h2Case extends fc.Arbitrary<infer T> ? T : never;

function h2Bytes(c: H2Case, stream: number): Buffer {
  if (c.kind === 'raw') return c.bytes;
  const list: Array<[string, string]> = c.headers.map(([n, v]) => [n.toLowerCase(), v]);
  const status: [string, string] = [':status', c.status];
  if (c.statusPlace === 'first') list.unshift(status);
  else if (c.statusPlace === 'last') list.push(status);
  else if (c.statusPlace === 'twice') list.unshift(status, status);
  const out = [frame(T.HEADERS, (c.endStream ? 1 : 0) | (c.endHeaders ? 4 : 0), stream, hpack(list))];
  for (const f of c.frames) {
    if (f.t === 'data') out.push(frame(T.DATA, f.end ? 1 : 0, stream, f.body));
    else if (f.t === 'rst') out.push(frame(T.RST_STREAM, 0, stream, u32(f.code)));
    else if (f.t === 'trailers') out.push(frame(T.HEADERS, (f.end ? 1 : 0) | 4, stream, hpack(f.headers.map(([n, v]) => [n.toLowerCase(), v]))));
    else if (f.t === 'window') out.push(frame(T.WINDOW_UPDATE, 0, f.connection ? 0 : stream, u32(f.increment)));
    else if (f.t === 'goaway') out.push(frame(T.GOAWAY, 0, 0, Buffer.concat([u32(f.last), u32(f.code)])));
    else out.push(frame(f.type, f.flags, f.stream === 'same' ? stream : f.stream, f.payload, f.lie ?? f.payload.length));
  }
  return Buffer.concat(out);
}

/** A TLS server speaking just enough HTTP/2 to be reached: preface, SETTINGS and ACKs, PING answers; each request stream gets the next case. */
let connections = 0;
/** Cases a server actually wrote: a request that failed before reaching one (its connection just died) takes none. */
const delivered = { count: 0 };
async function h2Servers(queue: H2Case[]): Promise<tls.Server[]> {
  const servers = HOSTS.map((host) => {
    const server = tls.createServer({ ...certs.apiserver, ALPNProtocols: ['h2'] }, (socket) => {
      const connection = connections++;
      socket.on('error', () => {});
      socket.write(frame(T.SETTINGS, 0, 0, Buffer.alloc(0)));
      let buffer = Buffer.alloc(0);
      let prefaced = false;
      socket.on('data', (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        if (!prefaced) {
          if (buffer.length < PREFACE.length) return;
          buffer = buffer.subarray(PREFACE.length);
          prefaced = true;
        }
        while (buffer.length >= 9 && !socket.destroyed) {
          const length = buffer.readUIntBE(0, 3);
          if (buffer.length < 9 + length) return;
          const [type, flags] = [buffer[3]!, buffer[4]!];
          const stream = buffer.readUInt32BE(5) & 0x7fffffff;
          const payload = buffer.subarray(9, 9 + length);
          buffer = buffer.subarray(9 + length);
          if (type === T.SETTINGS && !(flags & 1)) socket.write(frame(T.SETTINGS, 1, 0, Buffer.alloc(0)));
          else if (type === T.PING && !(flags & 1)) socket.write(frame(T.PING, 1, 0, payload));
          else if (type === T.HEADERS) {
            const next = queue.shift();
            if (next) delivered.count++;
            if (!next) {
              socket.write(frame(T.HEADERS, 5, stream, hpack([[':status', '200']])));
              continue;
            }
            if (process.env.FUZZ_TRACE) appendFileSync(process.env.FUZZ_TRACE, `${connection} ${JSON.stringify(next)}\n`);
            socket.write(h2Bytes(next, stream));
            if (next.ending === 'end') socket.end();
            else if (next.ending === 'destroy') socket.destroy();
            if (next.ending === 'end' || next.ending === 'destroy') return;
          }
        }
      });
      // A stream left open ('hang', 'keep') is ended by the client's timeouts, the connection at the latest by this.
      socket.setTimeout(10_000, () => socket.destroy());
    });
    server.listen(0, host);
    return server;
  });
  await Promise.all(servers.map((s) => once(s, 'listening')));
  return servers;
}

// ── the run ────────────────────────────────────────────────────────────────

interface Tally {
  cases: number;
  responses: number;
  errors: Map<string, number>;
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'hung'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Sends requests, CONCURRENCY at a time, batch by batch, each batch's cases queued for the servers
 * to answer with, until the servers have written CASES fuzzed answers (or MAX_REQUESTS_PER_CASE ×
 * CASES requests were sent); returns the failures of the invariants. Counting written answers, not
 * requests: a fuzzed answer often gets every endpoint ejected for a moment, and the requests that
 * fail at once then (ERR_ALL_ENDPOINTS_FAILED) test nothing of the parser.
 */
async function fuzz<C>(arbitrary: fc.Arbitrary<C>, queue: C[], balancer: Balancer, origin: string, tally: Tally): Promise<string[]> {
  const problems: string[] = [];
  for (let done = 0; delivered.count < CASES && tally.cases < MAX_REQUESTS_PER_CASE * CASES; done += BATCH) {
    const batch = fc.sample(arbitrary, { numRuns: Math.min(BATCH, Math.max(CONCURRENCY, CASES - delivered.count)), seed: SEED + done });
    queue.push(...batch);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < batch.length) {
          next++;
          tally.cases++;
          const outcome = await within(
            undici.request(`${origin}/api/v1/namespaces/default/pods`, { dispatcher: balancer, bodyTimeout: 400 }).then(
              async (res) => {
                await res.body.dump().catch(() => {});
                return res.statusCode;
              },
              (error: Error & { code?: unknown }) => error,
            ),
            SETTLE_MS,
          );
          if (outcome === 'hung') problems.push('a request did not settle');
          else if (typeof outcome === 'number') tally.responses++;
          else {
            const code = outcome instanceof undici.errors.UndiciError && outcome.code === undefined ? outcome.name : outcome.code;
            if (process.env.FUZZ_DEBUG) console.error(String(code), outcome.message);
            // Typed: ours (BalancerError), undici's, or Node's (a string code).
            if (typeof code !== 'string') problems.push(`an untyped error: ${String(outcome)}`);
            tally.errors.set(String(code), (tally.errors.get(String(code)) ?? 0) + 1);
            // Every endpoint ejected (for 20–200 ms): wait for one to come back rather than spend cases on nothing.
            if (code === 'ERR_ALL_ENDPOINTS_FAILED') await sleep(20);
          }
        }
      }),
    );
    if (balancer.endpoints().length !== HOSTS.length) problems.push(`the endpoint set has ${balancer.endpoints().length} endpoints`);
  }
  queue.length = 0;
  return problems;
}

async function run(t: ExecutionContext, protocol: 'HTTP/1.1' | 'HTTP/2'): Promise<void> {
  t.timeout(7_200_000);
  const baseline = activeResources();
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtException', onUnhandled);
  const queue: Array<H1Case | H2Case> = [];
  const servers = protocol === 'HTTP/1.1' ? await h1Servers(queue as H1Case[]) : await h2Servers(queue as H2Case[]);
  const target = `static:///${servers.map((s, i) => `${HOSTS[i]}:${(s.address() as AddressInfo).port}`).join(',')}`;
  const origin = protocol === 'HTTP/1.1' ? 'http://kubernetes.default.svc:6443' : 'https://kubernetes.default.svc:6443';
  // Short timeouts, so a case that leaves a response hanging costs little; no probes, so only the fuzzed answers judge the endpoints.
  const balancer = createBalancer({ target, origin, tls: { ca: certs.ca }, probe: false, requestTimeout: 400, pingInterval: 1_000, connectTimeout: 1_000, baseEjectionMs: 20, maxEjectionMs: 200 });
  balancer.on('warning', () => {});
  const tally: Tally = { cases: 0, responses: 0, errors: new Map() };
  const started = performance.now();
  let problems: string[];
  try {
    await balancer.ready();
    const arbitrary = (protocol === 'HTTP/1.1' ? h1Case : h2Case) as fc.Arbitrary<H1Case | H2Case>;
    problems = await fuzz(arbitrary, queue, balancer, origin, tally);
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    process.off('unhandledRejection', onUnhandled);
    process.off('uncaughtException', onUnhandled);
  }
  const seconds = (performance.now() - started) / 1000;
  const written = delivered.count;
  delivered.count = 0;
  const errors = [...tally.errors].sort((a, b) => b[1] - a[1]).map(([code, n]) => `${code} ${n}`).join(', ');
  t.log(`${protocol}: ${tally.cases} requests over real sockets, ${written} fuzzed answers written by the servers (the other requests met a connection an earlier answer had killed, or retried onto the default answer) in ${seconds.toFixed(1)} s, seed ${SEED}; ${tally.responses} responses, errors: ${errors}`);
  t.deepEqual(problems, []);
  t.deepEqual(unhandled, []);
  t.true(written >= CASES, `only ${written} of ${CASES} fuzzed answers were written (${tally.cases} requests)`);
  t.true(written > 0, 'fuzzed answers reached the balancer');
  t.deepEqual(await leftOver(baseline, 15_000), {}, 'close() released every socket and timer');
}

test.serial('HTTP/1.1 responses from a hostile apiserver: every request settles, nothing crashes, the endpoints stay', (t) => run(t, 'HTTP/1.1'));
test.serial('HTTP/2 frames from a hostile apiserver: every request settles, nothing crashes, the endpoints stay', (t) => run(t, 'HTTP/2'));
