// A rejection's retry in panic mode, when the only endpoints left are out for refused connections
// (the chaos suite's schedule 6, docs/chaos.md: a rolling restart's 429s reached the caller while the
// apiserver that had just restarted, still ejected in the balancer's view, served). The retry goes
// there: a restarted apiserver answers it; one that refuses again leaves the 429 the answer, as one
// connection would have had it, never `ERR_ALL_ENDPOINTS_FAILED`; outside panic too, once every
// ready endpoint was tried, and then on one draining. Real sockets (HTTP/2, TLS); probes
// off (or failing) and ejections of 20 s, so nothing but the retry can reach the restarted one.
import test, { type ExecutionContext } from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { sendJson, startServers, staticTarget, type TestServer } from '../../fixtures/server/TestServer.ts';
import { createBalancer, type Balancer, type BalancerOptions } from '../../src/index.ts';
import { HOSTS, ORIGIN } from '../helpers/balancer.ts';
import { until } from '../helpers/poll.ts';

const PATH = '/api/v1/namespaces/default/configmaps';

/** Sends GETs until `done` (each answered or failed), bounded by `until`'s deadline. */
async function getsUntil(balancer: Balancer, done: () => boolean, what: string): Promise<void> {
  await until(
    async () => {
      await undici.request(`${ORIGIN}${PATH}`, { dispatcher: balancer }).then((r) => r.body.dump(), () => {});
      return done();
    },
    { what },
  );
}

/** Three servers; the last two crashed and ejected for refused connections; the first throttles everything. */
async function onlyOneUp(): Promise<{ servers: TestServer[]; balancer: Balancer }> {
  const servers = await startServers(HOSTS);
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, baseEjectionMs: 20_000, hedge: false });
  await Promise.all(servers.slice(1).map((s) => s.crash()));
  await getsUntil(balancer, () => balancer.endpoints().filter((e) => e.state === 'ejected' && e.lastEjection?.reason === 'connect').length === 2, 'two endpoints ejected for refused connections');
  servers[0]!.apfFraction = 1;
  return { servers, balancer };
}

test('a 429 in panic mode is retried on an endpoint ejected for refused connections: restarted, it answers', async (t) => {
  const { servers, balancer } = await onlyOneUp();
  try {
    await servers[1]!.restart();
    for (const method of ['GET', 'POST']) {
      const res = await undici.request(`${ORIGIN}${PATH}`, { dispatcher: balancer, method, body: method === 'POST' ? '{}' : undefined });
      const body = (await res.body.json()) as { server?: string };
      t.is(res.statusCode, 200, method);
      t.is(body.server, servers[1]!.name, `${method} answered by the restarted server`);
    }
    t.is(balancer.endpoints().find((e) => e.port === servers[1]!.port && e.address === servers[1]!.host)!.state, 'ejected', 'still ejected: only the retry went there');
  } finally {
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('when those endpoints refuse again, the caller gets the 429 with its body and Retry-After, not ERR_ALL_ENDPOINTS_FAILED', async (t) => {
  const { servers, balancer } = await onlyOneUp();
  const retries: string[] = [];
  balancer.on('retry', (e) => retries.push(e.reason));
  try {
    for (const method of ['GET', 'POST']) {
      retries.length = 0;
      const res = await undici.request(`${ORIGIN}${PATH}`, { dispatcher: balancer, method, body: method === 'POST' ? '{}' : undefined });
      const body = (await res.body.json()) as { kind?: string; code?: number };
      t.is(res.statusCode, 429, method);
      t.is(res.headers['retry-after'], '1');
      t.like(body, { kind: 'Status', code: 429 });
      t.is(retries[0], 'throttled', `${method}: the 429 was retried (${retries.join(',')})`);
    }
  } finally {
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
});

/**
 * Outside panic: the first two servers answer a GET with 503s (under `consecutive5xx`, so both stay
 * ready) once `prepare` has put the third out of the picker's candidates; the GET must be served by the third.
 */
async function servedByTheThird(t: ExecutionContext, options: Partial<BalancerOptions>, prepare: (servers: TestServer[], balancer: Balancer) => Promise<void>, states: string[]): Promise<void> {
  const failing = new Set<string>();
  const servers = await startServers(HOSTS, {
    handler: (req, res, server) => (failing.has(server.name) ? sendJson(res, 503, { kind: 'Status', code: 503 }) : sendJson(res, 200, { server: server.name, path: req.url })),
  });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, hedge: false, ...options });
  try {
    await prepare(servers, balancer);
    failing.add(servers[0]!.name).add(servers[1]!.name);
    const res = await undici.request(`${ORIGIN}${PATH}`, { dispatcher: balancer });
    const body = (await res.body.json()) as { server?: string };
    t.is(res.statusCode, 200);
    t.is(body.server, servers[2]!.name);
    t.deepEqual(balancer.endpoints().map((e) => e.state).sort(), states, 'not panic: two stayed ready');
  } finally {
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
}

test('outside panic too: a GET met by 503s at both ready endpoints is retried on the restarted one still ejected', (t) =>
  servedByTheThird(
    t,
    { probe: false, baseEjectionMs: 20_000 },
    async (servers, balancer) => {
      await servers[2]!.crash();
      await getsUntil(balancer, () => balancer.endpoints().some((e) => e.state === 'ejected' && e.lastEjection?.reason === 'connect'), 'the crashed endpoint ejected for refused connections');
      await servers[2]!.restart();
    },
    ['ejected', 'ready', 'ready'],
  ));

test('outside panic: a GET met by 503s at both ready endpoints is retried on one draining (its /readyz fails, as after a restart until two probes pass) and served there', (t) =>
  servedByTheThird(
    t,
    { probe: { intervalMs: 100 } },
    async (servers, balancer) => {
      servers[2]!.readyzStatus = 500;
      await getsUntil(balancer, () => balancer.endpoints().some((e) => e.state === 'draining'), 'the unready endpoint draining');
    },
    ['draining', 'ready', 'ready'],
  ));
