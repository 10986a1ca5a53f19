// The probe's own deadline on real sockets (small h2 servers in this process, a real balancer): it
// runs from the moment the probe is written to a connection, so a probe that times out costs no
// other request on its HTTP/2 connection, setting up a connection is not counted, and a connect
// that never completes still ejects the endpoint.
import test from 'ava';
import diagnostics_channel from 'node:diagnostics_channel';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import * as undici from 'undici';
import { APISERVER_NAME, certs } from '../../fixtures/certs/index.ts';
import { Endpoint } from '../../src/balancer/Endpoint.ts';
import { systemClock } from '../../src/clock.ts';
import { OutcomeJudge } from '../../src/health/OutcomeJudge.ts';
import { ProbeSender } from '../../src/health/sendProbe.ts';
import { createBalancer } from '../../src/index.ts';
import { until } from '../helpers/poll.ts';

/**
 * An HTTPS (h2) server on 127.0.0.2 whose TCP connections reach TLS after `tlsDelayMs`
 * (`Infinity`: never, a black hole before TLS); `/readyz` answers at once.
 */
async function slowToConnect(tlsDelayMs: number, onReadyz?: (req: http2.Http2ServerRequest, connections: number) => boolean) {
  let probes = 0;
  let connections = 0;
  const h2 = http2.createSecureServer({ ...certs.apiserver }, (req, res) => {
    if (req.url === '/readyz') {
      if (onReadyz?.(req, connections)) return;
      probes++;
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const listener = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    // The first connection of a `onReadyz` server is set up at once, the later ones after the delay.
    const delay = onReadyz && connections++ === 0 ? 0 : tlsDelayMs;
    if (delay !== Infinity) timers.add(setTimeout(() => h2.emit('connection', socket), delay));
  });
  listener.listen(0, '127.0.0.2');
  await new Promise((resolve) => listener.once('listening', resolve));
  const port = (listener.address() as AddressInfo).port;
  return {
    port,
    probes: () => probes,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      h2.close();
      await new Promise((resolve) => listener.close(resolve));
    },
  };
}

/** Blocks this process's event loop for `ms`, as a busy CPU or a long GC pause does. */
function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

