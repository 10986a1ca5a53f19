// A rejection whose body trickles holds neither the retry nor the caller (issue 26, defect 3): a
// GET's retry goes as soon as the status says it may; a write's 503, read to tell the shutdown's
// from others, is read for at most a second, then the caller gets it as it is. Retry budget comes
// back either way. Real sockets (HTTP/2), a fake clock for the bound.
import type { Http2ServerResponse } from 'node:http2';
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget, type Response, type TestServer } from '../../fixtures/server/TestServer.ts';
import { createBalancer, type Balancer, type BalancerOptions } from '../../src/index.ts';
import { HOSTS, ORIGIN } from '../helpers/balancer.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { until } from '../helpers/poll.ts';

/** Longer than any answer here takes on a busy machine, far shorter than a trickle's end (never). */
const PATIENCE_MS = 5000;

interface SetUp {
  servers: TestServer[];
  balancer: Balancer;
  clock: FakeClock;
  /** The rejections still trickling (their response streams not closed). */
  trickling: Set<Response>;
  retries: string[];
  close: () => Promise<void>;
}

/** The first `rejecting` servers reject everything with `status` and a body of one byte every 500 ms that never ends; the last answers. */
async function setUp(status: number, rejecting = 1, options: Partial<BalancerOptions> = {}): Promise<SetUp> {
  const trickling = new Set<Response>();
  const timers = new Set<NodeJS.Timeout>();
  const servers = await startServers(HOSTS.slice(0, rejecting + 1), {
    handler: (req, res, server) => {
      if (servers.indexOf(server) >= rejecting) {
        req.resume();
        return void res.end('{"kind":"ConfigMap"}');
      }
      (res as Http2ServerResponse).writeHead(status, { 'content-type': 'application/json', 'retry-after': '1' });
      const stream = res as Http2ServerResponse;
      stream.write('{');
      trickling.add(res);
      const timer = setInterval(() => stream.write(' '), 500);
      timers.add(timer);
      res.once('close', () => {
        clearInterval(timer);
        trickling.delete(res);
      });
    },
  });
  const clock = new FakeClock();
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false, clock, ...options });
  const retries: string[] = [];
  balancer.on('retry', (e) => retries.push(e.reason));
  return {
    servers,
    balancer,
    clock,
    trickling,
    retries,
    close: async () => {
      for (const timer of timers) clearInterval(timer);
      await balancer.destroy();
      await Promise.all(servers.map((s) => s.close()));
    },
  };
}

for (const status of [503, 429]) {
  test(`a GET behind a ${status} whose body trickles is retried at once; the rejected body is dropped within the bound`, async (t) => {
    const { servers, balancer, clock, trickling, retries, close } = await setUp(status);
    try {
      // Until one GET has met the rejection first (the picker starts at random); bounded.
      for (let i = 0; i < 6 && servers[0]!.requests.length === 0; i++) {
        const started = Date.now();
        const res = await undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps/c${i}`, { dispatcher: balancer, signal: AbortSignal.timeout(PATIENCE_MS) });
        t.is(res.statusCode, 200);
        t.is(await res.body.text(), '{"kind":"ConfigMap"}');
        t.true(Date.now() - started < PATIENCE_MS / 2, 'the retry did not wait for the rejected body');
      }
      t.is(servers[0]!.requests.length, 1);
      t.deepEqual(retries, [status === 429 ? 'throttled' : '5xx']);
      t.is(balancer.stats().budget.retriesInFlight, 0, 'the retry ended and gave its budget back');
      t.is(trickling.size, 1, 'the rejected body is still being read for its verdict');
      clock.advance(1000);
      await until(() => trickling.size === 0, { what: 'the rejected stream to be dropped after 1 s' });
      t.is(balancer.stats().budget.retriesInFlight, 0);
    } finally {
      await close();
    }
  });
}

test('a rejection read for its verdict gives its retry budget back at once: a GET rejected by two trickling 503s still gets its second retry within a budget of one', async (t) => {
  const { servers, balancer, retries, close } = await setUp(503, 2, { retryBudget: { percent: 0, min: 1 } });
  try {
    // Until one GET has met both rejections first (the picker starts at random); bounded.
    let twice = 0;
    for (let i = 0; i < 30 && twice === 0; i++) {
      const before = retries.length;
      const res = await undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps/c${i}`, { dispatcher: balancer, signal: AbortSignal.timeout(PATIENCE_MS) });
      const tried = retries.length - before;
      t.is(res.statusCode, 200, `GET ${i} after ${tried} retries`);
      await res.body.dump();
      if (tried === 2) twice++;
    }
    t.is(twice, 1, 'a GET met both rejecting servers before the answering one');
    t.true(servers[0]!.requests.length + servers[1]!.requests.length >= 2);
    t.is(balancer.stats().budget.retriesInFlight, 0, 'the rejections still trickling hold no budget');
  } finally {
    await close();
  }
});

