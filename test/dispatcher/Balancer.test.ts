import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import * as undici from 'undici';
import { certs, APISERVER_NAME } from '../../fixtures/certs/index.ts';
import { TestServer, startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { BalancerError, createBalancer, type Balancer } from '../../src/index.ts';
import { cluster, HOSTS, ORIGIN } from '../helpers/balancer.ts';
import { activeResources, leftOver } from '../helpers/leaks.ts';
import { addressOf, pushResolver } from '../helpers/pushResolver.ts';

async function withCluster(
  run: (ctx: { servers: TestServer[]; balancer: Balancer }) => Promise<void>,
  options: Partial<Parameters<typeof createBalancer>[0]> = {},
): Promise<void> {
  // No probes: a probe that times out on a busy machine ejects an endpoint and skews exact counts.
  const { servers, balancer, close } = await cluster({ probe: false, ...options });
  try {
    await run({ servers, balancer });
  } finally {
    await close();
  }
}

/** Runs `count` calls of `send`, `concurrency` at a time; unlike helpers/load.ts, a failure rejects. */
async function load(count: number, concurrency: number, send: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await send(next++);
    }),
  );
}

/** Node's built-in fetch (its own undici, legacy handlers); its types come from undici-types. */
const globalFetch = (url: string, dispatcher: Balancer): Promise<Response> => fetch(url, { dispatcher } as unknown as RequestInit);

const shares = (servers: TestServer[]): number[] => servers.map((s) => s.requests.length);

