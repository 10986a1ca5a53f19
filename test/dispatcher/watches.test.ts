// Watches end only at event boundaries: when their connection breaks, and when watch rebalancing
// moves them to an endpoint that joined. And TLS credentials replaced while requests run.
import type { ServerResponse } from 'node:http';
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { sendJson, startServers, type Response, type TestServer } from '../../fixtures/server/TestServer.ts';
import { balancerInternals } from '../../src/dispatcher/internals.ts';
import { createBalancer } from '../../src/index.ts';
import { ORIGIN } from '../helpers/balancer.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { until } from '../helpers/poll.ts';
import { addressOf, pushResolver } from '../helpers/pushResolver.ts';

const WATCH = '/api/v1/namespaces/default/configmaps?watch=true';
const FIRST = '{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}}\n';
// The start of a second event, cut where a TCP segment might end.
const PARTIAL = '{"type":"MODIFIED","object":{"metad';

/** Servers that hold every watch open after one complete event and half of another. */
async function watchServers(hosts: string[]): Promise<{ servers: TestServer[]; open: Array<{ server: TestServer; res: Response }> }> {
  const open: Array<{ server: TestServer; res: Response }> = [];
  const servers = await startServers(hosts, {
    handler: (req, res, server) => {
      if (!/[?&]watch/.test(req.url ?? '')) return sendJson(res, 200, { server: server.name });
      (res as ServerResponse).writeHead(200, { 'content-type': 'application/json' });
      (res as ServerResponse).write(FIRST);
      (res as ServerResponse).write(PARTIAL);
      open.push({ server, res });
    },
  });
  return { servers, open };
}


// Every spelling kube-apiserver takes for a watch (apimachinery's query booleans) is one here too.
for (const watch of ['watch=true', 'watch=True', 'watch=t', 'watch']) {
  test(`a watch (${watch}) whose apiserver crashes mid-event ends cleanly after its last complete event; health still sees the failure`, async (t) => {
    const { servers } = await watchServers(['127.0.0.2']);
    const balancer = createBalancer({ origin: ORIGIN, target: `static:///${servers[0]!.authority}`, tls: { ca: certs.ca }, probe: false });
    try {
      const res = await undici.request(`${ORIGIN}/api/v1/namespaces/default/configmaps?${watch}`, { dispatcher: balancer });
      t.is(res.statusCode, 200);
      let text = '';
      res.body.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      await until(() => text.length > 0, { what: 'the first event' });
      await servers[0]!.crash();
      await new Promise<void>((resolve, reject) => res.body.once('end', resolve).once('error', reject));
      t.is(text, FIRST, 'only whole events, and the end of the stream instead of an error');
      t.like(balancer.endpoints()[0], { streams: 0, inFlight: 0, failures: 1 });
    } finally {
      await balancer.close();
      await Promise.all(servers.map((s) => s.close()));
    }
  });
}

const GRACE_MS = 30_000;

