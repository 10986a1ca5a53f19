import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { sendJson, startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { BalancerError, createBalancer } from '../../src/index.ts';
import { cluster, get, ORIGIN } from '../helpers/balancer.ts';
import { firstPicks } from '../helpers/firstPicks.ts';
import { load } from '../helpers/load.ts';
import { until } from '../helpers/poll.ts';
import { watchStalls } from '../helpers/stalls.ts';

const codeOf = (error: Error | undefined): string => {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : String(error?.message);
};

test('crash 1 of 3 during 2,000 GETs at concurrency 20: no request fails', async (t) => {
  const { servers, balancer, close } = await cluster();
  const ejected: string[] = [];
  balancer.on('eject', (e, reason) => ejected.push(`${e.address}:${reason}`));
  try {
    const results = await load(2000, 20, async (i) => {
      if (i === 400) await servers[1]!.crash();
      return get(balancer);
    });
    t.deepEqual(results.filter((r) => r.error).map((r) => codeOf(r.error)), []);
    t.true(results.every((r) => r.value === 200));
    t.true(ejected.some((e) => e.startsWith('127.0.0.3:')), `ejections: ${ejected.join(', ')}`);
    t.true(servers[0]!.requests.length > 700 && servers[2]!.requests.length > 700);
  } finally {
    await close();
  }
});

test('crash 1 of 3 during POSTs: nothing unsent fails, nothing is created twice, lost POSTs surface', async (t) => {
  const received = new Map<string, number>();
  const { servers, balancer, close } = await cluster(
    {},
    {
      handler: (req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          received.set(body, (received.get(body) ?? 0) + 1);
          sendJson(res, 201, body);
        });
      },
    },
  );
  const crashed = servers[1]!;
  // Where each POST (its path names it) was first sent, and whether that was before the balancer
  // saw the crashed server's connection close: until then a POST picked there is written to a
  // connection that is already gone, and is lost. On a busy machine the close is read late and
  // more than the 20 in flight at the crash were caught so (seen: 25).
  let crashing = false;
  let closeSeen = false;
  const { picks: firstTo, stop: stopPicks } = firstPicks(balancer, (m) => ({ key: m.endpoint.key, beforeClose: !closeSeen }));
  (balancer as undici.Dispatcher).on('disconnect', (origin) => {
    if (crashing && origin.host === crashed.authority) closeSeen = true;
  });
  const path = (i: number): string => `/api/v1/namespaces/default/configmaps?i=${i}`;
  try {
    const results = await load(1200, 20, async (i) => {
      if (i === 300) {
        crashing = true;
        await crashed.crash();
      }
      const res = await undici.request(`${ORIGIN}${path(i)}`, {
        dispatcher: balancer,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: i }),
      });
      await res.body.dump();
      return res.statusCode;
    });
    const failed = results.map((r, i) => ({ ...r, i })).filter((r) => r.error);
    t.log(`${failed.length} POSTs lost: ${[...new Set(failed.map(({ error }) => `${codeOf(error)} ${error!.message}`))].join('; ')}`);
    // Only POSTs already written to the crashed server may fail, and they fail with a reset.
    t.deepEqual(
      failed.filter(({ i }) => firstTo.get(path(i))?.key !== crashed.authority || !firstTo.get(path(i))!.beforeClose).map(({ i }) => `${i}: ${JSON.stringify(firstTo.get(path(i)))}`),
      [],
      'every lost POST was sent to the crashed server before its connection was seen to close',
    );
    for (const { error } of failed) t.regex(codeOf(error), /UND_ERR_SOCKET|ECONNRESET|ERR_HTTP2|UND_ERR_DESTROYED/);
    t.true([...received.values()].every((n) => n === 1), 'no POST reached a server twice');
    t.is(results.filter((r) => r.value === 201).length + failed.length, 1200);
    for (let i = 0; i < 1200; i++) if (results[i]?.value === 201) t.is(received.get(JSON.stringify({ id: i })), 1);
  } finally {
    stopPicks();
    await close();
  }
});