test('300 GETs through undici.request land exactly 100 on each server, over one h2 connection each', async (t) => {
  await withCluster(async ({ servers, balancer }) => {
    await load(300, 10, async (i) => {
      const res = await undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps?i=${i}`, { dispatcher: balancer });
      t.is(res.statusCode, 200);
      await res.body.dump();
    });
    t.deepEqual(shares(servers), [100, 100, 100]);
    for (const server of servers) {
      t.is(server.connections, 1, `${server.name}: one TLS connection for the whole run`);
      t.true(server.requests.every((r) => r.protocol === 'h2'));
      t.true(server.requests.every((r) => r.host === `${APISERVER_NAME}:6443`));
      t.true(server.requests.every((r) => r.sni === APISERVER_NAME));
      t.true(server.requests.every((r) => r.connection === 1));
    }
    t.deepEqual(
      balancer.endpoints().map((e) => [e.requests, e.inFlight, e.failures, e.state]),
      [
        [100, 0, 0, 'ready'],
        [100, 0, 0, 'ready'],
        [100, 0, 0, 'ready'],
      ],
    );
  });
});

test('300 GETs through undici.fetch: 100 each, h2, Host and SNI keep the apiserver name', async (t) => {
  await withCluster(async ({ servers, balancer }) => {
    await load(300, 10, async () => {
      const res = await undici.fetch(`${ORIGIN}/version`, { dispatcher: balancer });
      t.is(res.headers.get('content-type'), 'application/json');
      t.is(((await res.json()) as { path: string }).path, '/version');
    });
    t.deepEqual(shares(servers), [100, 100, 100]);
    for (const server of servers) {
      t.is(server.connections, 1);
      t.true(server.requests.every((r) => r.protocol === 'h2' && r.sni === APISERVER_NAME && r.host === `${APISERVER_NAME}:6443`));
    }
  });
});

test("300 GETs through Node's global fetch (legacy handlers): 100 each, verified by name", async (t) => {
  await withCluster(async ({ servers, balancer }) => {
    await load(300, 10, async () => {
      const res = await globalFetch(`${ORIGIN}/version`, balancer);
      t.is(res.status, 200);
      t.is(res.headers.get('x-served-by')?.startsWith('127.0.0.'), true);
      await res.arrayBuffer();
    });
    t.deepEqual(shares(servers), [100, 100, 100]);
    for (const server of servers) {
      // undici 8 never runs a legacy (v1) handler over HTTP/2.
      t.true(server.requests.every((r) => r.protocol === 'http/1.1' && r.sni === APISERVER_NAME && r.host === `${APISERVER_NAME}:6443`));
    }
  });
});

test('POST bodies, headers and statuses pass through unchanged', async (t) => {
  const server = await TestServer.start({
    host: '127.0.0.2',
    handler: (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        (res as http.ServerResponse).writeHead(201, { 'content-type': 'text/plain', 'x-echo': String(req.headers['x-test']) });
        res.end(Buffer.concat(chunks));
      });
    },
  });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget([server]), tls: { ca: certs.ca } });
  try {
    const res = await undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps`, {
      dispatcher: balancer,
      method: 'POST',
      headers: { 'x-test': 'yes', 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'ConfigMap' }),
    });
    t.is(res.statusCode, 201);
    t.is(res.headers['x-echo'], 'yes');
    t.is(await res.body.text(), '{"kind":"ConfigMap"}');
  } finally {
    await balancer.close();
    await server.close();
  }
});

test('one-shot iterable headers (a generator, a Map iterator) reach every attempt of a retried GET, the caller\'s host with them', async (t) => {
  let answered = 0;
  const seen: { test: unknown; host: unknown }[] = [];
  const servers = await startServers(HOSTS.slice(0, 2), {
    handler: (req, res) => {
      seen.push({ test: req.headers['x-test'], host: req.headers.host ?? req.headers[':authority'] });
      // The first answer of all is a shutting-down apiserver's 429: the GET is retried on the other endpoint.
      if (answered++ === 0) {
        (res as http.ServerResponse).writeHead(429, { 'content-type': 'application/json', 'retry-after': '5' });
        res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","message":"The apiserver is shutting down, please try again later.","reason":"TooManyRequests","code":429}');
        return;
      }
      (res as http.ServerResponse).writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    },
  });
  function* generated(): Generator<[string, string]> {
    yield ['x-test', 'yes'];
    yield ['host', `${APISERVER_NAME}:6443`];
  }
  try {
    for (const headers of [generated(), new Map([['x-test', 'yes'], ['host', `${APISERVER_NAME}:6443`]]).entries()]) {
      answered = 0;
      seen.length = 0;
      // A balancer each: the 429 keeps its endpoint out for Retry-After's 5 s.
      const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false });
      try {
        const res = await undici.request(`${ORIGIN}/api/v1/namespaces/default/pods/a`, { dispatcher: balancer, headers });
        t.is(res.statusCode, 200);
        await res.body.dump();
      } finally {
        await balancer.close();
      }
      t.deepEqual(seen, [
        { test: 'yes', host: `${APISERVER_NAME}:6443` },
        { test: 'yes', host: `${APISERVER_NAME}:6443` },
      ]);
    }
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('a server whose certificate comes from a foreign CA: TLS error, and it sees no HTTP request', async (t) => {
  const server = await TestServer.start({ host: '127.0.0.2', tls: certs.foreign });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget([server]), tls: { ca: certs.ca } });
  try {
    const error = await t.throwsAsync(undici.request(`${ORIGIN}/api`, { dispatcher: balancer }), { instanceOf: BalancerError });
    t.is(error?.code, 'ERR_ALL_ENDPOINTS_FAILED');
    t.regex(String((error?.causes[0]?.error as Error & { code?: string }).code), /UNABLE_TO_VERIFY|SELF_SIGNED|CERT/);
    t.is(server.requests.length, 0);
    t.is(balancer.endpoints()[0]?.failures, 1);
  } finally {
    await balancer.close();
    await server.close();
  }
});

test('a certificate from the right CA but for another name is rejected (the dialled IP never decides)', async (t) => {
  const server = await TestServer.start({ host: '127.0.0.2', tls: certs.wrongName });
  const balancer = createBalancer({ target: staticTarget([server]), origin: `https://127.0.0.2:${server.port}`, tls: { ca: certs.ca } });
  try {
    const error = await t.throwsAsync(undici.request(`https://127.0.0.2:${server.port}/api`, { dispatcher: balancer }), { instanceOf: BalancerError });
    t.is((error?.cause as Error & { code?: string }).code, 'ERR_TLS_CERT_ALTNAME_INVALID');
    t.is(server.requests.length, 0);
  } finally {
    await balancer.close();
    await server.close();
  }
});