test('a fourth endpoint: once its watch cache is a minute old, watches move over one per 1/maxPerSecond, oldest first, each ending at an event boundary, up to its quota', async (t) => {
  const { servers, open } = await watchServers(['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']);
  const [a, b, c, d] = servers as [TestServer, TestServer, TestServer, TestServer];
  const clock = new FakeClock();
  const resolver = pushResolver([a, b, c].map(addressOf));
  const logged: unknown[] = [];
  const logger = { debug: () => {}, info: (fields: Record<string, unknown>) => void logged.push(fields), warn: () => {}, error: () => {} };
  const balancer = createBalancer({ origin: ORIGIN, target: resolver, tls: { ca: certs.ca }, probe: false, clock, slowStartMs: 0, rebalanceWatches: { maxPerSecond: 1, graceMs: GRACE_MS }, logger });
  const moves: string[] = [];
  const movedAt: number[] = [];
  balancer.on('rebalance', ({ from, to }) => {
    moves.push(`${from.address}→${to.address}`);
    movedAt.push(clock.now());
  });
  const ended: string[] = [];
  try {
    const watches = [];
    for (let i = 0; i < 9; i++) {
      const res = await undici.request(`${ORIGIN}${WATCH}&i=${i}`, { dispatcher: balancer });
      let text = '';
      res.body.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.body.on('end', () => ended.push(text));
      watches.push(res);
    }
    await until(() => open.length === 9, { what: 'nine open watches' });
    t.deepEqual(balancer.endpoints().map((e) => e.streams), [3, 3, 3]);

    resolver.push([a, b, c, d].map(addressOf));
    clock.advance(GRACE_MS - 1);
    t.is(moves.length, 0, 'nothing moves onto a fresh watch cache');
    // Then the first move, within the grace's random spread.
    for (let waited = 0; moves.length === 0 && waited < GRACE_MS; waited += 100) clock.advance(100);
    t.is(moves.length, 1);
    await until(() => ended.length === 1, { what: 'the moved watch to end' });
    t.deepEqual(ended, [FIRST], 'the moved watch ends after its last complete event');
    // From an endpoint above its quota (which one depends on this client's rounding), its oldest watch.
    const fromHost = moves[0]!.split('→')[0];
    t.is(moves[0], `${fromHost}→127.0.0.5`);
    const oldest = open.find(({ server }) => server.host === fromHost)!;
    await until(() => (oldest.res as ServerResponse).req.socket.destroyed || (oldest.res as ServerResponse).closed, { what: 'the oldest watch there to be the one ended' });
    t.like(logged.find((f) => (f as { event: string }).event === 'rebalance'), { event: 'rebalance', from: `${oldest.server.host}:${oldest.server.port}`, to: d.authority });

    clock.advance(movedAt[0]! + 999 - clock.now());
    t.is(moves.length, 1, 'no second move within the second');
    clock.advance(1);
    t.is(moves.length, 2);
    await until(() => ended.length === 2);
    // 9 watches over 4 endpoints: the newcomer's quota is 2 or 3 (2.25 on average over clients);
    // once the moved watches are counted where they are headed, nothing more moves.
    clock.advance(5000);
    t.true(moves.length === 2 || moves.length === 3, `${moves.length} moves`);
    const moved = moves.length;
    clock.advance(5000);
    t.is(moves.length, moved, 'balanced');
    t.true(moves.every((move) => move.endsWith('→127.0.0.5')));

    // The clients re-watch: the newcomer fills up.
    for (let i = 0; i < moved; i++) watches.push(await undici.request(`${ORIGIN}${WATCH}&again=${i}`, { dispatcher: balancer }));
    await until(() => open.length === 9 + moved);
    t.deepEqual(balancer.endpoints().map((e) => e.streams).sort(), [2, 2, 2, 3]);
    t.true(d.requests.length >= 2 && d.requests.length <= moved);
    t.true(ended.every((text) => text === FIRST));
  } finally {
    for (const { res } of open) res.destroy();
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('watch rebalancing off: an endpoint that joins takes new watches only', async (t) => {
  const { servers, open } = await watchServers(['127.0.0.2', '127.0.0.3']);
  const [a, b] = servers as [TestServer, TestServer];
  const clock = new FakeClock();
  const resolver = pushResolver([addressOf(a)]);
  const balancer = createBalancer({ origin: ORIGIN, target: resolver, tls: { ca: certs.ca }, probe: false, clock, rebalanceWatches: false });
  let moves = 0;
  balancer.on('rebalance', () => moves++);
  try {
    for (let i = 0; i < 4; i++) await undici.request(`${ORIGIN}${WATCH}`, { dispatcher: balancer });
    resolver.push([a, b].map(addressOf));
    clock.advance(10_000);
    t.is(moves, 0);
    t.deepEqual(balancer.endpoints().map((e) => e.streams), [4, 0]);
  } finally {
    for (const { res } of open) res.destroy();
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test.serial('replaced TLS credentials: new connections use them, a watch on the old connection runs on; the same material changes nothing', async (t) => {
  const { servers, open } = await watchServers(['127.0.0.2']);
  const server = servers[0]!;
  const balancer = createBalancer({ origin: ORIGIN, target: `static:///${server.authority}`, tls: { ca: certs.ca }, probe: false });
  const internals = balancerInternals(balancer);
  try {
    const watch = await undici.request(`${ORIGIN}${WATCH}`, { dispatcher: balancer });
    await (await undici.request(`${ORIGIN}/version`, { dispatcher: balancer })).body.dump();
    t.is(server.connections, 2, 'watches have a connection of their own');

    t.false(internals.replaceTls({ ca: Buffer.from(certs.ca) }), 'the same CA, as a fresh Buffer');
    await (await undici.request(`${ORIGIN}/version`, { dispatcher: balancer })).body.dump();
    t.is(server.connections, 2);

    t.true(internals.replaceTls({ ca: [certs.ca, certs.foreignCa] }));
    await (await undici.request(`${ORIGIN}/version`, { dispatcher: balancer })).body.dump();
    t.is(server.connections, 3, 'a new connection with the new settings');
    t.is(balancer.endpoints()[0]!.streams, 1, 'the watch still runs on the old connection');
    let text = '';
    watch.body.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    open[0]!.res.end('"x"}}\n');
    await new Promise((resolve) => watch.body.once('end', resolve));
    t.is(text, `${FIRST}${PARTIAL}"x"}}\n`);

    t.true(internals.replaceTls({ ca: certs.foreignCa }));
    const failed = await undici.request(`${ORIGIN}/version`, { dispatcher: balancer }).then(
      () => undefined,
      (error: Error) => error,
    );
    t.truthy(failed, 'a CA that does not sign the server fails verification');
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});