test('black hole 1 of 3: every GET completes through the others; the endpoint is ejected within connect timeout + a probe interval', async (t) => {
  const { servers, balancer, close } = await cluster({ requestTimeout: 3000, probe: { intervalMs: 1000, timeoutMs: 500 } });
  let ejectedAt = 0;
  balancer.on('eject', (e) => {
    if (e.address === '127.0.0.3' && !ejectedAt) ejectedAt = performance.now();
  });
  const stalls = watchStalls();
  try {
    await load(60, 6, () => get(balancer));
    const start = performance.now();
    servers[1]!.blackhole();
    const results = await load(600, 10, async () => {
      await new Promise((r) => setTimeout(r, 5));
      return get(balancer);
    });
    t.deepEqual(
      results.filter((r) => r.error).map((r) => `${codeOf(r.error)} ${(r.error as BalancerError).causes?.map((c) => `${c.endpoint} ${codeOf(c.error)}`).join(',')}`),
      [],
    );
    // Waits past the bound, so that a late ejection fails below with its time.
    await until(() => ejectedAt > 0, { what: 'the ejection' });
    // The product's timers run late by our own stalls, and a probe timeout that a stall of a
    // quarter of it (125 ms) explains is no verdict (OutcomeJudge.conclusiveTimeout): the next
    // probe, up to 1.2 s later, decides. A quiet machine has neither, and the bound is the plain one.
    const { total, over } = stalls.between(start, ejectedAt, 500 / 4);
    const bound = 1000 + 1000 * 1.2 + 500 + 500 + total + over * (1000 * 1.2 + 500);
    t.log(`ejected after ${Math.round(ejectedAt - start)} ms; our own stalls meanwhile ${Math.round(total)} ms, ${over} of them over 125 ms: bound ${Math.round(bound)} ms`);
    t.true(ejectedAt - start <= bound, `ejected after ${Math.round(ejectedAt - start)} ms (bound ${Math.round(bound)})`);
  } finally {
    stalls.close();
    await close();
  }
});

