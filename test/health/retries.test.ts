// Hedging is off: these tests count attempts exactly, and a hedge on a busy machine would add one.
import diagnostics_channel from 'node:diagnostics_channel';
import type { ServerResponse } from 'node:http';
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { TestServer, startServers, staticTarget, sendJson, type Request, type Response } from '../../fixtures/server/TestServer.ts';
import { BalancerError, createBalancer, type PickMessage } from '../../src/index.ts';
import { ORIGIN } from '../helpers/balancer.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { load } from '../helpers/load.ts';
import { until } from '../helpers/poll.ts';
import { addressOf, pushResolver } from '../helpers/pushResolver.ts';


test('a request timeout moves a GET to another endpoint; a POST surfaces the timeout', async (t) => {
  const servers = await startServers(['127.0.0.2', '127.0.0.3']);
  servers[0]!.latencyMs = 5000;
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false, requestTimeout: 1000 });
  try {
    const results = await load(6, 2, async () => {
      const res = await undici.request(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer });
      await res.body.dump();
      return res.statusCode;
    });
    t.true(results.every((r) => r.value === 200));
    t.is(servers[1]!.requests.length, 6, 'every GET was answered by the healthy endpoint');
    const only = createBalancer({ origin: ORIGIN, target: staticTarget([servers[0]!]), tls: { ca: certs.ca }, probe: false, hedge: false, requestTimeout: 1000 });
    const error = await t.throwsAsync(undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps`, { dispatcher: only, method: 'POST', body: '{}' }));
    t.is((error as Error & { code?: string }).code, 'UND_ERR_HEADERS_TIMEOUT');
    await only.destroy();
  } finally {
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('a caller abort is never retried and says nothing about the endpoint', async (t) => {
  const servers = await startServers(['127.0.0.2', '127.0.0.3']);
  for (const s of servers) s.latencyMs = 60_000;
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false });
  const received = (): number => servers[0]!.requests.length + servers[1]!.requests.length;
  try {
    for (const send of [
      (signal: AbortSignal) => undici.request(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer, signal }),
      (signal: AbortSignal) => undici.fetch(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer, signal }),
    ]) {
      const before = received();
      const controller = new AbortController();
      const pending = send(controller.signal);
      // Abort once the request is at the server, waiting for its answer.
      await until(() => received() === before + 1, { what: 'the request to reach a server' });
      controller.abort();
      const error = await t.throwsAsync(pending);
      t.is(error?.name, 'AbortError');
      await new Promise((r) => setTimeout(r, 100));
      t.is(received(), before + 1, 'not retried');
    }
    t.deepEqual(balancer.endpoints().map((e) => [e.state, e.failures]), [
      ['ready', 0],
      ['ready', 0],
    ]);
  } finally {
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('an abort while a rejected response is held back for a retry ends the request at once', async (t) => {
  const controller = new AbortController();
  // Attempts are counted where they are made, by the balancer's pick channel: a server's count lags
  // behind (a retry sent just before the abort can arrive after it; seen on a loaded CI machine).
  let picks = 0;
  let picksBeforeAbort = -1;
  const onPick = (message: unknown): void => {
    if ((message as PickMessage).balancer === balancer) picks++;
  };
  // The 429's body never ends: the balancer holds the response back, reading it, when the caller
  // aborts. A GET's retry may already have gone at the 429's headers; none may go after the abort.
  const endless429 = (_req: unknown, res: unknown): void => {
    const r = res as ServerResponse;
    r.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' });
    r.write('{"kind":"Status",', () =>
      setTimeout(() => {
        if (picksBeforeAbort === -1) picksBeforeAbort = picks;
        controller.abort();
      }, 50),
    );
  };
  const servers = await startServers(['127.0.0.2', '127.0.0.3'], { handler: endless429 });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false });
  diagnostics_channel.subscribe('kube-balancer:pick', onPick);
  try {
    const error = await t.throwsAsync(undici.request(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer, signal: controller.signal }));
    t.is(error?.name, 'AbortError');
    await new Promise((r) => setTimeout(r, 200));
    t.true(picksBeforeAbort >= 1);
    t.is(picks, picksBeforeAbort, 'no attempt after the abort');
    t.true(servers[0]!.requests.length + servers[1]!.requests.length <= picks);
  } finally {
    diagnostics_channel.unsubscribe('kube-balancer:pick', onPick);
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('recovery: probation request, then slow start, then an even share again (fake clock)', async (t) => {
  const clock = new FakeClock();
  const servers = await startServers(['127.0.0.2', '127.0.0.3', '127.0.0.4']);
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false, clock });
  const events: string[] = [];
  let ejectionMs = 0;
  balancer.on('eject', (e, reason, ms) => {
    events.push(`eject ${e.address} ${reason}`);
    ejectionMs = ms;
  });
  balancer.on('restore', (e, via) => events.push(`restore ${e.address} ${via}`));
  const get = async (): Promise<number> => {
    const res = await undici.request(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer });
    await res.body.dump();
    return res.statusCode;
  };
  try {
    await servers[0]!.crash();
    const results = await load(9, 1, get);
    t.true(results.every((r) => r.value === 200));
    t.deepEqual(events, ['eject 127.0.0.2 connect']);
    await servers[0]!.restart();
    await load(30, 3, get);
    t.is(servers[0]!.requests.length, 0, 'ejected: no traffic while the ejection lasts');
    clock.advance(ejectionMs);
    t.is(balancer.endpoints()[0]?.state, 'probing');
    await get();
    t.is(servers[0]!.requests.length, 1, 'exactly one probation request');
    t.deepEqual(events.at(-1), 'restore 127.0.0.2 probation');
    // Slow start: it begins at 10 % of its weight (0.1 of 2.1 ≈ 5 % of the picks)…
    for (const s of servers) s.requests.length = 0;
    await load(210, 10, get);
    t.true(servers[0]!.requests.length <= 21, `${servers[0]!.requests.length} of 210 right after coming back`);
    // …and is back to its full share once the slow-start window has passed.
    clock.advance(10_000);
    for (const s of servers) s.requests.length = 0;
    await load(300, 10, get);
    t.deepEqual(servers.map((s) => s.requests.length), [100, 100, 100]);
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('a one-shot body larger than maxBufferedBody still goes through, but is not retried after a 429', async (t) => {
  const echoSize = (status: number, headers: Record<string, string> = {}) => (req: Request, res: Response) => {
    let size = 0;
    req.on('data', (c: Buffer) => (size += c.length));
    req.on('end', () => sendJson(res, status, { size }, headers));
  };
  const throttling = await TestServer.start({ host: '127.0.0.2', handler: echoSize(429, { 'retry-after': '1', 'x-kubernetes-pf-flowschema-uid': 'x' }) });
  const healthy = await TestServer.start({ host: '127.0.0.3', handler: echoSize(200) });
  const clock = new FakeClock();
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget([throttling, healthy]), tls: { ca: certs.ca }, probe: false, hedge: false, maxBufferedBody: 1024, clock });
  const post = async (body: string): Promise<number> => {
    const res = await undici.fetch(`${ORIGIN}/api/v1/namespaces/default/configmaps`, { dispatcher: balancer, method: 'POST', body });
    t.deepEqual(await res.json(), { size: body.length });
    return res.status;
  };
  try {
    const big = 'x'.repeat(64 * 1024);
    // Round robin sends one of the two to each endpoint; the throttled one's 429 is not retried.
    t.deepEqual([await post(big), await post(big)].sort(), [200, 429]);
    t.deepEqual([throttling.requests.length, healthy.requests.length], [1, 1]);
    clock.advance(1000); // the throttled endpoint's Retry-After
    // Small bodies are buffered, so the one that meets the 429 is sent again to the other endpoint.
    t.deepEqual([await post('x'.repeat(100)), await post('x'.repeat(100))], [200, 200]);
    t.deepEqual([throttling.requests.length, healthy.requests.length], [2, 3]);
  } finally {
    await balancer.close();
    await Promise.all([throttling.close(), healthy.close()]);
  }
});

test('ERR_ALL_ENDPOINTS_FAILED carries the cause of each endpoint', async (t) => {
  const good = await TestServer.start({ host: '127.0.0.2' });
  await good.crash();
  const foreign = await TestServer.start({ host: '127.0.0.3', tls: certs.foreign });
  const balancer = createBalancer({ origin: ORIGIN, target: `static:///127.0.0.2:${good.port},127.0.0.3:${foreign.port}`, tls: { ca: certs.ca }, probe: false, hedge: false });
  try {
    const error = await t.throwsAsync(undici.request(`${ORIGIN}/api`, { dispatcher: balancer }), { instanceOf: BalancerError });
    t.is(error?.code, 'ERR_ALL_ENDPOINTS_FAILED');
    const byEndpoint = new Map(error?.causes.map((c) => [c.endpoint.split(':')[0], (c.error as Error & { code?: string }).code]));
    t.is(byEndpoint.get('127.0.0.2'), 'ECONNREFUSED');
    t.regex(byEndpoint.get('127.0.0.3') ?? '', /CERT|SIGNED|VERIFY/);
    t.regex(error?.message ?? '', /127\.0\.0\.2:\d+: ECONNREFUSED/);
  } finally {
    await balancer.close();
    await Promise.all([good.close(), foreign.close()]);
  }
});

