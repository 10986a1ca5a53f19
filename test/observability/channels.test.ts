// Channels are process-wide: every test here is serial so one test's subscribers never see another's traffic.
import diagnostics_channel from 'node:diagnostics_channel';
import https from 'node:https';
import test from 'ava';
import { APISERVER_NAME, certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { BalancingAgent } from '../../src/dispatcher/BalancingAgent.ts';
import { createBalancer, type EjectMessage, type PickMessage, type RetryMessage } from '../../src/index.ts';
import { cluster, get, ORIGIN, type Cluster } from '../helpers/balancer.ts';
import { apfThrottle } from '../helpers/throttle.ts';

const NAMES = ['kube-balancer:pick', 'kube-balancer:retry', 'kube-balancer:eject'] as const;

/** Three servers, the second rejecting everything with an APF 429: its first request is retried and it is ejected. */
async function throttledCluster(): Promise<Cluster & { rejected: () => number }> {
  const { throttled, rejected, handler } = apfThrottle();
  const started = await cluster({ probe: false }, { handler });
  throttled.add(started.servers[1]!);
  return { ...started, rejected };
}

test.serial('pick, retry and eject messages, with their shapes', async (t) => {
  const { servers, balancer, close } = await throttledCluster();
  const messages: Array<[string, unknown]> = [];
  const subscribers = NAMES.map((name) => {
    const fn = (message: unknown): void => void messages.push([name, message]);
    diagnostics_channel.subscribe(name, fn);
    return () => diagnostics_channel.unsubscribe(name, fn);
  });
  try {
    for (let i = 0; i < 6; i++) t.is(await get(balancer), 200);
    t.is(await get(balancer, '/api/v1/pods?watch=true'), 200);
    const picks = messages.filter(([name]) => name === 'kube-balancer:pick').map(([, m]) => m as PickMessage);
    const retries = messages.filter(([name]) => name === 'kube-balancer:retry').map(([, m]) => m as RetryMessage);
    const ejects = messages.filter(([name]) => name === 'kube-balancer:eject').map(([, m]) => m as EjectMessage);
    const throttled = `${servers[1]!.host}:${servers[1]!.port}`;
    t.is(retries.length, 1);
    t.is(picks.length, 7 + 1, 'one pick per attempt');
    for (const pick of picks) {
      t.is(pick.balancer, balancer);
      t.like(pick.request, { method: 'GET', origin: ORIGIN });
      t.is(pick.longRunning, pick.request.path.includes('watch=true'));
      t.true(pick.attempt === 1 || pick.attempt === 2);
    }
    t.deepEqual(
      picks.map((p) => p.request.path),
      [...Array<string>(picks.length - 1).fill('/api/v1/pods'), '/api/v1/pods?watch=true'],
    );
    const [retry] = retries;
    t.like(retry, { balancer, reason: 'throttled', attempt: 2, request: { method: 'GET', path: '/api/v1/pods', origin: ORIGIN } });
    t.is(retry!.from.key, throttled);
    // Each retry's message comes just before the pick of the attempt it announces.
    const retryAt = messages.findIndex(([name]) => name === 'kube-balancer:retry');
    const next = messages[retryAt + 1]!;
    t.is(next[0], 'kube-balancer:pick');
    t.like(next[1], { attempt: 2, endpoint: { key: retry!.to.key } });
    t.is(ejects.length, 1);
    t.like(ejects[0], { balancer, reason: 'throttled', durationMs: 60_000, endpoint: { key: throttled, state: 'ejected' } });
  } finally {
    for (const unsubscribe of subscribers) unsubscribe();
    await close();
  }
});

test.serial('nothing is published while no one subscribes', async (t) => {
  const channels = NAMES.map((name) => diagnostics_channel.channel(name));
  let published = 0;
  // Count publish calls on the channel objects the library holds (the same objects: channels are by name).
  for (const channel of channels) {
    channel.publish = function (this: diagnostics_channel.Channel, message: unknown) {
      published++;
      (Object.getPrototypeOf(this) as diagnostics_channel.Channel).publish.call(this, message);
    };
  }
  const { balancer, rejected, close } = await throttledCluster();
  try {
    t.true(channels.every((c) => !c.hasSubscribers));
    for (let i = 0; i < 6; i++) t.is(await get(balancer), 200);
    t.is(rejected(), 1, 'a retry and an ejection happened');
    t.is(published, 0);
    // The counting works: with a subscriber, the same traffic publishes.
    const fn = (): void => {};
    diagnostics_channel.subscribe('kube-balancer:pick', fn);
    t.is(await get(balancer), 200);
    diagnostics_channel.unsubscribe('kube-balancer:pick', fn);
    t.is(published, 1);
  } finally {
    for (const channel of channels) delete (channel as { publish?: unknown }).publish;
    await close();
  }
});

test.serial('connections of the https.Agent adapter (exec, attach, port-forward) are published too', async (t) => {
  const servers = await startServers(['127.0.0.2', '127.0.0.3']);
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false });
  const agent = new BalancingAgent(balancer);
  const picks: PickMessage[] = [];
  const fn = (message: unknown): void => void picks.push(message as PickMessage);
  diagnostics_channel.subscribe('kube-balancer:pick', fn);
  try {
    const status = await new Promise<number | undefined>((resolve, reject) => {
      https
        .get({ hostname: APISERVER_NAME, port: 6443, path: '/api/v1/namespaces', agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode));
        })
        .on('error', reject);
    });
    t.is(status, 200);
    t.is(picks.length, 1);
    t.like(picks[0], { balancer, attempt: 1, longRunning: false, request: { method: 'GET', path: '', origin: ORIGIN } });
  } finally {
    diagnostics_channel.unsubscribe('kube-balancer:pick', fn);
    agent.destroy();
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});
