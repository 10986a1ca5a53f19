// The proxy over real sockets in front of three simulated apiservers: spread, credentials, streaming
// watches, exec upgrades, half-close, the 503 Status, the admin endpoints.
import https from 'node:https';
import net from 'node:net';
import test from 'ava';
import * as undici from 'undici';
import { WebSocket } from 'ws';
import { certs } from '../../fixtures/certs/index.ts';
import { createBalancer } from '../../src/dispatcher/Balancer.ts';
import { createProxy } from '../../src/proxy/createProxy.ts';
import { until } from '../helpers/poll.ts';
import { rawWatch } from '../helpers/rawWatch.ts';
import { proxiedCluster } from './helpers.ts';

const LIST = '/api/v1/namespaces/default/configmaps';
// The balancers built here allow 10 s to connect (default 1 s): on a loaded 2-core machine a handshake has taken longer.

test('every request goes to the next apiserver, with the kubeconfig token added and the client token replaced', async (t) => {
  const { cluster, proxy, close } = await proxiedCluster();
  t.teardown(close);
  for (let i = 0; i < 60; i++) {
    const res = await undici.request(`${proxy.url!}${LIST}`, { headers: { authorization: 'Bearer not-the-proxy-one' } });
    t.is(res.statusCode, 200);
    await res.body.json();
  }
  const lists = cluster.instances.map((i) => i.requestsWhere({ verb: 'list', resource: 'configmaps' }));
  const counts = lists.map((l) => l.length);
  // An exploration copy may add one to an endpoint (the balancer's own, not the proxy's).
  // Load-aware weights follow each apiserver's latency, which a loaded machine moves: even within 1.25.
  t.true(Math.max(...counts) / Math.min(...counts) <= 1.25, `spread evenly over the three: ${counts.join('/')}`);
  t.true(counts.reduce((a, b) => a + b) >= 60);
  t.true(lists.flat().every((r) => r.authorization === `Bearer ${cluster.token}` && r.user === 'sim-admin'));
  t.true(lists.flat().every((r) => r.protocol === 'h2'), 'the proxy speaks HTTP/2 upstream');
});

test('a kubeconfig with a client certificate: the proxy presents it to every apiserver', async (t) => {
  const { cluster, proxy, close } = await proxiedCluster({}, undefined, { user: 'client-cert' });
  t.teardown(close);
  for (let i = 0; i < 6; i++) {
    const res = await undici.request(`${proxy.url!}${LIST}`);
    t.is(res.statusCode, 200);
    await res.body.dump();
  }
  const lists = cluster.instances.flatMap((i) => i.requestsWhere({ verb: 'list', resource: 'configmaps' }));
  t.true(lists.length >= 6);
  t.true(lists.every((r) => r.authMethod === 'client-certificate' && r.authorization === undefined));
  t.true(cluster.instances.every((i) => i.requestsWhere({ verb: 'list', authMethod: 'client-certificate' }).length > 0), 'on all three');
});

