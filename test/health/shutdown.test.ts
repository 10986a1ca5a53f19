// kube-apiserver's default graceful shutdown (no --shutdown-send-retry-after) against the balancer:
// the 503 + Retry-After: 1 "apiserver is shutting down" is a rejection before the request ran, so
// every verb goes elsewhere; any other 503 of a request that may not be repeated reaches the caller.
import { setTimeout as delay } from 'node:timers/promises';
import test from 'ava';
import * as undici from 'undici';
import { ApiserverCluster, RESOURCES } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { sendJson } from '../../fixtures/server/TestServer.ts';
import { createBalancer, type Balancer } from '../../src/index.ts';
import { cluster as testServers, ORIGIN } from '../helpers/balancer.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { load } from '../helpers/load.ts';
import { until } from '../helpers/poll.ts';

const CM = '/api/v1/namespaces/default/configmaps';

async function call(balancer: Balancer, origin: string, method: string, path: string, body?: unknown, token?: string) {
  const res = await undici.request(`${origin}${path}`, {
    dispatcher: balancer,
    method: method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

test('default shutdown of 1 of 3: POST, PUT, PATCH, DELETE and GET that meet its 503 go elsewhere, each applied once; it drains', async (t) => {
  const cluster = await ApiserverCluster.start();
  const origin = cluster.instances[0]!.url;
  const balancer = createBalancer({ origin, target: cluster.target, tls: { ca: certs.ca }, probe: false });
  const send = (method: string, path: string, body?: unknown) => call(balancer, origin, method, path, body, cluster.token);
  const drained: string[] = [];
  balancer.on('drain', (e, reason) => drained.push(`${e.address}:${reason}`));
  balancer.on('eject', (e, reason) => drained.push(`${e.address}:${reason}`));
  try {
    // Open connections to every instance first: the 503s come on connections that are already open.
    for (let i = 0; i < 6; i++) t.is((await send('GET', CM)).status, 200);
    for (let i = 0; i < 12; i++) t.is((await send('POST', CM, { metadata: { name: `cm-${i}` } })).status, 201);
    const leaving = cluster.instances[1]!;
    // A minute of open connections bringing requests: the rejection every one of them meets.
    void leaving.shutdown({ drainMs: 60_000 });
    await leaving.waitForState('draining');
    const verbs = ['POST', 'PUT', 'PATCH', 'DELETE', 'GET'] as const;
    const results = await load(60, 4, async (i) => {
      const verb = verbs[i % verbs.length]!;
      const name = `cm-${i % 12}`;
      const r =
        verb === 'POST'
          ? await send('POST', CM, { metadata: { name: `new-${i}` } })
          : verb === 'PUT'
            ? await send('PUT', `${CM}/${name}`, { metadata: { name }, data: { put: String(i) } })
            : verb === 'PATCH'
              ? await send('PATCH', `${CM}/${name}`, { data: { patched: String(i) } })
              : verb === 'DELETE'
                ? await send('DELETE', `${CM}/gone-${i}`)
                : await send('GET', CM);
      return `${verb} ${r.status}`;
    });
    const failed = results.filter((r) => r.error || !/ (200|201|404)$/.test(r.value!));
    t.deepEqual(failed.map((r) => r.value ?? String(r.error)), []);
    t.true(leaving.counters.shutdownRejected >= 1, 'some requests met the 503');
    t.true(drained.some((d) => d.startsWith(`${leaving.host}:`)), `drained: ${drained.join(', ')}`);
    // Nothing the 503 rejected ran, and nothing ran twice.
    const created = cluster.store.list(RESOURCES.configmaps, 'default').items.filter((c) => c.metadata.name!.startsWith('new-'));
    t.is(created.length, 12, 'every POST created its object once (a second run would have been a 409)');
  } finally {
    await balancer.close();
    await cluster.close();
  }
});

const SHUTTING_DOWN = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'apiserver is shutting down', reason: 'ServiceUnavailable', code: 503 };

for (const [what, status, headers, expectRetry] of [
  ['the shutdown Status with Retry-After', SHUTTING_DOWN, { 'retry-after': '1' }, true],
  ['the shutdown Status without Retry-After', SHUTTING_DOWN, {}, false],
  ['a ServiceUnavailable Status from elsewhere (aggregated API)', { ...SHUTTING_DOWN, message: 'the server is currently unable to handle the request' }, { 'retry-after': '1' }, false],
  ['an InternalError Status that mentions a shutdown', { ...SHUTTING_DOWN, reason: 'InternalError', message: 'apiserver is shutting down' }, { 'retry-after': '1' }, false],
] as const) {
  test(`a POST answered 503 with ${what}: ${expectRetry ? 'sent elsewhere' : 'reaches the caller, body intact, not retried'}`, async (t) => {
    const { servers, balancer, close } = await testServers(
      { probe: false },
      { handler: (req, res, server) => (server === first ? sendJson(res, 503, status, headers) : sendJson(res, 201, { ok: true })) },
    );
    const first = servers[0]!;
    try {
      // Round robin from a random start: send until the first server has answered once.
      const answers: number[] = [];
      for (let i = 0; i < 3 && first.requests.filter((r) => r.method === 'POST').length === 0; i++) {
        const r = await call(balancer, ORIGIN, 'POST', CM, { metadata: { name: `x${i}` } });
        answers.push(r.status);
        if (r.status === 503) t.deepEqual(JSON.parse(r.text), status);
      }
      t.is(first.requests.filter((r) => r.method === 'POST').length, 1);
      t.is(answers.includes(503), !expectRetry, `answers ${answers.join(',')}`);
      const posts = servers.reduce((n, s) => n + s.requests.filter((r) => r.method === 'POST').length, 0);
      t.is(posts, answers.length + (expectRetry ? 1 : 0));
    } finally {
      await close();
    }
  });
}

test('a connection whose TLS handshake completes after the shutdown began (never sent a GOAWAY, as Go does): the POST waiting for it meets the 503 and is created once elsewhere', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2', '127.0.0.3'] });
  const origin = cluster.instances[0]!.url;
  const balancer = createBalancer({ origin, target: cluster.target, tls: { ca: certs.ca }, probe: false, hedge: false });
  const send = (name: string) => call(balancer, origin, 'POST', CM, { metadata: { name } }, cluster.token);
  const leaving = cluster.instances[0]!;
  try {
    // The first connection to `leaving` stalls before its handshake, with a POST waiting for it
    // (round robin from a random start: within two POSTs).
    const held = leaving.holdNewConnections();
    const posts = [send('p-0')];
    await Promise.race([posts[0], until(() => held.held === 1)]);
    if (held.held === 0) {
      posts.push(send('p-1'));
      await until(() => held.held === 1, { what: 'a POST waiting for a connection to the leaving apiserver' });
    }
    // Its handshake completes once the shutdown has begun and before its GOAWAYs go out (5 s later).
    const stopped = leaving.shutdown({ drainMs: 5_000, timeoutMs: 60_000 });
    await leaving.waitForState('draining');
    held.release();
    const results = await Promise.all(posts);
    t.deepEqual(results.map((r) => r.status), posts.map(() => 201));
    t.is(leaving.counters.shutdownRejected, 1, 'the POST on the new connection met the 503');
    await until(() => leaving.shutdownPhase === 'closing', { what: 'the GOAWAYs to go out' });
    t.is(leaving.counters.goaways, 0, 'the connection made after the shutdown began was never told');
    const names = cluster.store.list(RESOURCES.configmaps, 'default').items.map((c) => c.metadata.name).sort();
    t.deepEqual(names, posts.map((_, i) => `p-${i}`), 'each created once');
    // Shutdown waits for that connection until its timeout: closing the balancer lets the process exit.
    await balancer.close();
    await stopped;
  } finally {
    await balancer.close();
    await cluster.close();
  }
});

test('a retry after a draining apiserver\'s rejection costs no retry budget: with none at all, calls that meet the shutdown 429s in panic are served elsewhere', async (t) => {
  const { servers, balancer, close } = await testServers({ probe: { intervalMs: 100 }, retryBudget: { percent: 0, min: 0 } });
  const retries: string[] = [];
  balancer.on('retry', (e) => retries.push(e.reason));
  try {
    // --shutdown-send-retry-after on two of three: /readyz fails, then 429 + Retry-After on every
    // request. Both drain; with one of three ready, panic still sends them requests.
    servers[0]!.mode = 'draining';
    servers[1]!.mode = 'draining';
    await until(() => balancer.endpoints().filter((e) => e.state === 'draining').length === 2, { what: 'two draining' });
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      for (const method of ['GET', 'POST']) statuses.push((await call(balancer, ORIGIN, method, CM, method === 'POST' ? { metadata: { name: `s${i}` } } : undefined)).status);
    }
    t.deepEqual(statuses.filter((s) => s >= 400), [], 'no caller saw a shutdown rejection');
    t.true(retries.length > 0, 'calls met the draining servers and went elsewhere');
    t.is(balancer.stats().budget.refused, 0);
  } finally {
    await close();
  }
});

