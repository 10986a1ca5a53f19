/* global process, console, Buffer, setTimeout, setImmediate */
// Replays a FUZZ_TRACE file written by test/dispatcher/httpFuzz.test.ts (HTTP/2), connection by
// connection, against a plain node:http2 client (no undici, no kube-balancer), with a GC after each
// connection, to isolate the case that makes Node abort (see h2-partial-headers-abort.mjs).
//
//   FUZZ_TRACE=/tmp/trace FUZZ_CASES=100000 npx ava --serial test/dispatcher/httpFuzz.test.ts --match '*HTTP/2*'
//   node --expose-gc bench/repro/h2-fuzz-replay.mjs /tmp/trace [connection,connection,...] key.pem cert.pem
//
// Exit code 134 = the abort reproduced; "no abort" otherwise. CONC=n sends n requests at a time.
import http2 from 'node:http2';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';
const key = readFileSync(process.argv[4] ?? 'key.pem'), cert = readFileSync(process.argv[5] ?? 'cert.pem');
const lines = readFileSync(process.argv[2], 'utf8').trim().split('\n');
const only = process.argv[3] && process.argv[3] !== 'all' ? new Set(process.argv[3].split(',').map(Number)) : undefined;
const groups = new Map();
for (const l of lines) { const i = l.indexOf(' '); const c = Number(l.slice(0, i)); if (only && !only.has(c)) continue; if (!groups.has(c)) groups.set(c, []); groups.get(c).push(JSON.parse(l.slice(i + 1))); }
const T = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8 };
function frame(type, flags, stream, payload, declared = payload.length) { const h = Buffer.alloc(9); h.writeUIntBE(declared & 0xffffff, 0, 3); h[3] = type; h[4] = flags; h.writeUInt32BE(stream & 0x7fffffff, 5); return Buffer.concat([h, payload]); }
function hpackInt(v, n, first = 0) { const max = (1 << n) - 1; if (v < max) return [first | v]; const out = [first | max]; for (v -= max; v >= 128; v >>= 7) out.push((v & 127) | 128); out.push(v); return out; }
function hpack(list) { const out = []; for (const [name, value] of list) { const n = Buffer.from(name, 'latin1'), v = Buffer.from(value, 'latin1'); out.push(0, ...hpackInt(n.length, 7), ...n, ...hpackInt(v.length, 7), ...v); } return Buffer.from(out); }
const u32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32BE(n >>> 0); return b; };
function h2Bytes(c, stream) {
  if (c.kind === 'raw') return Buffer.from(c.bytes.data ?? Object.values(c.bytes));
  const list = c.headers.map(([n, v]) => [n.toLowerCase(), v]);
  const status = [':status', c.status];
  if (c.statusPlace === 'first') list.unshift(status); else if (c.statusPlace === 'last') list.push(status); else if (c.statusPlace === 'twice') list.unshift(status, status);
  const out = [frame(T.HEADERS, (c.endStream ? 1 : 0) | (c.endHeaders ? 4 : 0), stream, hpack(list))];
  for (const f of c.frames) {
    const b = (x) => Buffer.from(x.data ?? Object.values(x));
    if (f.t === 'data') out.push(frame(T.DATA, f.end ? 1 : 0, stream, b(f.body)));
    else if (f.t === 'rst') out.push(frame(T.RST_STREAM, 0, stream, u32(f.code)));
    else if (f.t === 'trailers') out.push(frame(T.HEADERS, (f.end ? 1 : 0) | 4, stream, hpack(f.headers.map(([n, v]) => [n.toLowerCase(), v]))));
    else if (f.t === 'window') out.push(frame(T.WINDOW_UPDATE, 0, f.connection ? 0 : stream, u32(f.increment)));
    else if (f.t === 'goaway') out.push(frame(T.GOAWAY, 0, 0, Buffer.concat([u32(f.last), u32(f.code)])));
    else out.push(frame(f.type, f.flags, f.stream === 'same' ? stream : f.stream, b(f.payload), f.lie ?? b(f.payload).length));
  }
  return Buffer.concat(out);
}
let queue = [];
const server = tls.createServer({ key, cert, ALPNProtocols: ['h2'] }, (s) => {
  s.on('error', () => {});
  s.write(frame(4, 0, 0, Buffer.alloc(0)));
  let buf = Buffer.alloc(0), pre = false;
  s.on('data', (c) => {
    buf = Buffer.concat([buf, c]);
    if (!pre) { if (buf.length < 24) return; buf = buf.subarray(24); pre = true; }
    while (buf.length >= 9 && !s.destroyed) {
      const len = buf.readUIntBE(0, 3); if (buf.length < 9 + len) return;
      const type = buf[3], flags = buf[4], id = buf.readUInt32BE(5) & 0x7fffffff; const payload = buf.subarray(9, 9 + len); buf = buf.subarray(9 + len);
      if (type === 4 && !(flags & 1)) s.write(frame(4, 1, 0, Buffer.alloc(0)));
      else if (type === 6 && !(flags & 1)) s.write(frame(6, 1, 0, payload));
      else if (type === 1) {
        const next = queue.shift();
        if (!next) { s.write(frame(1, 5, id, hpack([[':status', '200']]))); continue; }
        s.write(h2Bytes(next, id));
        if (next.ending === 'end') s.end(); else if (next.ending === 'destroy') s.destroy();
        if (next.ending === 'end' || next.ending === 'destroy') return;
      }
    }
  });
  s.setTimeout(3000, () => s.destroy());
});
const CONC = Number(process.env.CONC ?? 1);
server.listen(0, '127.0.0.1', async () => {
  for (const [c, cases] of groups) {
    queue = [...cases];
    console.log('conn', c, cases.length);
    await new Promise((resolve) => {
      const session = http2.connect(`https://localhost:${server.address().port}`, { ca: cert });
      session.on('error', () => {});
      session.on('close', resolve);
      let inflight = 0, tries = 0;
      const send = () => {
        if (session.destroyed || session.closed || queue.length === 0 || ++tries > 3 * cases.length) { if (inflight === 0) session.destroy(); return; }
        inflight++;
        let req;
        try { req = session.request({ ':path': '/' }); } catch { inflight--; session.destroy(); return; }
        req.on('error', () => {}); req.on('response', () => {}); req.resume();
        req.setTimeout(400, () => req.close(8));
        req.on('close', () => { inflight--; setImmediate(send); });
        req.end();
      };
      for (let i = 0; i < CONC; i++) send();
      setTimeout(() => { console.log("force destroy"); session.destroy(); }, 5000).unref();
    });
    for (let i = 0; i < 3; i++) { globalThis.gc(); await new Promise((r) => setImmediate(r)); }
  }
  console.log('no abort');
  server.close();
});
