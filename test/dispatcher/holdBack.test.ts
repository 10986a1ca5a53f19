// Short GETs whose apiserver dies mid-response: held back until complete, retried elsewhere when
// the connection breaks first; larger responses stream; writes are never retried.
import diagnostics_channel from 'node:diagnostics_channel';
import type { ServerResponse } from 'node:http';
import test from 'ava';
import * as undici from 'undici';
import { ApiserverCluster, RESOURCES } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { sendJson, startServers, staticTarget, type TestServer } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { HOSTS, ORIGIN } from '../helpers/balancer.ts';
import { load } from '../helpers/load.ts';
import { until } from '../helpers/poll.ts';

const BODY = JSON.stringify({ kind: 'ConfigMap', data: { text: 'x'.repeat(4000) } });

/**
 * Servers that answer `/half` with the head and half the body and then stall; the rest whole.
 * The balancers over them do not hedge: on a busy machine a first GET waits past the 250-ms hedge
 * delay for its TLS handshake, and a hedge (not the held-back retry) would then rescue it.
 */
async function halfServers(): Promise<{ servers: TestServer[]; stalled: ServerResponse[] }> {
  const stalled: ServerResponse[] = [];
  const servers = await startServers(HOSTS.slice(0, 2), {
    h2: false,
    handler: (req, res) => {
      const r = res as ServerResponse;
      r.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) });
      if (req.url?.startsWith('/half') && stalled.length === 0) {
        r.write(BODY.slice(0, 1000));
        stalled.push(r);
      } else r.end(BODY);
    },
  });
  return { servers, stalled };
}

test('a GET whose connection breaks mid-body is retried on another endpoint; the caller sees only the whole response', async (t) => {
  const { servers, stalled } = await halfServers();
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false });
  const retries: string[] = [];
  balancer.on('retry', (e) => retries.push(e.reason));
  try {
    let headersAt = 0;
    const pending = undici.request(`${ORIGIN}/half`, { dispatcher: balancer }).then(async (res) => {
      headersAt = Date.now();
      return { status: res.statusCode, text: await res.body.text() };
    });
    await until(() => stalled.length === 1, { what: 'a response stalled mid-body' });
    t.is(headersAt, 0, 'nothing reaches the caller while the response is incomplete');
    stalled[0]!.socket!.destroy();
    const { status, text } = await pending;
    t.is(status, 200);
    t.is(text, BODY);
    t.deepEqual(retries, ['reset']);
    t.is(balancer.stats().totals.failed, 0);
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('a response larger than maxHeldResponse streams as it arrives (and its break reaches the caller); a POST is never held', async (t) => {
  const { servers, stalled } = await halfServers();
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false, maxHeldResponse: 500 });
  try {
    const res = await undici.request(`${ORIGIN}/half`, { dispatcher: balancer });
    let received = 0;
    res.body.on('data', (chunk: Buffer) => (received += chunk.length));
    const ended = new Promise<unknown>((resolve) => res.body.once('end', () => resolve('end')).once('error', resolve));
    await until(() => received === 1000, { what: 'the first half to stream through' });
    stalled[0]!.socket!.destroy();
    t.like(await ended, { code: 'UND_ERR_SOCKET' });

    stalled.length = 0;
    const write = await undici.request(`${ORIGIN}/half`, { dispatcher: balancer, method: 'POST', body: '{}' });
    t.is(write.statusCode, 200, 'a write gets its headers while its body is still incomplete');
    write.body.on('error', () => {});
    await until(() => stalled.length === 1);
    stalled[0]!.socket!.destroy();
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('maxHeldResponse is validated', (t) => {
  t.throws(() => createBalancer({ origin: ORIGIN, target: 'static:///127.0.0.2:6443', maxHeldResponse: -1 }), { message: /maxHeldResponse/ });
});

test.serial('an apiserver crashes while response bodies are being written: 0 of the GETs in flight fail', async (t) => {
  const cluster = await ApiserverCluster.start();
  for (let i = 0; i < 20; i++) cluster.store.create(RESOURCES.configmaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: 'default' }, data: { text: 'x'.repeat(2000) } });
  // Every body goes out in two halves 30 ms apart: at any moment most GETs in flight are mid-body.
  // No hedges: on a busy machine they raced (and won) the GETs caught there, leaving no retry to see.
  cluster.setModes({ bodyPauseMs: 30 });
  const balancer = createBalancer({ origin: `https://kubernetes.default.svc:${cluster.port}`, target: cluster.target, tls: { ca: certs.ca }, probe: false, hedge: false });
  const victim = cluster.instances[1]!;
  try {
    const origin = `https://kubernetes.default.svc:${cluster.port}`;
    const headers = cluster.authHeaders;
    let sent = 0;
    // Each GET's path names it (`i`), so that a head the victim sent can be told apart once read here.
    const heads = new Set<string>();
    const onHeaders = (message: unknown): void => {
      const { request } = message as { request: { origin?: string; path: string } };
      if (request.origin === victim.url) heads.add(request.path);
    };
    diagnostics_channel.subscribe('undici:request:headers', onHeaders);
    t.teardown(() => diagnostics_channel.unsubscribe('undici:request:headers', onHeaders));
    const results = load(600, 24, async (i) => {
      sent++;
      const path = `${i % 2 ? '/api/v1/namespaces/default/configmaps' : `/api/v1/namespaces/default/configmaps/cm-${i % 20}`}?i=${i}`;
      const res = await undici.request(`${origin}${path}`, { dispatcher: balancer, headers });
      const body = (await res.body.json()) as { kind?: string };
      if (res.statusCode !== 200 || !body.kind) throw new Error(`status ${res.statusCode}`);
      return res.statusCode;
    });
    await until(() => sent >= 150, { what: 'the load to be under way' });
    // From here the victim writes half of each body and stalls until it crashes: with the 30-ms
    // pause alone, a busy machine ran both halves' timers before the crash and the GETs "in flight"
    // there were whole in our socket buffers (seen: 5 in flight, none broken, in two loaded runs).
    const mark = victim.requests.length;
    victim.setModes({ bodyPauseMs: 600_000 });
    // Mid-body on our side too: the victim having written a head is not enough, for on a busy
    // machine the crash's reset could come before this process had read it, and every GET there
    // broke before its response started (no mid-body retry to see).
    await until(() => victim.requests.slice(mark).some((r) => r.status === 200 && heads.has(r.path)), { what: 'a GET on the victim to be mid-body, its head read here' });
    const inFlightThere = balancer.endpoints().find((e) => e.key === victim.authority)!.inFlight;
    await victim.crash();
    const done = await results;
    const failed = done.filter((r) => r.error);
    t.log(`GETs in flight on the crashed apiserver: ${inFlightThere}; retried after a mid-body break: ${balancer.stats().totals.retries.reset}; retries: ${JSON.stringify(balancer.stats().totals.retries)}`);
    t.true(inFlightThere > 0, 'the crash caught GETs in flight');
    t.true(balancer.stats().totals.retries.reset > 0, 'some responses broke mid-body and were retried');
    t.deepEqual(failed.map((r) => r.error?.message), [], 'no GET failed');
  } finally {
    await balancer.close();
    await cluster.close();
  }
});