test("a write's 503 whose body trickles is read for at most a second, then the caller gets it as it is", async (t) => {
  const { servers, balancer, clock, retries, close } = await setUp(503);
  try {
    // Until one POST has met the rejection (the others are answered by the second server); bounded.
    let sent = 0;
    const rejected = (): number => servers[0]!.requests.length;
    for (let i = 0; i < 6 && rejected() === 0; i++) {
      const pending = undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps`, { dispatcher: balancer, method: 'POST', body: '{}', signal: AbortSignal.timeout(PATIENCE_MS) });
      pending.catch(() => {});
      sent++;
      await until(() => servers[0]!.requests.length + servers[1]!.requests.length === i + 1, { what: 'the POST to reach a server' });
      if (rejected() === 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        clock.advance(1000);
      }
      const res = await pending;
      t.is(res.statusCode, rejected() === 1 ? 503 : 200);
      if (res.statusCode === 503) res.body.destroy();
      else await res.body.dump();
    }
    t.is(servers[0]!.requests.length, 1);
    t.deepEqual(retries, [], 'a 503 not proven to be the shutdown one is not sent elsewhere');
    t.is(servers[0]!.requests.length + servers[1]!.requests.length, sent, 'each POST went to one apiserver');
    t.is(balancer.stats().budget.retriesInFlight, 0);
  } finally {
    await close();
  }
});

for (const status of [429, 503]) {
  test(`a GET whose retry found nowhere to go at a trickling ${status}'s headers goes to an endpoint back before the read's bound (docs/chaos.md, schedule 484)`, async (t) => {
    const trickling = new Set<NodeJS.Timeout>();
    let rejecting = false;
    let throttledOnce = false;
    const servers = await startServers(HOSTS.slice(0, 2), {
      handler: (req, res, server) => {
        req.resume();
        const stream = res as Http2ServerResponse;
        if (server === servers[1] && !throttledOnce) {
          // The second rests for its Retry-After (1 s of the fake clock): it is out when the GET below meets the first's rejection.
          throttledOnce = true;
          return void stream.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end('{}');
        }
        if (server === servers[1] || !rejecting) return void res.end('{"kind":"ConfigMap"}');
        stream.writeHead(status, { 'content-type': 'application/json', 'retry-after': '1' }).write('{');
        const timer = setInterval(() => stream.write(' '), 500);
        trickling.add(timer);
        res.once('close', () => clearInterval(timer));
      },
    });
    const clock = new FakeClock();
    const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false, clock });
    const retries: string[] = [];
    balancer.on('retry', (e) => retries.push(e.reason));
    const get = (i: number): Promise<undici.Dispatcher.ResponseData> =>
      undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps/c${i}`, { dispatcher: balancer, signal: AbortSignal.timeout(PATIENCE_MS) });
    try {
      // Until a GET has met the second's 429 (the picker starts at random); bounded.
      for (let i = 0; i < 6 && !throttledOnce; i++) t.is((await get(i)).statusCode, 200);
      t.true(throttledOnce);
      rejecting = true;
      const before = servers[0]!.requests.length;
      const pending = get(100);
      await until(() => servers[0]!.requests.length > before && trickling.size > 0, { what: "the GET to meet the first's rejection" });
      await new Promise((resolve) => setTimeout(resolve, 100));
      t.is(servers[1]!.requests.length, 1, 'the second, resting, was not tried');
      // Its Retry-After ends first, then the read's bound: the retry goes to the second after all.
      clock.advance(1000);
      const res = await pending;
      t.is(res.statusCode, 200);
      t.is(await res.body.text(), '{"kind":"ConfigMap"}');
      t.deepEqual(retries.slice(-1), [status === 429 ? 'throttled' : '5xx']);
      t.is(servers[1]!.requests.length, 2);
    } finally {
      for (const timer of trickling) clearInterval(timer);
      await balancer.destroy();
      await Promise.all(servers.map((s) => s.close()));
    }
  });
}
