// The https.Agent adapter (client-node's WebSockets: exec, attach, port-forward) over real sockets.
import https from 'node:https';
import test from 'ava';
import { APISERVER_NAME, certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { BalancingAgent } from '../../src/dispatcher/BalancingAgent.ts';
import { createBalancer } from '../../src/index.ts';
import { ORIGIN } from '../helpers/balancer.ts';

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