test('a watch reaches the client event by event, with no idle timeout, and a create through the proxy shows in it', async (t) => {
  const { proxy, close } = await proxiedCluster();
  t.teardown(close);
  const watch = await rawWatch(`${proxy.url!}${LIST}?watch=true`, new undici.Agent({ bodyTimeout: 0 }), {});
  t.teardown(() => watch.close());
  t.is(watch.res.statusCode, 200);
  t.is(watch.res.headers['transfer-encoding'], 'chunked');
  const created = await undici.request(`${proxy.url!}${LIST}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'first' }, data: { a: '1' } }),
  });
  t.is(created.statusCode, 201);
  await created.body.dump();
  await until(() => watch.names().includes('ADDED first'), { what: 'the ADDED event through the proxy' });
  t.false(watch.ended(), 'the watch stays open');
});

test('a client that closes its watch ends the upstream watch too', async (t) => {
  const { cluster, proxy, close } = await proxiedCluster();
  t.teardown(close);
  const open = (): number => cluster.instances.reduce((sum, i) => sum + i.counters.openWatches, 0);
  const agent = new undici.Agent({ bodyTimeout: 0 });
  t.teardown(() => agent.close());
  const watch = await rawWatch(`${proxy.url!}${LIST}?watch=true`, agent, {});
  t.is(watch.res.statusCode, 200);
  await until(() => open() === 1, { what: 'the watch open on an apiserver' });
  watch.close();
  await until(() => open() === 0, { timeoutMs: 5_000, what: 'the upstream watch ended with the client' });
  t.pass();
});

test('a watch on an apiserver that shuts down ends cleanly through the proxy, so the client watches again elsewhere', async (t) => {
  const { cluster, proxy, close } = await proxiedCluster();
  t.teardown(close);
  const watch = await rawWatch(`${proxy.url!}${LIST}?watch=true`, new undici.Agent({ bodyTimeout: 0 }), {});
  t.teardown(() => watch.close());
  const serving = await until(() => cluster.instances.find((i) => i.counters.openWatches === 1), { what: 'the watch to open' });
  void serving.shutdown({ drainMs: 200, timeoutMs: 1_000 });
  await until(() => watch.ended(), { what: 'the watch to end' });
  t.false(watch.broken(), 'a complete response, not a broken connection');
  const again = await undici.request(`${proxy.url!}${LIST}`);
  t.is(again.statusCode, 200);
  await again.body.dump();
});

test('exec over a WebSocket (v5.channel.k8s.io) from the proxy own origin: stdout and the final Status come back', async (t) => {
  const { cluster, proxy, close } = await proxiedCluster();
  t.teardown(close);
  cluster.addPod('p');
  const url = `${proxy.url!.replace('http:', 'ws:')}/api/v1/namespaces/default/pods/p/exec?command=echo&command=hello&stdout=true&stderr=true`;
  // python's kubernetes client sends its own Origin, which is the proxy's.
  const ws = new WebSocket(url, ['v5.channel.k8s.io', 'v4.channel.k8s.io'], { origin: proxy.url! });
  const frames: Buffer[] = [];
  ws.on('message', (data: Buffer) => frames.push(data));
  await new Promise<void>((resolve, reject) => {
    ws.on('close', () => resolve());
    ws.on('error', reject);
  });
  t.is(ws.protocol, 'v5.channel.k8s.io');
  const stdout = frames.filter((f) => f[0] === 1).map((f) => f.subarray(1).toString()).join('');
  t.is(stdout, 'hello\n');
  t.regex(frames.find((f) => f[0] === 3)!.subarray(1).toString(), /"status":"Success"/);
  const execs = cluster.instances.flatMap((i) => i.requestsWhere({ subresource: 'exec' }));
  t.is(execs.length, 1);
  t.is(execs[0]!.status, 101);
  t.is(execs[0]!.protocol, 'http/1.1');
  t.is(execs[0]!.authorization, `Bearer ${cluster.token}`);
});

test('an upgrade the apiserver answers with an error comes back as it was sent (kubectl falls back to SPDY on it)', async (t) => {
  const { proxy, close } = await proxiedCluster();
  t.teardown(close);
  const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const ws = new WebSocket(`${proxy.url!.replace('http:', 'ws:')}/api/v1/namespaces/default/pods/missing/exec?command=true`, ['v5.channel.k8s.io']);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on('error', reject);
  });
  t.is(answer.status, 404);
  t.regex(answer.body, /"reason":"NotFound"/);
});

test('a half-closed upgrade: the client ends its side, the server still answers through the proxy', async (t) => {
  // A TLS server of our own that upgrades to a plain byte stream and answers once the client half-closes.
  const server = https.createServer({ cert: certs.apiserver.cert, key: certs.apiserver.key });
  server.on('upgrade', (_req, socket: net.Socket) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test-echo\r\n\r\n');
    let got = '';
    socket.on('data', (c: Buffer) => (got += c.toString()));
    socket.on('end', () => socket.end(`got: ${got}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const balancer = createBalancer({ target: `static:///127.0.0.2:${port}`, origin: `https://127.0.0.2:${port}`, tls: { ca: certs.ca }, probe: false, connectTimeout: 10_000 });
  const proxy = await createProxy({ balancer, server: `https://127.0.0.2:${port}`, port: 0 });
  t.teardown(async () => {
    await proxy.close();
    await balancer.close();
    server.closeAllConnections();
    server.close();
  });
  const reply = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(proxy.port!, '127.0.0.1', () => {
      socket.write(`GET /stream HTTP/1.1\r\nHost: 127.0.0.1:${proxy.port}\r\nConnection: Upgrade\r\nUpgrade: test-echo\r\n\r\n`);
    });
    let all = '';
    socket.on('data', (c: Buffer) => {
      all += c.toString();
      if (all.includes('\r\n\r\n') && !all.includes('hello')) {
        socket.write('hello');
        socket.end();
      }
    });
    socket.on('end', () => resolve(all));
    socket.on('error', reject);
  });
  t.regex(reply, /^HTTP\/1\.1 101/);
  t.true(reply.endsWith('got: hello'), reply);
});