test('an IP origin is verified against that IP, not against the endpoint, and sends no SNI', async (t) => {
  // 127.0.0.1 is in the certificate; the endpoints are 127.0.0.2-4.
  await withCluster(async ({ servers, balancer }) => {
    for (let i = 0; i < 3; i++) {
      const res = await undici.request('https://127.0.0.1:443/version', { dispatcher: balancer });
      await res.body.dump();
    }
    t.deepEqual(shares(servers), [1, 1, 1]);
    t.true(servers.every((s) => s.requests[0]?.sni === false && s.requests[0]?.host === '127.0.0.1'));
  }, { origin: 'https://127.0.0.1:443' });
  // 10.96.0.99 is not in the certificate, although every endpoint's own IP is.
  await withCluster(async ({ servers, balancer }) => {
    const error = await t.throwsAsync(undici.request('https://10.96.0.99/version', { dispatcher: balancer }), { instanceOf: BalancerError });
    t.is(error?.code, 'ERR_ALL_ENDPOINTS_FAILED');
    // Every endpoint tried failed verification.
    t.true((error?.causes.length ?? 0) >= 1);
    t.true(error?.causes.every((c) => (c.error as Error & { code?: string }).code === 'ERR_TLS_CERT_ALTNAME_INVALID'));
    t.deepEqual(shares(servers), [0, 0, 0]);
  }, { origin: 'https://10.96.0.99' });
});

test('tls.servername decides verification and SNI, whatever the origin says', async (t) => {
  await withCluster(
    async ({ servers, balancer }) => {
      const res = await undici.request('https://10.96.0.1/version', { dispatcher: balancer });
      await res.body.dump();
      const seen = servers.flatMap((s) => s.requests);
      t.is(seen.length, 1);
      t.is(seen[0]?.sni, 'kubernetes');
      t.is(seen[0]?.host, '10.96.0.1');
    },
    { origin: 'https://10.96.0.1', tls: { ca: certs.ca, servername: 'kubernetes' } },
  );
});

test('rejectUnauthorized: false, given explicitly, accepts a foreign certificate', async (t) => {
  const server = await TestServer.start({ host: '127.0.0.2', tls: certs.foreign });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget([server]), tls: { rejectUnauthorized: false } });
  try {
    const res = await undici.request(`${ORIGIN}/version`, { dispatcher: balancer });
    t.is(res.statusCode, 200);
    await res.body.dump();
  } finally {
    await balancer.close();
    await server.close();
  }
});

test('requests to another origin than options.origin bypass the balancer', async (t) => {
  const plain = http.createServer((_req, res) => res.end('direct'));
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.5', resolve));
  const port = (plain.address() as AddressInfo).port;
  await withCluster(
    async ({ servers, balancer }) => {
      const direct = await undici.request(`http://127.0.0.5:${port}/`, { dispatcher: balancer });
      t.is(await direct.body.text(), 'direct');
      const viaFetch = await globalFetch(`http://127.0.0.5:${port}/`, balancer);
      t.is(await viaFetch.text(), 'direct');
      const balanced = await undici.request(`${ORIGIN}/version`, { dispatcher: balancer });
      await balanced.body.dump();
      t.deepEqual(shares(servers).reduce((a, b) => a + b), 1);
      t.deepEqual(
        balancer.endpoints().map((e) => e.requests).reduce((a, b) => a + b),
        1,
      );
    },
    { origin: ORIGIN },
  );
  plain.close();
});

test('IPv6 endpoints work', async (t) => {
  const server = await TestServer.start({ host: '::1' });
  const balancer = createBalancer({ origin: ORIGIN, target: `static:///[::1]:${server.port}`, tls: { ca: certs.ca } });
  try {
    const res = await undici.request(`${ORIGIN}/version`, { dispatcher: balancer });
    t.is(res.statusCode, 200);
    await res.body.dump();
    t.is(server.requests[0]?.host, `${APISERVER_NAME}:6443`);
    t.deepEqual(balancer.endpoints().map((e) => e.address), ['::1']);
  } finally {
    await balancer.close();
    await server.close();
  }
});

test('balancer.compose() runs interceptors in front of the balancer', async (t) => {
  await withCluster(async ({ servers, balancer }) => {
    const seen: string[] = [];
    const composed = balancer.compose((dispatch) => (opts, handler) => {
      seen.push(opts.path);
      return dispatch(opts, handler);
    });
    for (let i = 0; i < 3; i++) {
      const res = await undici.request(`${ORIGIN}/c${i}`, { dispatcher: composed });
      await res.body.dump();
    }
    t.deepEqual(seen, ['/c0', '/c1', '/c2']);
    t.deepEqual(shares(servers), [1, 1, 1]);
  });
});

