// Credentials rotated while a probe reads its headers (a kubeconfig's exec plugin, slow on a busy
// machine): the probe goes out on the new connections, and no healthy endpoint is ejected.
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { balancerInternals } from '../../src/dispatcher/internals.ts';
import { createBalancer } from '../../src/index.ts';
import { HOSTS, ORIGIN } from '../helpers/balancer.ts';
import { until } from '../helpers/poll.ts';

test('a rotation while probes read their headers: the probes pass on the new connections, nothing is ejected', async (t) => {
  const servers = await startServers(HOSTS.slice(0, 2));
  let gate: Promise<void> | undefined;
  let waiting = 0;
  const headers = async (): Promise<Record<string, string>> => {
    if (gate) {
      waiting++;
      await gate;
    }
    return { authorization: 'Bearer t' };
  };
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, hedge: false, probe: { intervalMs: 50, headers } });
  const ejected: string[] = [];
  balancer.on('eject', (e, reason) => ejected.push(`${e.key} ${reason}`));
  const getEach = async (): Promise<void> => {
    for (let i = 0; i < servers.length; i++) await (await undici.request(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer })).body.dump();
  };
  try {
    await getEach();
    let release!: () => void;
    gate = new Promise((resolve) => (release = resolve));
    await until(() => waiting >= servers.length, { what: 'a probe of each endpoint to be reading its headers' });
    // New material (one more CA), then a request to each endpoint: the pools made before close.
    t.true(balancerInternals(balancer).replaceTls({ ca: [certs.ca, certs.foreignCa] }));
    await getEach();
    const connections = servers.map((s) => s.connections);
    const probes = servers.map((s) => s.probes);
    gate = undefined;
    release();
    await until(() => servers.every((s, i) => s.probes > probes[i]!), { what: 'the held probes to be answered' });
    t.deepEqual(ejected, [], 'no endpoint ejected');
    t.deepEqual(balancer.endpoints().map((e) => e.state), ['ready', 'ready']);
    t.deepEqual(servers.map((s) => s.connections), connections, 'the probes went out on the connections made with the new material');
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});