test('no apiserver able to serve: 503, Retry-After and a Kubernetes Status; healthz says so too', async (t) => {
  const { cluster, proxy, close } = await proxiedCluster({}, ['127.0.0.2']);
  t.teardown(close);
  const healthy = await undici.request(`${proxy.url!}/.kube-balancer/healthz`);
  t.is(healthy.statusCode, 200);
  await healthy.body.dump();
  await cluster.instances[0]!.crash();
  const res = await undici.request(`${proxy.url!}${LIST}`);
  t.is(res.statusCode, 503);
  t.is(res.headers['retry-after'], '1');
  t.is(res.headers['content-type'], 'application/json');
  const status = (await res.body.json()) as { kind: string; code: number; reason: string; status: string };
  t.like(status, { kind: 'Status', code: 503, reason: 'ServiceUnavailable', status: 'Failure' });
  await until(async () => {
    const health = await undici.request(`${proxy.url!}/.kube-balancer/healthz`);
    await health.body.dump();
    return health.statusCode === 503;
  }, { what: 'healthz to fail' });
  const metrics = await undici.request(`${proxy.url!}/.kube-balancer/metrics`);
  const text = await metrics.body.text();
  t.regex(text, /^kube_balancer_proxy_unavailable_total 1$/m);
  t.regex(text, /^kube_balancer_proxy_endpoint_ready\{endpoint="127\.0\.0\.2:\d+"\} 0$/m);
});

test('a client that breaks off in the middle of its request body leaves the proxy serving', async (t) => {
  const { cluster, proxy, close } = await proxiedCluster({}, ['127.0.0.2']);
  t.teardown(close);
  const before = cluster.instances[0]!.requestsWhere({ verb: 'create' }).length;
  await new Promise<void>((resolve) => {
    const socket = net.connect(proxy.port!, '127.0.0.1', () => {
      socket.write(`POST ${LIST} HTTP/1.1\r\nHost: 127.0.0.1:${proxy.port}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"metadata":`);
      setTimeout(() => socket.resetAndDestroy(), 100);
    });
    socket.on('close', () => resolve());
    socket.on('error', () => {});
  });
  const res = await undici.request(`${proxy.url!}${LIST}`);
  t.is(res.statusCode, 200);
  await res.body.dump();
  t.is(cluster.instances[0]!.requestsWhere({ verb: 'create' }).length, before, 'the half body was not sent');
});

test('a write whose connection broke after it was sent is a 502 without Retry-After (it may have been applied); a read is a 503 to retry', async (t) => {
  // An apiserver of our own that reads each request whole and then closes the connection unanswered.
  const server = https.createServer({ cert: certs.apiserver.cert, key: certs.apiserver.key }, (req) => {
    req.resume();
    req.on('end', () => req.socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const balancer = createBalancer({ target: `static:///127.0.0.2:${port}`, origin: `https://127.0.0.2:${port}`, tls: { ca: certs.ca }, probe: false, connectTimeout: 10_000 });
  const proxy = await createProxy({ balancer, server: `https://127.0.0.2:${port}`, port: 0 });
  t.teardown(async () => {
    await proxy.close();
    await balancer.destroy();
    server.closeAllConnections();
    server.close();
  });
  const post = await undici.request(`${proxy.url!}${LIST}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.is(post.statusCode, 502);
  t.is(post.headers['retry-after'], undefined);
  t.like(await post.body.json(), { kind: 'Status', code: 502 });
  const get = await undici.request(`${proxy.url!}${LIST}`);
  t.is(get.statusCode, 503);
  t.is(get.headers['retry-after'], '1');
  await get.body.dump();
});

test('an upgrade an apiserver refuses with 503 before switching (shutting down) goes to the next one', async (t) => {
  // Two apiservers of our own on one port: 127.0.0.2 refuses every upgrade with 503, 127.0.0.3 switches.
  const servers = ['127.0.0.2', '127.0.0.3'].map((host) => {
    const server = https.createServer({ cert: certs.apiserver.cert, key: certs.apiserver.key });
    server.on('upgrade', (_req, socket: net.Socket) => {
      if (host === '127.0.0.2') socket.end('HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      else socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\nswitched');
    });
    return { host, server };
  });
  await new Promise<void>((resolve) => servers[0]!.server.listen(0, '127.0.0.2', resolve));
  const port = (servers[0]!.server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => servers[1]!.server.listen(port, '127.0.0.3', resolve));
  const balancer = createBalancer({ target: `static:///127.0.0.2:${port},127.0.0.3:${port}`, origin: `https://127.0.0.2:${port}`, tls: { ca: certs.ca }, probe: false, connectTimeout: 10_000 });
  const proxy = await createProxy({ balancer, server: `https://127.0.0.2:${port}`, port: 0 });
  t.teardown(async () => {
    await proxy.close();
    await balancer.destroy();
    for (const { server } of servers) {
      server.closeAllConnections();
      server.close();
    }
  });
  for (let i = 0; i < 4; i++) {
    const answer = await rawExchangeUntilClose(proxy.port!, `GET /x HTTP/1.1\r\nHost: 127.0.0.1:${proxy.port}\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n`);
    t.regex(answer, /^HTTP\/1\.1 101[^]*switched$/, `upgrade ${i}`);
  }
});

function rawExchangeUntilClose(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let all = '';
    socket.on('data', (c: Buffer) => (all += c.toString()));
    socket.on('end', () => resolve(all));
    socket.on('error', reject);
  });
}