test('a draining apiserver\'s 429 goes to one resting after its own 429s: it says nothing of their load (docs/chaos.md, schedule 498)', async (t) => {
  // The clock moves only for the probes that see the shutdown: the 429s' rests last until an answer ends them.
  const clock = new FakeClock();
  const { servers, balancer, close } = await testServers({ probe: { intervalMs: 100 }, clock });
  try {
    servers[0]!.mode = 'draining';
    for (let i = 0; i < 20 && balancer.endpoints()[0]!.state !== 'draining'; i++) {
      clock.advance(100);
      await delay(20);
    }
    t.is(balancer.endpoints()[0]!.state, 'draining');
    servers[1]!.apfFraction = 1;
    servers[2]!.apfFraction = 1;
    await until(async () => {
      await call(balancer, ORIGIN, 'GET', CM);
      return balancer.endpoints().filter((e) => e.state === 'ejected').length === 2;
    }, { what: 'two throttled' });
    // They answer again, slowly: the calls that meet #0 first get its 429 before any answer ends a rest.
    for (const server of servers.slice(1)) Object.assign(server, { apfFraction: 0, latencyMs: 500 });
    const rejectedBefore = servers[0]!.rejected;
    const calls = Array.from({ length: 6 }, (_, i) => (i % 2 ? 'POST' : 'GET')).map((method, i) => call(balancer, ORIGIN, method, CM, method === 'POST' ? { metadata: { name: `r${i}` } } : undefined));
    const statuses = (await Promise.all(calls)).map((r) => r.status);
    t.log(`statuses ${statuses.join(' ')}; shutdown 429s ${servers[0]!.rejected - rejectedBefore}`);
    t.true(servers[0]!.rejected > rejectedBefore, 'calls met the draining apiserver');
    t.deepEqual(statuses.filter((s) => s >= 400), [], 'none reached its caller');
  } finally {
    await close();
  }
});