test.serial('a probe that times out right before our own stall leaves its HTTP/2 connection alone: the POST in flight on it completes', async (t) => {
  let postHeld = false;
  let slowProbes = 0;
  let closedSessions = 0;
  const server = http2.createSecureServer({ ...certs.apiserver }, (req, res) => {
    if (req.url === '/readyz') {
      // The first probe sent while the POST is held answers after the probe's 1-s timeout; the others at once.
      const slow = postHeld && slowProbes++ === 0;
      setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'), slow ? 1_200 : 0);
      return;
    }
    if (req.method === 'POST') {
      postHeld = true;
      req.resume();
      setTimeout(() => res.writeHead(201, { 'content-type': 'application/json' }).end('{}'), 2_000);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  server.on('session', (session) => session.once('close', () => closedSessions++));
  server.listen(0, '127.0.0.2');
  await new Promise((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  const origin = `https://${APISERVER_NAME}:${port}`;
  const balancer = createBalancer({
    origin,
    target: `static:///127.0.0.2:${port}`,
    tls: { ca: certs.ca },
    hedge: false,
    probe: { intervalMs: 300, timeoutMs: 1_000 },
    // The periodic PING is another way a stall can reset a connection (an unacked one by the next);
    // far off here, so that only the probe's own timeout is tested.
    pingInterval: 60_000,
  });
  const ejected: string[] = [];
  balancer.on('eject', (e, reason) => ejected.push(`${e.address}:${reason}`));
  // The probe's timeout, as it ends the probe: this process stalls then for 1.5 s. undici 8 had
  // just PINGed the session for a stream timeout of its own and reset it when the ack was not read
  // within 1 s; with the probe's own deadline there is no PING to miss.
  let stalled = false;
  const onError = ({ request }: { request: { path: string } }): void => {
    if (request.path !== '/readyz' || stalled) return;
    stalled = true;
    stall(1_500);
  };
  diagnostics_channel.subscribe('undici:request:error', onError as (message: unknown) => void);
  try {
    // One GET first: the pool's HTTP/2 session is up, and the POST and the probes share it.
    const warm = await undici.request(`${origin}/api/v1/namespaces/default/configmaps/a`, { dispatcher: balancer });
    await warm.body.dump();
    const res = await undici.request(`${origin}/api/v1/namespaces/default/configmaps`, { dispatcher: balancer, method: 'POST', body: '{}' });
    await res.body.dump();
    t.is(res.statusCode, 201);
    t.true(stalled, 'the slow probe timed out (and we stalled) while the POST was held');
    t.is(closedSessions, 0, 'no HTTP/2 connection was reset');
    t.deepEqual(ejected, []);
  } finally {
    diagnostics_channel.unsubscribe('undici:request:error', onError as (message: unknown) => void);
    await balancer.close();
    server.close();
  }
});

/** A balancer on one endpoint at `port` that probes every 300 ms with a 1-s timeout, and the ejections it told. */
function probedBalancer(port: number, connectTimeout: number, otherPorts: number[] = []) {
  const balancer = createBalancer({
    origin: `https://${APISERVER_NAME}:${port}`,
    target: `static:///${[port, ...otherPorts].map((p) => `127.0.0.2:${p}`).join(',')}`,
    tls: { ca: certs.ca },
    hedge: false,
    connectTimeout,
    probe: { intervalMs: 300, timeoutMs: 1_000 },
  });
  const ejected: string[] = [];
  balancer.on('eject', (e, reason) => ejected.push(otherPorts.length > 0 ? `${e.key} ${reason}` : `${e.address}:${reason}`));
  return { balancer, ejected };
}

test('setting up the connection is not the probe\'s time: a healthy endpoint whose TLS takes 1.5 s is not ejected by a 1-s probe timeout', async (t) => {
  const server = await slowToConnect(1_500);
  const { balancer, ejected } = probedBalancer(server.port, 5_000);
  try {
    await until(() => server.probes() >= 2, { what: 'two probes answered' });
    t.deepEqual(ejected, []);
    t.is(balancer.endpoints()[0]?.state, 'ready');
  } finally {
    await balancer.close();
    await server.close();
  }
});

test('a black hole before TLS (the connect never completes) is still ejected as unreachable, by the connect timeout', async (t) => {
  const server = await slowToConnect(Infinity);
  // A healthy peer: silence is inferred evidence, which never takes out the last endpoint taking requests.
  const peer = await slowToConnect(0);
  const { balancer, ejected } = probedBalancer(server.port, 500, [peer.port]);
  try {
    // A wait, not a bound: a connect timeout our own stall explains gives no verdict, and the next probe decides.
    await until(() => ejected.length > 0, { what: 'the ejection' });
    t.deepEqual(ejected, [`127.0.0.2:${server.port} unreachable`]);
    t.is(server.probes(), 0);
  } finally {
    await balancer.close();
    await server.close();
    await peer.close();
  }
});

test('a probe that a GOAWAY refused fails no request queued behind it when its deadline ends it', async (t) => {
  // The probe's stream is refused (a GOAWAY naming the stream before it), undici queues it again
  // for a new connection, which takes 1.5 s; a GET sent meanwhile waits in the same queue. When the
  // probe's deadline aborts it there, undici fails every request queued on the client with the
  // abort's reason unless that is informational (seen in the demo: a create failed so).
  const server = await slowToConnect(1_500, (req, connections) => {
    if (connections !== 1) return false;
    req.stream.session?.goaway(http2.constants.NGHTTP2_NO_ERROR, req.stream.id! - 2);
    return true;
  });
  const pool = new undici.Pool(`https://127.0.0.2:${server.port}`, { allowH2: true, connect: { ca: certs.ca, servername: APISERVER_NAME } });
  const noVerdict = { releaseProbation() {}, connectFailure() {}, serverError() {}, shuttingDown() {}, throttled() {}, success() {} };
  const judge = new OutcomeJudge(noVerdict, { connectTimeout: 1000, pingInterval: 5000 }, systemClock, { maxSince: () => 0 }, { earned() {}, refresh() {} });
  const sender = new ProbeSender(judge, systemClock, () => {}, () => false);
  const request = (path: string) => pool.request({ path, method: 'GET', headers: { host: APISERVER_NAME } });
  try {
    await (await request('/warm')).body.dump();
    const probe = sender.send(new Endpoint({ address: '127.0.0.2', port: server.port }, -Infinity), { path: '/readyz', intervalMs: 1000, timeoutMs: 1000, headers: {} }, () => ({
      origin: new URL(`https://${APISERVER_NAME}:${server.port}`),
      sni: APISERVER_NAME,
      pool,
    }));
    await until(() => pool.stats.connected === 0, { what: 'the GOAWAY' });
    const get = request('/api/v1/pods');
    await probe;
    const res = await get;
    await res.body.dump();
    t.is(res.statusCode, 200);
  } finally {
    await pool.destroy();
    await server.close();
  }
});
