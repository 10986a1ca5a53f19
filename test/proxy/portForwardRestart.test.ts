// kubectl 1.32 port-forward through the proxy to three simulated apiservers while they restart
// (graceful, as kube-apiserver shuts down): a tunnel lives on the apiserver that carries it, so the
// other apiservers' restarts must not touch it, the restart of its own must end it cleanly (kubectl
// told, the local connection closed, nothing hanging), and a port-forward started meanwhile must go to
// a ready apiserver and work at once.
import { randomBytes } from 'node:crypto';
import test from 'ava';
import { until } from '../helpers/poll.ts';
import { echoThrough, openEcho, works } from '../helpers/realClients.ts';
import { carriers, portForwarding } from './portForwards.ts';

/** A graceful restart as the rolling restarts of realClients.test.ts do it. */
const SHUTDOWN = { drainMs: 500, timeoutMs: 2_000 };
/**
 * The carrier's: with `--shutdown-delay-duration` (which most installers set), so that it still
 * accepts connections and upgrades while /readyz fails: a port-forward sent there would be switched,
 * then broken at the exit. The delay is long enough for the proxy's probes (every 2 s) to see it.
 */
const CARRIER_SHUTDOWN = { delayMs: 8_000, drainMs: 500, timeoutMs: 2_000 };

const kubectl = works('kubectl', ['version', '--client']);

for (const [mode, extraEnv] of [
  ['SPDY/3.1 tunnelled in a WebSocket (the default)', {}],
  ['plain SPDY/3.1 (KUBECTL_PORT_FORWARD_WEBSOCKETS=false)', { KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' }],
] as const) {
  test(`kubectl port-forward through the proxy across restarts: ${mode}`, async (t) => {
    if (!kubectl) return t.fail('kubectl is not on the PATH');
    const { cluster, proxy, portForward } = await portForwarding(t, extraEnv);
    const proxyMetrics = async (): Promise<string> => (await fetch(new URL('/.kube-balancer/metrics', proxy.url))).text();
    /** The tunnels the balancer counts as open streams (it places each upgrade where the fewest are). */
    const openStreams = async (): Promise<number> =>
      (await proxyMetrics())
        .split('\n')
        .filter((line) => line.startsWith('kube_balancer_proxy_endpoint_open_streams{'))
        .reduce((sum, line) => sum + Number(line.split(' ')[1]), 0);
    const payload = (): Buffer => randomBytes(100 * 1024);

    const first = await portForward();
    const connection = await openEcho(first.port);
    t.teardown(() => connection.destroy());
    t.true(await connection.exchange(payload()), 'the connection echoes through the tunnel');
    const [carrier] = carriers(cluster);
    t.truthy(carrier);
    t.is(await openStreams(), 1, 'the tunnel counts as an open stream');
    const others = cluster.instances.filter((i) => i !== carrier);

    // The other apiservers restart, one after another: the tunnel is not on them.
    for (const other of others) {
      await other.restart({ shutdown: SHUTDOWN });
      await other.waitForState('running');
      t.true(await connection.exchange(payload()), `the connection still echoes after ${other.name} restarted`);
    }
    t.is(first.forward.exited(), undefined, 'kubectl still runs');
    t.is(first.forward.errors(), '', 'and has reported nothing');
    const again = payload();
    t.true((await echoThrough(first.port, again)).equals(again), 'a new local connection goes through the same tunnel');

    // The carrier restarts. Once the proxy has seen it leave (its /readyz failing), a new port-forward
    // goes to a ready apiserver and works, while the carrier would still have switched it.
    const restart = carrier!.restart({ shutdown: CARRIER_SHUTDOWN });
    await until(async () => (await proxyMetrics()).includes(`kube_balancer_proxy_endpoint_ready{endpoint="${carrier!.name}"} 0`), {
      what: `the proxy to see ${carrier!.name} not ready`,
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    const terminating = carrier!.state === 'terminating';
    const second = await portForward();
    const during = payload();
    t.true((await echoThrough(second.port, during)).equals(during), 'a port-forward started during the shutdown works');
    t.not(carriers(cluster)[1], carrier, 'and is not on the apiserver shutting down');
    if (!terminating) t.log(`(${carrier!.name} was past its shutdown delay already: it refused connections)`);
    t.true(await connection.exchange(payload()), 'the first tunnel works until its apiserver exits');
    t.is(await openStreams(), 2);

    // The carrier exits: the first tunnel ends, and everything on it with it. kubectl 1.32 does not
    // dial again: it prints "error: lost connection to pod" and exits 1 once its connection closes,
    // as it does through kubectl proxy or straight to an apiserver that exits.
    await restart;
    const exitedAt = Date.now();
    await until(() => connection.closed(), { what: 'the local connection on the lost tunnel to close', timeoutMs: 30_000 });
    const lost = await until(() => first.forward.exited(), { what: 'kubectl to notice the lost tunnel', timeoutMs: 30_000 });
    t.log(`kubectl on the restarted apiserver: exit ${lost.code}, seen ${Date.now() - exitedAt} ms after the apiserver was back, stderr ${JSON.stringify(lost.stderr)}`);
    t.is(lost.code, 1);
    t.regex(lost.stderr, /lost connection to pod/);
    t.false(await connection.exchange(Buffer.from('x')), 'the lost connection carries nothing');

    // The proxy is healthy, the second tunnel untouched, and a port-forward started now works at once.
    await carrier!.waitForState('running');
    const health = await fetch(new URL('/.kube-balancer/healthz', proxy.url));
    t.is(health.status, 200, await health.text());
    const after = payload();
    t.true((await echoThrough(second.port, after)).equals(after), 'the tunnel started during the shutdown still works');
    await until(async () => (await openStreams()) === 1, { what: 'the proxy to count the second tunnel alone', timeoutMs: 30_000, intervalMs: 100 });
    const third = await portForward();
    t.true((await echoThrough(third.port, after)).equals(after), 'a port-forward started after the restart works');
    t.not(carriers(cluster)[2], carriers(cluster)[1], 'placed away from the open tunnel (fewest streams)');
    t.is(second.forward.exited(), undefined);
    t.is(proxy.counters().upgrades, 3);
    t.log(`port-forwards on ${carriers(cluster).map((i) => i.name).join(', ')}; the first on ${carrier!.name}`);
  });
}