test('draining 1 of 3: no client error for GET, POST, PUT, DELETE; no new request reaches it after its first 429', async (t) => {
  const { servers, balancer, close } = await cluster({ probe: false });
  const drains: string[] = [];
  balancer.on('drain', (e, reason) => drains.push(`${e.address}:${reason}`));
  balancer.on('eject', (e, reason) => drains.push(`${e.address}:${reason}`));
  try {
    servers[2]!.mode = 'draining';
    const methods = ['GET', 'POST', 'PUT', 'DELETE'] as const;
    const results = await load(400, 8, async (i) => {
      const method = methods[i % 4]!;
      const res = await undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps/c${i}`, {
        dispatcher: balancer,
        method,
        ...(method === 'POST' || method === 'PUT' ? { body: `{"i":${i}}` } : {}),
      });
      await res.body.dump();
      return res.statusCode;
    });
    t.deepEqual(results.filter((r) => r.error || r.value !== 200).map((r) => codeOf(r.error) + String(r.value)), []);
    t.is(servers[2]!.requests.length, 0);
    t.true(servers[2]!.rejected <= 8, `${servers[2]!.rejected} rejected: only requests already on their way`);
    t.true(drains.some((d) => d.startsWith('127.0.0.4')));
  } finally {
    await close();
  }
});

test('draining through fetch (one-shot bodies) and a failing probe: the probe alone stops traffic', async (t) => {
  const { servers, balancer, close } = await cluster({ probe: { intervalMs: 200, timeoutMs: 500 } });
  try {
    await load(30, 3, () => get(balancer));
    servers[0]!.mode = 'draining';
    // A wait, not a bound: on a busy machine a probe's timeout our own stall explains gives no verdict.
    await until(() => balancer.endpoints()[0]?.state === 'draining', { what: 'the probe to drain it' });
    const before = servers[0]!.requests.length + servers[0]!.rejected;
    const results = await load(90, 5, async (i) => {
      const res = await undici.fetch(`${ORIGIN}/api/v1/namespaces/default/configmaps`, {
        dispatcher: balancer,
        method: 'POST',
        body: JSON.stringify({ i }),
        headers: { 'content-type': 'application/json' },
      });
      await res.arrayBuffer();
      return res.status;
    });
    t.true(results.every((r) => r.value === 200));
    t.is(servers[0]!.requests.length + servers[0]!.rejected, before);
    // Two passing probes bring it back.
    servers[0]!.mode = 'normal';
    await until(() => balancer.endpoints()[0]?.state === 'ready', { what: 'the probes to restore it' });
  } finally {
    await close();
  }
});

test('APF 429s from 1 of 3 are retried elsewhere, its share drops, and none reaches the caller', async (t) => {
  const { servers, balancer, close } = await cluster({ probe: false });
  servers[0]!.apfFraction = 0.5;
  let retries = 0;
  balancer.on('retry', (e) => {
    if (e.reason === 'throttled') retries++;
  });
  try {
    const results = await load(900, 6, () => get(balancer));
    t.true(results.every((r) => r.value === 200), 'every request answered 200');
    const served = servers.map((s) => s.requests.length);
    t.true(served[0]! < served[1]! * 0.8 && served[0]! < served[2]! * 0.8, `shares ${served.join('/')}`);
    t.true(retries > 0 && retries === servers[0]!.rejected);
  } finally {
    await close();
  }
});

test('a 429 from the Eviction API reaches the caller unchanged and is not retried', async (t) => {
  const { servers, balancer, close } = await cluster(
    { probe: false },
    {
      handler: (_req, res) =>
        sendJson(res, 429, { kind: 'Status', reason: 'TooManyRequests', message: 'Cannot evict pod as it would violate the pod\'s disruption budget.' }, { 'retry-after': '10' }),
    },
  );
  try {
    const res = await undici.request(`${ORIGIN}/api/v1/namespaces/default/pods/web-0/eviction`, { dispatcher: balancer, method: 'POST', body: '{}' });
    t.is(res.statusCode, 429);
    t.is(res.headers['retry-after'], '10');
    t.regex(await res.body.text(), /disruption budget/);
    t.is(servers.reduce((n, s) => n + s.requests.length, 0), 1);
    t.deepEqual(balancer.endpoints().map((e) => e.state), ['ready', 'ready', 'ready']);
  } finally {
    await close();
  }
});

test('all 3 down: requests fail fast with every endpoint named', async (t) => {
  const { servers, balancer, close } = await cluster({ probe: false });
  try {
    await Promise.all(servers.map((s) => s.crash()));
    const start = Date.now();
    const error = await t.throwsAsync(get(balancer), { instanceOf: BalancerError });
    t.is(error?.code, 'ERR_ALL_ENDPOINTS_FAILED');
    t.is(error?.causes.length, 3);
    t.true(error?.causes.every((c) => codeOf(c.error) === 'ECONNREFUSED'));
    t.true(Date.now() - start < 2000);
    // Every endpoint is ejected now: panic mode still tries them, and the request still fails fast.
    t.deepEqual(balancer.endpoints().map((e) => e.state), ['ejected', 'ejected', 'ejected']);
    const again = await t.throwsAsync(get(balancer), { instanceOf: BalancerError });
    t.is(again?.code, 'ERR_ALL_ENDPOINTS_FAILED');
  } finally {
    await close();
  }
});

test('all 3 answering 503: retries in flight stay within the budget', async (t) => {
  let inFlight = 0;
  let peak = 0;
  const { servers, balancer, close } = await cluster(
    { probe: false, consecutive5xx: 1000 },
    {
      handler: (_req, res) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        setTimeout(() => {
          inFlight--;
          sendJson(res, 503, { kind: 'Status', code: 503 });
        }, 30);
      },
    },
  );
  try {
    const results = await load(100, 100, () => get(balancer));
    t.true(results.every((r) => r.value === 503), 'the last 503 reaches the caller');
    const attempts = servers.reduce((n, s) => n + s.requests.length, 0);
    // 100 first attempts; retries in flight at most 20 % of 100 + 3.
    t.true(peak <= 100 + 23, `peak ${peak}`);
    t.true(attempts <= 100 * 3, `${attempts} attempts`);
    t.true(attempts > 100, 'some retries happened');
  } finally {
    await close();
  }
});

test('graceful HTTP/2 GOAWAY is not a failure', async (t) => {
  const { servers, balancer, close } = await cluster({ probe: false });
  for (const s of servers) s.goawayChance = 0.1;
  const ejected: string[] = [];
  balancer.on('eject', (e) => ejected.push(e.address));
  try {
    const results = await load(600, 20, () => get(balancer));
    t.true(results.every((r) => r.value === 200));
    t.deepEqual(ejected, []);
    t.true(servers.every((s) => s.connections > 1), 'GOAWAY made clients reconnect');
    t.true(balancer.endpoints().every((e) => e.failures === 0));
  } finally {
    await close();
  }
});

test('a shutting-down 429 passed on to the caller (no endpoint to retry on) still counts as a shutdown, over HTTP/2', async (t) => {
  const [server] = await startServers(['127.0.0.2']);
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget([server!]), tls: { ca: certs.ca }, probe: false });
  const ejections: string[] = [];
  balancer.on('eject', (_e, reason) => ejections.push(reason));
  try {
    server!.mode = 'draining';
    const res = await undici.request(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer });
    await res.body.dump();
    t.is(res.statusCode, 429);
    // Without probes a shutdown rests like an ejection for 'probe'; a throttling 429 would say 'throttled'.
    t.deepEqual(ejections, ['probe']);
  } finally {
    await balancer.destroy();
    await server!.close();
  }
});
