// The https.Agent adapter (client-node's WebSockets: exec, attach, port-forward) over real sockets.
import type { OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import test from 'ava';
import { APISERVER_NAME, certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { BalancingAgent } from '../../src/dispatcher/BalancingAgent.ts';
import { createBalancer } from '../../src/index.ts';
import { ORIGIN } from '../helpers/balancer.ts';
import { until } from '../helpers/poll.ts';

/** A GET through `agent`: its status, or the error the connection failed with. */
function get(agent: https.Agent): Promise<number | Error> {
  return new Promise((resolve) => {
    https
      .get({ hostname: APISERVER_NAME, port: 6443, path: '/api/v1/namespaces', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', resolve);
  });
}

test('a connection asked for after close() fails with ERR_BALANCER_CLOSED, not ERR_NO_ENDPOINTS, and reaches no server', async (t) => {
  const servers = await startServers(['127.0.0.2', '127.0.0.3']);
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false });
  const agent = new BalancingAgent(balancer);
  try {
    t.is(await get(agent), 200);
    await balancer.close();
    const connections = servers.map((s) => s.tcpConnections);
    t.like(await get(agent), { name: 'BalancerError', code: 'ERR_BALANCER_CLOSED', message: 'the balancer is closed' });
    t.deepEqual(
      servers.map((s) => s.tcpConnections),
      connections,
    );
  } finally {
    agent.destroy();
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

/** Opens a connection through `agent` for a request with these headers; resolves, once it is connected (the agent hands the socket over after TLS), to the balancer's open streams. */
function streamsWhileConnected(agent: https.Agent, balancer: { stats(): { endpoints: { streams: number }[] } }, headers: OutgoingHttpHeaders | string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request({ hostname: APISERVER_NAME, port: 6443, path: '/api/v1/namespaces/default/pods/p/portforward', agent, headers });
    req.on('error', () => {});
    // The agent hands the socket over once its TLS handshake is done.
    req.once('socket', () => {
      resolve(balancer.stats().endpoints.reduce((sum, e) => sum + e.streams, 0));
      req.destroy();
    });
    setTimeout(() => reject(new Error('no connection in 10 s')), 10_000).unref();
    req.end();
  });
}

test('an upgrade counts as an open stream whether its headers are an object or a flat list of names and values (the proxy sends a list)', async (t) => {
  const servers = await startServers(['127.0.0.2', '127.0.0.3']);
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false });
  const agent = new BalancingAgent(balancer);
  try {
    t.is(await streamsWhileConnected(agent, balancer, { connection: 'Upgrade', upgrade: 'SPDY/3.1' }), 1);
    await until(() => balancer.stats().endpoints.every((e) => e.streams === 0), { what: 'the stream to end' });
    t.is(await streamsWhileConnected(agent, balancer, ['Connection', 'Upgrade', 'Upgrade', 'SPDY/3.1', 'X-Stream-Protocol-Version', 'portforward.k8s.io']), 1);
    await until(() => balancer.stats().endpoints.every((e) => e.streams === 0), { what: 'the stream to end' });
    t.is(await streamsWhileConnected(agent, balancer, ['Accept', 'application/json']), 0, 'a plain request is no stream');
  } finally {
    agent.destroy();
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});