test('an HTTP/2 shutdown 429 met before the endpoint is known to drain goes elsewhere even with no retry budget: its body, read first, says shutdown (docs/chaos.md, schedule 225)', async (t) => {
  // No probe sees the shutdown: each call's first 429 from #0 is the balancer's first word of it.
  const { servers, balancer, close } = await testServers({ probe: { intervalMs: 60_000 }, retryBudget: { percent: 0, min: 0 } });
  try {
    servers[0]!.mode = 'draining';
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await call(balancer, ORIGIN, i % 2 ? 'POST' : 'GET', CM, i % 2 ? { metadata: { name: `h${i}` } } : undefined)).status);
    t.true(servers[0]!.rejected > 0, 'calls met the shutting-down apiserver');
    t.deepEqual(statuses.filter((s) => s >= 400), [], 'none reached its caller');
    t.is(balancer.endpoints()[0]!.state, 'draining');
  } finally {
    await close();
  }
});

test("a GET that meets the default shutdown's 503 before the endpoint is known to drain goes elsewhere even with no retry budget (docs/chaos.md, schedule 340)", async (t) => {
  // No probe sees the shutdown: a GET's 503 from #0 is the balancer's first word of it, and a 5xx's retry needs budget.
  const shutdown = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'apiserver is shutting down', reason: 'ServiceUnavailable', code: 503 };
  const { servers, balancer, close } = await testServers(
    { probe: { intervalMs: 60_000 }, retryBudget: { percent: 0, min: 0 } },
    { handler: (req, res, server) => void (server === servers[0] ? sendJson(res, 503, shutdown, { 'retry-after': '1' }) : sendJson(res, 200, { kind: 'ConfigMapList', items: [] })) },
  );
  try {
    const statuses: number[] = [];
    // Until a GET has met #0 (the picker starts at random); bounded.
    for (let i = 0; i < 12 && servers[0]!.requests.length === 0; i++) statuses.push((await call(balancer, ORIGIN, 'GET', CM)).status);
    t.is(servers[0]!.requests.length, 1, 'a GET met the shutting-down apiserver');
    t.deepEqual(statuses.filter((s) => s >= 400), [], 'it did not reach its caller');
    t.is(balancer.endpoints()[0]!.state, 'draining');
    t.true(balancer.stats().budget.refused > 0, 'its retry as a 5xx was refused first');
  } finally {
    await close();
  }
});
