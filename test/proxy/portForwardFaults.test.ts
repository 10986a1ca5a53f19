// kubectl 1.32 port-forward through the proxy when the apiserver carrying the tunnel is black-holed,
// then when another's crashes: never worse than one connection. A tunnel lives on one apiserver: a
// black hole only pauses it (TCP keeps the bytes; the proxy's verdicts never destroy a connection),
// a crash ends it (kubectl told, the local connection closed), and the other tunnels, the proxy and
// new port-forwards carry on.
import { randomBytes } from 'node:crypto';
import test from 'ava';
import { until } from '../helpers/poll.ts';
import { echoThrough, openEcho, works } from '../helpers/realClients.ts';
import { carriers, portForwarding } from './portForwards.ts';

const kubectl = works('kubectl', ['version', '--client']);

test('kubectl port-forward through the proxy: its apiserver black-holed, the tunnel waits and carries on; another crashed, its tunnel ends and the rest carry on', async (t) => {
  if (!kubectl) return t.fail('kubectl is not on the PATH');
  const { cluster, proxy, portForward } = await portForwarding(t);
  const payload = (): Buffer => randomBytes(64 * 1024);

  const first = await portForward();
  const connection = await openEcho(first.port);
  t.teardown(() => connection.destroy());
  t.true(await connection.exchange(payload()), 'the connection echoes through the tunnel');
  const [holeCarrier] = carriers(cluster);

  // A black hole on the tunnel's apiserver: the bytes sent meanwhile wait, and a port-forward
  // started meanwhile goes elsewhere and works.
  holeCarrier!.setModes({ blackHole: true });
  const waiting = connection.exchange(payload());
  const second = await portForward();
  const during = payload();
  t.true((await echoThrough(second.port, during)).equals(during), 'a port-forward started during the black hole works');
  const crashCarrier = carriers(cluster)[1]!;
  t.not(crashCarrier, holeCarrier, 'and is not on the black-holed apiserver');
  // Until the proxy has taken the apiserver out: its verdict must not touch the tunnel.
  await until(async () => (await (await fetch(new URL('/.kube-balancer/metrics', proxy.url))).text()).includes(`kube_balancer_proxy_endpoint_ready{endpoint="${holeCarrier!.name}"} 0`), {
    what: `the proxy to take ${holeCarrier!.name} out`,
    timeoutMs: 30_000,
    intervalMs: 100,
  });
  holeCarrier!.setModes({ blackHole: false });
  t.true(await waiting, 'the tunnel carries on once the black hole lifts, as one connection does');
  t.is(first.forward.exited(), undefined, 'kubectl still runs');

  // The second tunnel's apiserver crashes: that tunnel ends, kubectl says so, the first carries on.
  const second2 = await openEcho(second.port);
  t.teardown(() => second2.destroy());
  t.true(await second2.exchange(payload()));
  await crashCarrier.crash();
  await until(() => second2.closed(), { what: 'the local connection on the crashed tunnel to close', timeoutMs: 30_000 });
  const lost = await until(() => second.forward.exited(), { what: 'kubectl to notice the crashed tunnel', timeoutMs: 30_000 });
  t.is(lost.code, 1);
  t.regex(lost.stderr, /lost connection to pod/);
  t.true(await connection.exchange(payload()), 'the first tunnel still echoes');
  const health = await fetch(new URL('/.kube-balancer/healthz', proxy.url));
  t.is(health.status, 200, await health.text());
  const third = await portForward();
  const after = payload();
  t.true((await echoThrough(third.port, after)).equals(after), 'a port-forward started after the crash works');
  t.not(carriers(cluster)[2], crashCarrier, 'not on the crashed apiserver');
  t.log(`tunnels on ${carriers(cluster).map((i) => i.name).join(', ')}; black-holed ${holeCarrier!.name}, crashed ${crashCarrier.name}; kubectl: ${JSON.stringify(lost.stderr.trim())}`);
});
