// "Not sent" comes from the attempt's own transport state, never from an errno (issue 26, defect 1):
// a POST whose established connection fails with `read ETIMEDOUT` after it was written ran, and is
// not sent again; one that never reached a connection (ECONNREFUSED) goes elsewhere, and so does one
// undici put back in its queue unsent (an HTTP/2 GOAWAY said the stream was not processed) whose new
// connection was then refused.
// Serial: the first test watches every POST's headers go out.
import diagnostics_channel from 'node:diagnostics_channel';
import { once } from 'node:events';
import http2 from 'node:http2';
import net, { type AddressInfo, type Socket } from 'node:net';
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { HOSTS, ORIGIN } from '../helpers/balancer.ts';
import { until } from '../helpers/poll.ts';

const PATH = '/api/v1/namespaces/default/configmaps';

test.serial('a POST whose connection fails with read ETIMEDOUT after it was written is not sent again', async (t) => {
  // HTTP/1.1, as in the report: the servers read each POST whole and never answer.
  let bodiesRead = 0;
  const servers = await startServers(HOSTS.slice(0, 2), {
    h2: false,
    handler: (req) => {
      req.resume();
      req.once('end', () => bodiesRead++);
    },
  });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false });
  const retries: string[] = [];
  balancer.on('retry', (e) => retries.push(e.reason));
  const sockets: Socket[] = [];
  const onHeaders = (message: unknown): void => {
    const { request, socket } = message as { request: { method: string }; socket: Socket };
    if (request.method === 'POST') sockets.push(socket);
  };
  diagnostics_channel.subscribe('undici:client:sendHeaders', onHeaders);
  try {
    const pending = undici.request(`${ORIGIN}${PATH}`, { dispatcher: balancer, method: 'POST', body: '{"kind":"ConfigMap"}' });
    await until(() => bodiesRead === 1 && sockets.length === 1, { what: 'the POST to reach a server whole' });
    // What the kernel reports when TCP keepalive (or retransmission) gives up on an established connection.
    sockets[0]!.destroy(Object.assign(new Error('read ETIMEDOUT'), { code: 'ETIMEDOUT', errno: -110, syscall: 'read' }));
    const error = await t.throwsAsync(pending);
    t.is((error as Error & { code?: string }).code, 'ETIMEDOUT', 'the caller gets the failure as it came');
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.deepEqual(retries, [], 'not retried');
    t.is(servers[0]!.requests.length + servers[1]!.requests.length, 1, 'the other apiserver got no request');
  } finally {
    diagnostics_channel.unsubscribe('undici:client:sendHeaders', onHeaders);
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test.serial('a POST refused at connect (nothing handed to a connection) goes to another endpoint', async (t) => {
  const servers = await startServers(HOSTS.slice(0, 2), { h2: false });
  const target = staticTarget(servers);
  await servers[0]!.close();
  const balancer = createBalancer({ origin: ORIGIN, target, tls: { ca: certs.ca }, probe: false, hedge: false });
  const retries: string[] = [];
  balancer.on('retry', (e) => retries.push(e.reason));
  try {
    // Until the dead endpoint's refusal has been seen once; bounded by the endpoints' count.
    for (let i = 0; i < 4 && retries.length === 0; i++) {
      const res = await undici.request(`${ORIGIN}${PATH}`, { dispatcher: balancer, method: 'POST', body: '{}' });
      await res.body.dump();
      t.is(res.statusCode, 200);
    }
    t.deepEqual(retries, ['connect']);
    t.is(balancer.stats().totals.failed, 0);
  } finally {
    await balancer.destroy();
    await servers[1]!.close();
  }
});

test.serial('a POST that a GOAWAY sent back to undici\'s queue, unprocessed, and whose new connection is refused, goes to another endpoint', async (t) => {
  // The demo's rolling restart, in a fresh-clone CI run: an apiserver exiting sent GOAWAY, undici
  // requeued the DELETE it had started (the stream was not processed), its reconnect was refused,
  // and the DELETE failed with ECONNREFUSED although nothing of it had run anywhere.
  // The listener is apart from the HTTP/2 server: closing it refuses new connections and leaves the
  // open session alone (closing an http2 server itself closes its sessions too).
  const exiting = http2.createSecureServer({ ...certs.apiserver });
  const listener = net.createServer((socket) => exiting.emit('connection', socket));
  let posts = 0;
  exiting.on('stream', (stream) => {
    posts++;
    stream.on('error', () => {}); // its own RST_STREAM, reported back
    // Stop listening first, so the reconnect is refused; then shut the session down and refuse the
    // stream (it was not processed): undici puts the POST back in its queue for a new connection.
    listener.close();
    stream.session?.goaway(http2.constants.NGHTTP2_NO_ERROR);
    stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
    setTimeout(() => stream.session?.destroy(), 100);
  });
  listener.listen(0, HOSTS[0]);
  await once(listener, 'listening');
  const [other] = await startServers([HOSTS[1]!]);
  const target = `static:///${HOSTS[0]}:${(listener.address() as AddressInfo).port},${other!.authority}`;
  const balancer = createBalancer({ origin: ORIGIN, target, tls: { ca: certs.ca }, probe: false, hedge: false });
  const retries: string[] = [];
  balancer.on('retry', (e) => retries.push(e.reason));
  try {
    let sent = 0;
    // Until one POST has met the exiting server; bounded by the endpoints' count.
    for (; sent < 4 && posts === 0; sent++) {
      const res = await undici.request(`${ORIGIN}${PATH}`, { dispatcher: balancer, method: 'POST', body: '{}' });
      await res.body.dump();
      t.is(res.statusCode, 200);
    }
    t.is(posts, 1);
    t.deepEqual(retries, ['connect']);
    t.is(other!.requests.length, sent, 'each POST ran once, on the other server');
    t.is(balancer.stats().totals.failed, 0);
  } finally {
    await balancer.destroy();
    await other!.close();
    if (listener.listening) listener.close();
  }
});
