// Upgrades through the balancer as a dispatcher: exec, attach and port-forward over undici's
// WebSocket and undici.upgrade, against simulated apiservers that offer HTTP/2. They must take
// HTTP/1.1, the only protocol kube-apiserver upgrades.
import test from 'ava';
import * as undici from 'undici';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { createBalancer, type Balancer } from '../../src/index.ts';
import { activeResources, leftOver } from '../helpers/leaks.ts';
import { until } from '../helpers/poll.ts';

const POD = '/api/v1/namespaces/default/pods/web';

async function setUp(): Promise<{ cluster: ApiserverCluster; balancer: Balancer; origin: string; close: () => Promise<void> }> {
  const cluster = await ApiserverCluster.start();
  cluster.addPod('web');
  const balancer = createBalancer({ origin: `https://kubernetes.default.svc:${cluster.port}`, target: cluster.target, tls: { ca: certs.ca }, probe: false });
  return {
    cluster,
    balancer,
    origin: `kubernetes.default.svc:${cluster.port}`,
    close: async () => {
      await balancer.close();
      await cluster.close();
    },
  };
}

/** Opens an undici WebSocket through the balancer and collects its binary messages until it closes. */
function open(balancer: Balancer, url: string, headers: Record<string, string>) {
  const ws = new undici.WebSocket(url, { dispatcher: balancer, protocols: ['v5.channel.k8s.io', 'v4.channel.k8s.io'], headers });
  ws.binaryType = 'arraybuffer';
  const messages: Buffer[] = [];
  ws.addEventListener('message', (e) => messages.push(Buffer.from(e.data as ArrayBuffer)));
  const opened = new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve());
    ws.addEventListener('close', (e) => reject(new Error(`closed ${e.code} before opening: ${e.reason}`)));
  });
  const closed = new Promise<number>((resolve) => ws.addEventListener('close', (e) => resolve(e.code)));
  return { ws, messages, opened, closed };
}

const channel = (messages: Buffer[], n: number): string => messages.filter((m) => m[0] === n).map((m) => m.subarray(1).toString()).join('');

test.serial('undici WebSocket with the balancer as dispatcher: exec, attach and port-forward work against apiservers that offer HTTP/2, over HTTP/1.1', async (t) => {
  const baseline = activeResources();
  const { cluster, balancer, origin, close } = await setUp();
  const headers = cluster.authHeaders;
  try {
    const exec = open(balancer, `wss://${origin}${POD}/exec?command=echo&command=hello&stdout=true`, headers);
    await exec.opened;
    t.is(await exec.closed, 1000);
    t.is(channel(exec.messages, 1), 'hello\n');
    t.like(JSON.parse(channel(exec.messages, 3)), { status: 'Success' });

    const attach = open(balancer, `wss://${origin}${POD}/attach?stdin=true&stdout=true`, headers);
    await attach.opened;
    attach.ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('typed\n')]));
    await until(() => channel(attach.messages, 1) === 'typed\n', { what: 'stdin echoed by the attached process' });
    attach.ws.send(Buffer.from([255, 0]));
    t.is(await attach.closed, 1000);

    const forward = open(balancer, `wss://${origin}${POD}/portforward?ports=8080`, headers);
    await forward.opened;
    await until(() => forward.messages.length >= 2, { what: 'the port-forward channel headers' });
    t.deepEqual(forward.messages.slice(0, 2).map((m) => [m[0], m.readUInt16LE(1)]), [[0, 8080], [1, 8080]]);
    forward.ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('ping')]));
    await until(() => forward.messages.length >= 3, { what: 'the echo through the forwarded port' });
    t.is(forward.messages[2]!.subarray(1).toString(), 'ping');

    const upgrades = cluster.instances.flatMap((i) => i.requests.filter((r) => ['exec', 'attach', 'portforward'].includes(r.subresource)));
    t.is(upgrades.length, 3);
    t.true(upgrades.every((r) => r.protocol === 'http/1.1' && r.status === 101));
    await until(() => balancer.endpoints().reduce((n, e) => n + e.streams, 0) === 1, { what: 'only the port-forward stream open' });
    // The apiservers go away under the port-forward. (A WebSocket the undici client closes itself
    // leaves the simulator's server-side socket handle behind; the simulator's own, not the balancer's.)
  } finally {
    await close();
  }
  t.deepEqual(await leftOver(baseline), {}, 'every socket and timer released');
});

test.serial('undici.upgrade with the balancer as dispatcher reaches exec over HTTP/1.1 and gets the socket', async (t) => {
  const baseline = activeResources();
  const { cluster, balancer, origin, close } = await setUp();
  try {
    const { headers, socket } = await undici.upgrade(`https://${origin}${POD}/exec?command=echo&command=hi&stdout=true`, {
      dispatcher: balancer,
      protocol: 'websocket',
      headers: { ...cluster.authHeaders, 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13', 'sec-websocket-protocol': 'v5.channel.k8s.io' },
    });
    t.is(headers['sec-websocket-accept'], 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
    t.is(headers['sec-websocket-protocol'], 'v5.channel.k8s.io');
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
    // The first server frame: FIN + binary, unmasked, short length; channel 1 (stdout), "hi\n".
    await until(() => received.length >= 6, { what: 'the first WebSocket frame' });
    t.deepEqual([received[0], received[1]], [0x82, 4]);
    t.is(received.subarray(2, 6).toString('latin1'), '\x01hi\n');
    socket.destroy();
    const [record] = cluster.instances.flatMap((i) => i.requestsWhere({ subresource: 'exec' }));
    t.like(record, { protocol: 'http/1.1', status: 101 });
  } finally {
    await close();
  }
  t.deepEqual(await leftOver(baseline), {}, 'every socket and timer released');
});
