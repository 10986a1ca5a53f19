// Every rule of the proxy's trust model (SECURITY.md "The proxy"): the attack is sent over a real
// socket, the proxy refuses it, and the simulated apiservers saw nothing of it.
import { mkdtemp, mkdir, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { WebSocket } from 'ws';
import { apiRequests, proxiedCluster, rawExchange, statusOf } from './helpers.ts';

const LIST = '/api/v1/namespaces/default/configmaps';

test('every attack is refused before anything reaches an apiserver; the same requests done right pass', async (t) => {
  const { cluster, proxy, close } = await proxiedCluster({ rejectPaths: ['^/api/.*/pods/.*/attach$'], rejectMethods: ['DELETE'] });
  t.teardown(close);
  cluster.addPod('p');
  const port = proxy.port!;
  const before = apiRequests(cluster);
  const get = (headers: string, target = LIST, method = 'GET'): string => `${method} ${target} HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`;
  const attacks: Array<[string, string, number]> = [
    ['DNS rebinding: a name the proxy does not answer to', get(`Host: evil.example:${port}\r\n`), 403],
    ['DNS rebinding: the right name on another port', get(`Host: localhost:${port + 1}\r\n`), 403],
    ['DNS rebinding: no port (80)', get('Host: localhost\r\n'), 403],
    // Node's HTTP server itself answers 400 (no Status body) to an HTTP/1.1 request without Host.
    ['no Host at all', get(''), 400],
    ['a cross-origin page', get(`Host: localhost:${port}\r\nOrigin: http://evil.example\r\n`), 403],
    ['an opaque origin (sandboxed frame, file:)', get(`Host: localhost:${port}\r\nOrigin: null\r\n`), 403],
    ['the same host name on another port as Origin', get(`Host: localhost:${port}\r\nOrigin: http://localhost:${port + 1}\r\n`), 403],
    ['an https Origin', get(`Host: localhost:${port}\r\nOrigin: https://localhost:${port}\r\n`), 403],
    ['Sec-Fetch-Site: cross-site', get(`Host: localhost:${port}\r\nSec-Fetch-Site: cross-site\r\n`), 403],
    ['CONNECT (a forward proxy)', `CONNECT 10.0.0.1:443 HTTP/1.1\r\nHost: 10.0.0.1:443\r\n\r\n`, 405],
    ['absolute form (a forward proxy)', get(`Host: localhost:${port}\r\n`, `http://10.0.0.1:6443${LIST}`), 400],
    ['a rejected path', get(`Host: localhost:${port}\r\n`, '/api/v1/namespaces/default/pods/p/attach'), 403],
    ['a rejected path, dodged with dot segments', get(`Host: localhost:${port}\r\n`, '/api/v1/namespaces/default/pods/x/../p/attach'), 400],
    ['a rejected path, dodged with an empty segment', get(`Host: localhost:${port}\r\n`, '/api/v1/namespaces/default/pods//p/attach'), 400],
    ['a rejected path, dodged with percent-encoding', get(`Host: localhost:${port}\r\n`, '/api/v1/namespaces/default/pods/p/%61ttach'), 403],
    ['a rejected method', get(`Host: localhost:${port}\r\n`, `${LIST}/x`, 'DELETE'), 403],
  ];
  for (const [what, request, status] of attacks) {
    const answer = await rawExchange(port, request);
    t.is(statusOf(answer), status, what);
    if (status !== 405 && what !== 'no Host at all') t.regex(answer, /"kind":"Status"/, `${what}: a Status body`);
  }
  t.is(apiRequests(cluster), before, 'the apiservers saw none of them');
  t.is(proxy.counters().refused, attacks.length - 1, 'all but the one Node refused itself');

  // The same list done right passes: the proxy's own origin, a same-origin fetch and Host 127.0.0.1.
  for (const headers of [`Host: localhost:${port}\r\nOrigin: http://localhost:${port}\r\n`, `Host: 127.0.0.1:${port}\r\nSec-Fetch-Site: same-origin\r\n`]) {
    t.is(statusOf(await rawExchange(port, get(headers))), 200);
  }
  t.is(apiRequests(cluster), before + 2);
});

test('a cross-site WebSocket to exec (a page hijacking the proxy) is refused, and so is a cross-site port-forward', async (t) => {
  const { cluster, proxy, close } = await proxiedCluster();
  t.teardown(close);
  cluster.addPod('p');
  const before = apiRequests(cluster);
  const path = '/api/v1/namespaces/default/pods/p/exec?command=echo&command=hi&stdout=true';
  const refused = await new Promise<number>((resolve) => {
    const ws = new WebSocket(`${proxy.url!}${path}`.replace('http:', 'ws:'), ['v5.channel.k8s.io'], { origin: 'http://evil.example' });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('open', () => resolve(101));
    ws.on('error', () => {});
  });
  t.is(refused, 403);
  // Port-forward too: kubectl proxy leaves it open to any page.
  const portForward = await rawExchange(
    proxy.port!,
    `GET /api/v1/namespaces/default/pods/p/portforward?ports=80 HTTP/1.1\r\nHost: localhost:${proxy.port}\r\nOrigin: http://evil.example\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n`,
  );
  t.is(statusOf(portForward), 403);
  t.is(apiRequests(cluster), before, 'the apiservers saw neither');
});

test('a non-loopback address needs allowRemote; a unix socket is 0600 in a 0700 directory, and a group-readable directory is refused', async (t) => {
  const { createProxy } = await import('../../src/proxy/createProxy.ts');
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { ApiserverCluster } = await import('../../fixtures/apiserver/index.ts');
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2'] });
  const tmp = await mkdtemp(join(tmpdir(), 'kube-balancer-proxy-'));
  t.teardown(async () => {
    await cluster.close();
    await rm(tmp, { recursive: true, force: true });
  });
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  const balancerOptions = { target: cluster.target };
  await t.throwsAsync(createProxy({ kubeConfig: kc, balancerOptions, address: '0.0.0.0', port: 0 }), { code: 'ERR_INVALID_OPTION', message: /not a loopback address.*allowRemote/ });

  const socketPath = join(tmp, 'run', 'proxy.sock');
  const proxy = await createProxy({ kubeConfig: kc, balancerOptions, unixSocket: socketPath });
  t.is((await stat(socketPath)).mode & 0o777, 0o600);
  t.is((await stat(join(tmp, 'run'))).mode & 0o777, 0o700);
  const status = await new Promise<number>((resolve, reject) => {
    http.get({ socketPath, path: '/version' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
  t.is(status, 200);
  await proxy.close();

  const open = join(tmp, 'open');
  await mkdir(open, { mode: 0o755 });
  await t.throwsAsync(createProxy({ kubeConfig: kc, balancerOptions, unixSocket: join(open, 'proxy.sock') }), { code: 'ERR_INVALID_OPTION', message: /mode 0755/ });
});
