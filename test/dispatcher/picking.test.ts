// End to end through createBalancer and real HTTPS/h2 servers: how requests and watches are spread,
// and what happens to an endpoint the resolver drops while requests are running on it.
// Probes are off where counts are exact: a probe timing out on a busy machine would eject an endpoint.
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { sendJson, startServers, type Response, type TestServer } from '../../fixtures/server/TestServer.ts';
import { createBalancer, type Balancer } from '../../src/index.ts';
import { ORIGIN } from '../helpers/balancer.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { until } from '../helpers/poll.ts';
import { addressOf, pushResolver } from '../helpers/pushResolver.ts';

const WATCH = '/api/v1/namespaces/default/pods?watch=true';

/**
 * Servers that answer at once, except watches and `/slow` requests, which they hold open until
 * `release()`: a watch with one event first, a slow request with nothing.
 */
async function holdingServers(hosts: string[]): Promise<{ servers: TestServer[]; held: Array<{ server: TestServer; path: string }>; release: () => void }> {
  const open: Array<{ server: TestServer; path: string; res: Response }> = [];
  const servers = await startServers(hosts, {
    handler: (req, res, server) => {
      const path = req.url ?? '';
      if (path.includes('watch=true')) {
        (res as ServerResponse).writeHead(200, { 'content-type': 'application/json' });
        (res as ServerResponse).write('{"type":"ADDED"}\n');
        open.push({ server, path, res });
      } else if (path.startsWith('/slow')) {
        open.push({ server, path, res });
      } else {
        sendJson(res, 200, { server: server.name, path });
      }
    },
  });
  return {
    servers,
    held: open,
    release: () => {
      for (const { path, res } of open.splice(0)) {
        if (path.includes('watch=true')) res.end('{"type":"BOOKMARK"}\n');
        else sendJson(res, 200, { slow: true });
      }
    },
  };
}


async function get(balancer: Balancer, path: string): Promise<undici.Dispatcher.ResponseData> {
  return undici.request(`${ORIGIN}${path}`, { dispatcher: balancer });
}

const watchesOn = (server: TestServer): number => server.requests.filter((r) => r.path.includes('watch=true')).length;
const shortOn = (server: TestServer): number => server.requests.filter((r) => !r.path.includes('watch=true') && !r.path.startsWith('/slow')).length;

