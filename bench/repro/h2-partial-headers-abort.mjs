/* global process, console, Buffer, setTimeout */
// Candidate reproducer for the Node runtime abort seen in the HTTP/2 fuzz (issue 12), without
// kube-balancer or undici: a plain `node:http2` client against a raw TLS server.
//
//   node --expose-gc bench/repro/h2-partial-headers-abort.mjs [goaway|data|rst|close]
//
// Prints "no abort" and exits 0, or the process dies with SIGABRT (exit code 134).
//
// Report text (for nodejs/node; not filed):
//   Version: Node.js v20.20.2 (linux x64). NOT reproduced with v22.23.3, see below.
//   Steps: the server answers a request with HEADERS (a non-empty header block, END_HEADERS not
//     set) and then any frame other than CONTINUATION (GOAWAY, DATA or RST_STREAM; a connection
//     PROTOCOL_ERROR, RFC 9113 §6.10). The client's session is destroyed; run a GC.
//   Expected: the client gets a protocol error on the session and the stream; nothing else.
//   Actual (v20.20.2): `Http2Session::~Http2Session ... Assertion (current_nghttp2_memory_) == (0)
//     failed` from a GC weak callback, SIGABRT. Http2Stream::AddHeader counts the partial block into
//     the session's memory; only StartHeaders/OnHeaders give it back, and neither runs. Closing the
//     connection after the partial block (mode `close`) does not abort. An empty header block does
//     not abort.
//
// Status on the Node that kube-balancer uses (22.23.3, the `node` devDependency): this pattern does
// NOT abort there. The fuzz (test/dispatcher/httpFuzz.test.ts, seed 20261201) still aborts 22.23.3
// with the same assertion (node_http2.cc:640) after ~1,200 cases, about a minute in; replaying its
// FUZZ_TRACE per connection with a plain node:http2 client aborted once (exit 134) and then not
// again in four runs, so the 22.x trigger is GC-timing dependent and not yet isolated.
import http2 from 'node:http2';
import tls from 'node:tls';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const mode = process.argv[2] ?? 'goaway';
const dir = mkdtempSync(join(tmpdir(), 'h2-abort-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=localhost',
  '-addext', 'subjectAltName=DNS:localhost', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
const key = readFileSync(join(dir, 'key.pem'));
const cert = readFileSync(join(dir, 'cert.pem'));
rmSync(dir, { recursive: true });

const frame = (type, flags, stream, payload) => {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
};
/** HPACK literal without indexing, short name and value. */
const literal = (name, value) => Buffer.from([0, name.length, ...Buffer.from(name), value.length, ...Buffer.from(value)]);

const server = tls.createServer({ key, cert, ALPNProtocols: ['h2'] }, (socket) => {
  socket.on('error', () => {});
  socket.write(frame(4, 0, 0, Buffer.alloc(0))); // SETTINGS
  let buffer = Buffer.alloc(0);
  let prefaced = false;
  socket.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    if (!prefaced) {
      if (buffer.length < 24) return;
      buffer = buffer.subarray(24);
      prefaced = true;
    }
    while (buffer.length >= 9) {
      const length = buffer.readUIntBE(0, 3);
      if (buffer.length < 9 + length) return;
      const [type, flags] = [buffer[3], buffer[4]];
      const id = buffer.readUInt32BE(5) & 0x7fffffff;
      buffer = buffer.subarray(9 + length);
      if (type === 4 && !(flags & 1)) socket.write(frame(4, 1, 0, Buffer.alloc(0))); // SETTINGS ACK
      if (type !== 1) continue;
      socket.write(frame(1, 0, id, Buffer.concat([literal(':status', '200'), literal('x-a', 'b')]))); // HEADERS, no END_HEADERS
      if (mode === 'goaway') socket.write(frame(7, 0, 0, Buffer.alloc(8)));
      else if (mode === 'data') socket.write(frame(0, 1, id, Buffer.from('x')));
      else if (mode === 'rst') socket.write(frame(3, 0, id, Buffer.alloc(4)));
      else socket.end();
    }
  });
});

server.listen(0, '127.0.0.1', async () => {
  for (let i = 0; i < 20; i++) {
    await new Promise((resolve) => {
      const session = http2.connect(`https://localhost:${server.address().port}`, { ca: cert });
      session.on('error', () => {});
      const request = session.request({ ':path': '/' });
      request.on('error', () => {});
      request.on('close', () => {
        session.destroy();
        resolve();
      });
      request.end();
      setTimeout(() => {
        session.destroy();
        resolve();
      }, 2_000).unref();
    });
  }
  for (let i = 0; i < 10; i++) {
    globalThis.gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  console.log(`${process.version} ${mode}: no abort`);
  server.close();
});