/** Sends a GET through `balancer.dispatch` and records what its handler is told, in order. */
function recordedGet(balancer: ReturnType<typeof createBalancer>, abortAtHead = false): Promise<string[]> {
  return new Promise((resolve) => {
    const seen: string[] = [];
    balancer.dispatch(
      { origin: ORIGIN, path: '/api/v1/namespaces/default/configmaps/held', method: 'GET' },
      {
        onRequestStart: () => {},
        onResponseStart: (controller, statusCode) => {
          seen.push(`start ${statusCode}`);
          if (abortAtHead) controller.abort(new Error('enough'));
        },
        onResponseData: (_controller, chunk) => void seen.push(`data ${chunk.length}`),
        onResponseEnd: () => resolve([...seen, 'end']),
        onResponseError: (_controller, error) => resolve([...seen, `error ${error.message}`]),
      },
    );
  });
}

test('a held response reaches its handler as a Pool hands one over — head, body, end — alone and with other GETs in flight; a handler that aborts at the head gets none of the body', async (t) => {
  const servers = await startServers(HOSTS.slice(0, 1), { handler: (_req, res) => sendJson(res, 200, JSON.parse(BODY)) });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false });
  const whole = (seen: string[]): boolean => seen[0] === 'start 200' && seen.at(-1) === 'end' && seen.slice(1, -1).every((s) => s.startsWith('data ')) && seen.slice(1, -1).reduce((n, s) => n + Number(s.slice(5)), 0) === BODY.length;
  try {
    // Alone: everything at once. Together: the body and end follow the head (see BalancedRequest.completedHeld).
    t.true(whole(await recordedGet(balancer)), 'a lone GET');
    const together = await Promise.all(Array.from({ length: 16 }, () => recordedGet(balancer)));
    t.true(together.every(whole), JSON.stringify(together.filter((s) => !whole(s))));
    for (const others of [0, 8]) {
      const rest = Array.from({ length: others }, () => recordedGet(balancer));
      const aborted = await recordedGet(balancer, true);
      t.is(aborted[0], 'start 200');
      t.false(aborted.some((s) => s.startsWith('data ')), `no body after the abort (${others} others in flight): ${aborted.join(', ')}`);
      t.true((await Promise.all(rest)).every(whole));
    }
    t.is(balancer.stats().totals.inFlight, 0);
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});