test('30 watches among 3,000 short requests over 3 servers: 10 watches each; a fourth server gets the next watches first', async (t) => {
  const { servers, release } = await holdingServers(['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']);
  const [a, b, c, d] = servers as [TestServer, TestServer, TestServer, TestServer];
  const resolver = pushResolver([a, b, c].map(addressOf));
  // Placement alone: watch rebalancing would move some of the open watches to the newcomer.
  const balancer = createBalancer({ origin: ORIGIN, target: resolver, tls: { ca: certs.ca }, rebalanceWatches: false, probe: false, hedge: false });
  const watches: undici.Dispatcher.ResponseData[] = [];
  try {
    // One watch after every 100 short requests, ten short requests in flight at a time.
    for (let round = 0; round < 30; round++) {
      watches.push(await get(balancer, WATCH));
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          for (let k = 0; k < 10; k++) await (await get(balancer, '/api/v1/namespaces')).body.dump();
        }),
      );
    }
    t.deepEqual([a, b, c].map(watchesOn), [10, 10, 10]);
    t.deepEqual([a, b, c].map(shortOn), [1000, 1000, 1000], 'watches do not take short requests\' turns');
    t.deepEqual(
      balancer.endpoints().map((e) => e.streams),
      [10, 10, 10],
    );

    resolver.push([a, b, c, d].map(addressOf));
    for (let k = 0; k < 10; k++) watches.push(await get(balancer, WATCH));
    t.is(watchesOn(d), 10, 'the newcomer takes every new watch until it has as many as the others');
    for (let k = 0; k < 4; k++) watches.push(await get(balancer, WATCH));
    t.deepEqual([a, b, c, d].map(watchesOn), [11, 11, 11, 11]);
    t.deepEqual(
      balancer.endpoints().map((e) => e.streams),
      [11, 11, 11, 11],
    );

    release();
    for (const watch of watches) t.is(await watch.body.text(), '{"type":"ADDED"}\n{"type":"BOOKMARK"}\n');
    t.deepEqual(
      balancer.endpoints().map((e) => e.streams),
      [0, 0, 0, 0],
    );
  } finally {
    release();
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('static weights: weight=3 takes three requests for every one of the others', async (t) => {
  const servers = await startServers(['127.0.0.2', '127.0.0.3', '127.0.0.4']);
  const [a, b, c] = servers as [TestServer, TestServer, TestServer];
  const balancer = createBalancer({ origin: ORIGIN, target: `static:///${a.authority}?weight=3,${b.authority},${c.authority}`, tls: { ca: certs.ca }, probe: false, hedge: false });
  try {
    for (let k = 0; k < 500; k++) await (await get(balancer, '/version')).body.dump();
    t.deepEqual(
      servers.map((s) => s.requests.length),
      [300, 100, 100],
    );
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('slow start through createBalancer on a fake clock: a fourth server ramps from 10 % to its full share', async (t) => {
  const servers = await startServers(['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']);
  const clock = new FakeClock();
  const resolver = pushResolver(servers.slice(0, 3).map(addressOf));
  // No probes: one 10-s jump of the fake clock gives no socket time to answer, so every probe sent
  // in it timed out and ejected endpoints that serve (ramping is what this test is about).
  const balancer = createBalancer({ origin: ORIGIN, target: resolver, tls: { ca: certs.ca }, clock, probe: false });
  const send = async (count: number): Promise<number[]> => {
    const before = servers.map((s) => s.requests.length);
    for (let k = 0; k < count; k++) await (await get(balancer, '/version')).body.dump();
    return servers.map((s, i) => s.requests.length - before[i]!);
  };
  try {
    t.deepEqual(await send(300), [100, 100, 100, 0], 'the first servers start at full weight');
    resolver.push(servers.map(addressOf));
    const ramping = await send(310);
    t.true(Math.abs(ramping[3]! - 10) <= 1, `10 % of a share at first: ${ramping.join()}`);
    clock.advance(10_000);
    t.deepEqual(await send(400), [100, 100, 100, 100]);
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('a removed endpoint gets nothing new; its watch and long requests complete; then its pool closes', async (t) => {
  const { servers, held, release } = await holdingServers(['127.0.0.2', '127.0.0.3', '127.0.0.4']);
  const resolver = pushResolver(servers.map(addressOf));
  const balancer = createBalancer({ origin: ORIGIN, target: resolver, tls: { ca: certs.ca }, probe: false, hedge: false });
  const disconnected: string[] = [];
  // The balancer passes on its pools' undici events.
  (balancer as undici.Dispatcher).on('disconnect', (origin) => disconnected.push(origin.host));
  try {
    const watch = await get(balancer, WATCH);
    const removed = servers.find((s) => watchesOn(s) === 1)!;
    const kept = servers.filter((s) => s !== removed);
    // Six long requests, two on each server, all in flight.
    const slow = Array.from({ length: 6 }, (_, k) => get(balancer, `/slow/${k}`));
    await until(() => held.length === 7, { what: 'the watch and six slow requests to be held by the servers' });
    const before = removed.requests.length;
    t.is(before, 3);

    resolver.push(kept.map(addressOf));
    t.deepEqual(
      balancer.endpoints().map((e) => e.address),
      kept.map((s) => s.host),
    );
    for (let k = 0; k < 30; k++) await (await get(balancer, '/version')).body.dump();
    const next = await get(balancer, WATCH);
    t.is(removed.requests.length, before, 'nothing new arrives at the removed endpoint');
    t.deepEqual(
      kept.map((s) => s.requests.filter((r) => r.path === '/version').length),
      [15, 15],
    );
    t.is(kept.map(watchesOn).reduce((x, y) => x + y), 1);
    await sleep(200);
    t.false(disconnected.includes(removed.authority), 'its connection stays open while requests run on it');

    release();
    for (const response of await Promise.all(slow)) {
      t.is(response.statusCode, 200);
      t.deepEqual(await response.body.json(), { slow: true });
    }
    t.is(await watch.body.text(), '{"type":"ADDED"}\n{"type":"BOOKMARK"}\n', 'the watch on the removed endpoint ran to its end');
    t.is(await next.body.text(), '{"type":"ADDED"}\n{"type":"BOOKMARK"}\n');
    await until(() => disconnected.includes(removed.authority), { what: 'the removed endpoint\'s pool to close' });
    t.false(kept.some((s) => disconnected.includes(s.authority)), 'the other endpoints keep their connections');
  } finally {
    release();
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});
