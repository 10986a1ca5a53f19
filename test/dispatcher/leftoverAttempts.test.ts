// Every attempt of a request ends once the caller has its answer (issue 26, chaos finding 3): an
// apiserver waits for its in-flight requests before it exits, so a stream left open after the
// caller was done stretches a rolling restart. An exploration copy (Explore.ts) used to read on
// until its apiserver answered, however long: on one that stopped answering it held the stream
// open up to the 300-s timeouts. Real sockets (HTTP/2), real clock: the servers count the streams
// they still serve, and the test polls for that count to reach 0 within a generous bound.
import type { Http2ServerResponse } from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget, type Response, type TestServer } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { HOSTS, ORIGIN } from '../helpers/balancer.ts';
import { until } from '../helpers/poll.ts';

/** Far longer than the balancer's bound on a copy's read (1 s) on a busy machine; far shorter than a hung answer (never). */
const BOUND_MS = 10_000;
const GET = '/api/v1/namespaces/default/configmaps/a';

/** GETs every 20 ms (about 50 a second, as a lagging endpoint's trickle of picks needs) until `done()`, for at most `ms`; resolves once all were answered. */
async function paced(get: () => Promise<void>, ms: number, done: () => boolean): Promise<boolean> {
  const sent: Array<Promise<void>> = [];
  const deadline = performance.now() + ms;
  let reached = false;
  while (performance.now() < deadline && !(reached = done())) {
    sent.push(get());
    await sleep(20);
  }
  await Promise.all(sent);
  return reached;
}

test('an exploration copy on a lagging apiserver that stops answering ends soon after the caller has its answer', async (t) => {
  /** The second server's GETs: answered after 200 ms (it lags), then, once `hang`, never. */
  let hang = false;
  const open = new Set<Response>();
  const timers = new Set<NodeJS.Timeout>();
  const servers: TestServer[] = await startServers(HOSTS, {
    handler: (req, res, server) => {
      req.resume();
      const answer = (): void => void (res as Http2ServerResponse).end('{"kind":"ConfigMap"}');
      if (server !== servers[1]) return answer();
      open.add(res);
      res.once('close', () => open.delete(res));
      if (hang) return;
      const timer = setTimeout(answer, 200);
      timers.add(timer);
    },
  });
  // Hedges held off for 1 s, as in remeasure.test.ts: a hedge beating the 200-ms answers would eject the server instead.
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: { minDelayMs: 1_000, maxDelayMs: 1_000, percentile: 99 } });
  let copies = 0;
  balancer.on('retry', (e) => {
    if (e.reason === 'hedge' && e.attempt === 1) copies++;
  });
  const get = async (): Promise<void> => {
    const res = await undici.request(`${ORIGIN}${GET}`, { dispatcher: balancer, signal: AbortSignal.timeout(BOUND_MS) });
    t.is(res.statusCode, 200);
    await res.body.dump();
  };
  try {
    t.true(await paced(get, 20_000, () => copies > 0), 'the lagging server is explored by a copy');
    await until(() => open.size === 0, { timeoutMs: BOUND_MS, what: 'the lagging server to answer what it has' });
    hang = true;
    const before = copies;
    t.true(await paced(get, 20_000, () => copies > before), 'a copy goes to the server that no longer answers');
    // Every caller has its answer now (from the other servers); the copy must not hold the server's drain.
    await until(() => open.size === 0, { timeoutMs: BOUND_MS, what: 'the copies to end after their callers were answered' });
    t.is(balancer.stats().budget.retriesInFlight, 0, 'the copies gave their retry budget back');
  } finally {
    for (const timer of timers) clearTimeout(timer);
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('a hedged GET: the attempt on the apiserver that does not answer ends with the caller’s answer', async (t) => {
  const open = new Set<Response>();
  const servers: TestServer[] = await startServers(HOSTS.slice(0, 2), {
    handler: (req, res, server) => {
      req.resume();
      if (server !== servers[0]) return void (res as Http2ServerResponse).end('{"kind":"ConfigMap"}');
      open.add(res);
      res.once('close', () => open.delete(res));
    },
  });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: { minDelayMs: 100, maxDelayMs: 100, percentile: 99 } });
  try {
    // Until one GET has gone to the silent server first (the picker starts at random); bounded.
    for (let i = 0; i < 10 && servers[0]!.requests.length === 0; i++) {
      const res = await undici.request(`${ORIGIN}${GET}`, { dispatcher: balancer, signal: AbortSignal.timeout(BOUND_MS) });
      t.is(res.statusCode, 200);
      await res.body.dump();
    }
    t.is(servers[0]!.requests.length, 1, 'one GET was hedged away from the silent server');
    await until(() => open.size === 0, { timeoutMs: BOUND_MS, what: 'the hedged attempt to end after the caller was answered' });
    t.is(balancer.stats().budget.retriesInFlight, 0);
  } finally {
    await balancer.destroy();
    await Promise.all(servers.map((s) => s.close()));
  }
});
