// Answers that undici's HTTP/1.1 client fails with an error of its own before the caller sees a
// response, after destroying the socket. Found by the HTTP/1.1 fuzz (test/dispatcher/httpFuzz.test.ts,
// 8 and 4 of 3,000 answers), they reached the caller, never retried nor counted. The balancer must
// treat them as the broken connection they are:
// - a bare `HTTP/1.1 101 Switching Protocols` (no `connection: upgrade`) to a plain GET: undici 8.13
//   fails it with its own AssertionError (`assert(upgrade)` in client-h1's onUpgrade, since llhttp
//   pauses on every 101); plain-Pool reproducer in bench/repro/h1-bare-101-assert.mjs;
// - a `content-length` that contradicts the framing (with `transfer-encoding: chunked`, or two
//   values): UND_ERR_RES_CONTENT_LENGTH_MISMATCH.
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import test from 'ava';
import * as undici from 'undici';
import { createBalancer } from '../../src/index.ts';
import { activeResources, leftOver } from '../helpers/leaks.ts';

const HOSTS = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];

async function server(host: string, answer: string, hits: { count: number }): Promise<net.Server> {
  const s = net.createServer((socket) => {
    socket.on('error', () => {});
    let pending = '';
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
        pending = pending.slice(end + 4);
        hits.count++;
        socket.write(answer);
      }
    });
  });
  s.listen(0, host);
  await once(s, 'listening');
  return s;
}

const BROKEN = {
  'a bare 101 (undici’s AssertionError)': 'HTTP/1.1 101 Switching Protocols\r\n\r\n',
  'a content-length that contradicts chunked framing': 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
  'two content-lengths': 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 7\r\n\r\nabcdefg',
};

for (const [what, answer] of Object.entries(BROKEN)) {
  test.serial(`${what} to a GET is a broken connection: every GET is answered by another endpoint`, async (t) => {
    const baseline = activeResources();
    const hits = HOSTS.map(() => ({ count: 0 }));
    const ok = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}';
    const servers = await Promise.all(HOSTS.map((host, i) => server(host, i === 0 ? answer : ok, hits[i]!)));
    const target = `static:///${servers.map((s, i) => `${HOSTS[i]}:${(s.address() as AddressInfo).port}`).join(',')}`;
    const origin = 'http://kubernetes.default.svc:6443';
    const balancer = createBalancer({ target, origin, probe: false, hedge: false });
    const statuses: Array<number | string> = [];
    try {
      for (let i = 0; i < 30; i++) {
        const outcome = await undici.request(`${origin}/api/v1/namespaces/default/pods/web`, { dispatcher: balancer }).then(
          async (res) => {
            await res.body.dump();
            return res.statusCode;
          },
          (error: Error & { code?: string }) => String(error.code),
        );
        statuses.push(outcome);
      }
    } finally {
      await balancer.close();
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    }
    t.true(hits[0]!.count >= 1, 'the broken endpoint was tried');
    t.deepEqual(statuses, Array.from({ length: 30 }, () => 200));
    t.deepEqual(await leftOver(baseline), {}, 'close() released every socket and timer');
  });
}