test("a retry after a 429 goes at once, before the 429's body ends (a resolver change meanwhile is the retry's own business)", async (t) => {
  let first: (() => void) | undefined;
  let reached: (server: TestServer) => void = () => {};
  const arrived = new Promise<TestServer>((resolve) => (reached = resolve));
  // The first request anywhere gets a 429 whose body ends only when the test says so.
  const handler = (_req: Request, res: Response, server: TestServer): void => {
    if (first) return sendJson(res, 200, { server: server.name }, { 'x-served-by': server.name });
    const r = res as ServerResponse;
    r.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' });
    r.write('{"kind":"Status",');
    first = () => r.end('"code":429}');
    reached(server);
  };
  const servers = await startServers(['127.0.0.2', '127.0.0.3', '127.0.0.4'], { handler });
  const [a, b, c] = servers as [TestServer, TestServer, TestServer];
  const resolver = pushResolver([a, b].map(addressOf));
  const balancer = createBalancer({ origin: ORIGIN, target: resolver, tls: { ca: certs.ca }, probe: false, hedge: false });
  try {
    const pending = undici.request(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer });
    const throttling = await arrived;
    const res = await pending;
    await res.body.dump();
    t.is(res.statusCode, 200);
    t.is(res.headers['x-served-by'], (throttling === a ? b : a).name, 'answered while the 429 was still being read');
    resolver.push([throttling, c].map(addressOf));
    first!();
    t.is(c.requests.length, 0);
    t.is(balancer.stats().budget.retriesInFlight, 0);
  } finally {
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
});