test('ready() resolves with the first endpoint set, and the endpoints event reports it', async (t) => {
  const servers = await startServers(['127.0.0.2']);
  const resolver = pushResolver();
  const balancer = createBalancer({ origin: ORIGIN, target: resolver, tls: { ca: certs.ca } });
  const events: number[] = [];
  balancer.on('endpoints', (list) => events.push(list.length));
  let ready = false;
  const readyPromise = balancer.ready().then(() => (ready = true));
  // A request sent before any endpoint is known waits for the first set.
  const pending = undici.request(`${ORIGIN}/early`, { dispatcher: balancer });
  await new Promise((r) => setTimeout(r, 20));
  t.false(ready);
  resolver.push([addressOf(servers[0]!)]);
  await readyPromise;
  const res = await pending;
  t.is(res.statusCode, 200);
  await res.body.dump();
  t.deepEqual(events, [1]);
  await balancer.close();
  await Promise.all(servers.map((s) => s.close()));
});

test('a resolver failure before any endpoint fails waiting requests with ERR_NO_ENDPOINTS', async (t) => {
  const balancer = createBalancer({ origin: ORIGIN,
    target: {
      start(listener) {
        setTimeout(() => listener.error(new Error('no such host')), 10);
      },
    },
  });
  const error = await t.throwsAsync(undici.request(`${ORIGIN}/x`, { dispatcher: balancer }));
  t.true(error instanceof BalancerError);
  t.is((error as BalancerError).code, 'ERR_NO_ENDPOINTS');
  t.regex(error.message, /no such host/);
  await t.throwsAsync(balancer.ready(), { instanceOf: BalancerError });
  await balancer.close();
});

test('failures are reported through the handler, never thrown, in both handler styles', async (t) => {
  const balancer = createBalancer({ origin: ORIGIN, target: 'static:///127.0.0.2:1' });
  await balancer.close();
  const v2 = await new Promise<Error>((resolve) => {
    const returned = balancer.dispatch(
      { origin: ORIGIN, path: '/', method: 'GET' },
      { onResponseError: (_c, err) => resolve(err), onRequestStart() {}, onResponseStart() {}, onResponseData() {}, onResponseEnd() {} },
    );
    t.true(returned);
  });
  t.is((v2 as BalancerError).code, 'ERR_BALANCER_CLOSED');
  const v1 = await new Promise<Error>((resolve) => {
    balancer.dispatch({ origin: ORIGIN, path: '/', method: 'GET' }, {
      onConnect() {},
      onHeaders: () => true,
      onData: () => true,
      onComplete() {},
      onError: (err: Error) => resolve(err),
    } as never);
  });
  t.is((v1 as BalancerError).code, 'ERR_BALANCER_CLOSED');
  const noOrigin = await new Promise<Error>((resolve) => {
    const b2 = createBalancer({ origin: ORIGIN, target: 'static:///127.0.0.2:1' });
    b2.dispatch({ path: '/', method: 'GET' }, { onRequestStart() {}, onResponseError: (_c, err) => resolve(err) });
    void b2.close();
  });
  t.is((noOrigin as BalancerError).code, 'ERR_INVALID_OPTION');
});

test('close() and destroy() work with promises and callbacks', async (t) => {
  const a = createBalancer({ origin: ORIGIN, target: 'static:///127.0.0.2:1' });
  await new Promise<void>((resolve) => a.close(resolve));
  const b = createBalancer({ origin: ORIGIN, target: 'static:///127.0.0.2:1' });
  await new Promise<void>((resolve) => b.destroy(resolve));
  const c = createBalancer({ origin: ORIGIN, target: 'static:///127.0.0.2:1' });
  await new Promise<void>((resolve) => c.destroy(new Error('bye'), resolve));
  const d = createBalancer({ origin: ORIGIN, target: 'static:///127.0.0.2:1' });
  await d.destroy();
  t.pass();
});

// Serial: tests in a file run concurrently, and their sockets would count as leftovers here.
test.serial('after close(), nothing the balancer opened is left (sockets, timers)', async (t) => {
  const servers = await startServers(HOSTS);
  const baseline = activeResources();
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca } });
  await load(30, 5, async () => {
    const res = await undici.request(`${ORIGIN}/version`, { dispatcher: balancer });
    await res.body.dump();
  });
  const viaFetch = await globalFetch(`${ORIGIN}/version`, balancer);
  await viaFetch.text();
  t.true(process.getActiveResourcesInfo().length > [...baseline.values()].reduce((a, b) => a + b, 0));
  await balancer.close();
  t.deepEqual(await leftOver(baseline), {});
  await Promise.all(servers.map((s) => s.close()));
});
