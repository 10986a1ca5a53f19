/* global process, console, URL, setTimeout */
// Minimal reproducer for an undici 8 + Node HTTP/2 leak, without kube-balancer: plain undici Pools.
//
//   node --expose-gc bench/repro/h2-stream-timer-leak.mjs [requests] [bodyTimeoutMs]
//
// Three HTTPS/HTTP/2 servers (each its own process, certificate made by the openssl CLI), one undici
// Pool each, 64 concurrent GETs spread over them. Prints how many ClientHttp2Stream objects are still
// reachable after the requests finished and a GC ran; exits 1 when some are.
//
// Cause: undici's client-h2 `onResponse` calls `stream.setTimeout(bodyTimeout)`. Node emits
// 'response' on process.nextTick; when HEADERS and DATA+END_STREAM arrive in one read, nghttp2 has
// closed the stream by then, and Node's `closeStream()` already cleared its timer. The timer undici
// arms afterwards is never cleared: `setStreamTimeout` refuses only destroyed streams, and
// `Http2Stream#_destroy` does not clear `kTimeout`. The Timeout holds the destroyed stream (and its
// request state) until it fires: `bodyTimeout`, 300 s by default. With `bodyTimeout` 0 (pass 0 as
// the second argument) nothing is retained. One server and one Pool rarely hit the race; h2c not at all.
import { execFileSync, fork } from 'node:child_process';
import diagnostics from 'node:diagnostics_channel';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';

const [mode, ...args] = process.argv.slice(2);
if (mode === 'server') {
  const [dir] = args;
  const tls = { cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) };
  const server = http2.createSecureServer(tls, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}');
  });
  server.listen(0, '127.0.0.1', () => process.send(server.address().port));
  process.on('disconnect', () => process.exit(0));
} else {
  const requests = Number(mode ?? 20_000);
  const bodyTimeout = args[0] === undefined ? undefined : Number(args[0]);
  const dir = mkdtempSync(join(tmpdir(), 'h2-leak-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  const ca = readFileSync(join(dir, 'cert.pem'));
  const streams = [];
  diagnostics.subscribe('http2.client.stream.created', ({ stream }) => streams.push(new WeakRef(stream)));
  const servers = [];
  const pools = [];
  for (let i = 0; i < 3; i++) {
    const child = fork(new URL(import.meta.url).pathname, ['server', dir]);
    const [port] = await once(child, 'message');
    servers.push(child);
    pools.push(new Pool(`https://127.0.0.1:${port}`, { allowH2: true, connect: { ca, servername: 'localhost' } }));
  }
  let sent = 0;
  const worker = async () => {
    while (sent < requests) {
      const pool = pools[sent++ % pools.length];
      const res = await pool.request({ path: '/', method: 'GET', headersTimeout: 30_000, ...(bodyTimeout === undefined ? {} : { bodyTimeout }) });
      await res.body.dump();
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
  await new Promise((resolve) => setTimeout(resolve, 1000));
  globalThis.gc?.();
  const alive = streams.map((ref) => ref.deref()).filter((stream) => stream !== undefined);
  const destroyed = alive.filter((stream) => stream.destroyed).length;
  console.log(`${process.versions.node} undici ${JSON.parse(readFileSync(new URL(import.meta.resolve('undici/package.json')))).version}: ` +
    `${requests} requests, bodyTimeout ${bodyTimeout ?? 'default'}: ${alive.length} ClientHttp2Stream objects reachable, ${destroyed} of them destroyed`);
  await Promise.all(pools.map((pool) => pool.close()));
  for (const child of servers) child.disconnect();
  rmSync(dir, { recursive: true, force: true });
  process.exitCode = destroyed > 0 ? 1 : 0;
}
