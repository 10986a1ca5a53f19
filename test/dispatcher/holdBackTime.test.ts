// A short GET whose body trickles: held until complete only within HOLD_MS, then the caller gets its
// head and the body as it comes (chaos seed 1 schedule 3); a break before the bound is still retried.
import type { ServerResponse } from 'node:http';
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { HOLD_MS } from '../../src/dispatcher/HoldBack.ts';
import { HOSTS, ORIGIN } from '../helpers/balancer.ts';
import { until } from '../helpers/poll.ts';

const TRICKLE = 'abcdefghijklmnopq'; // 17 bytes, one every 300 ms: about 5 s.
const BODY = JSON.stringify({ kind: 'ConfigMap', data: { text: 'x'.repeat(2000) } });
/** A busy machine (2 cores, several test runs) may be late by this much. */
const SLACK_MS = 1500;

test('a 200 whose body trickles reaches the caller within HOLD_MS: its head, then every byte; it is not retried', async (t) => {
  const timers = new Set<NodeJS.Timeout>();
  const servers = await startServers(HOSTS.slice(0, 2), {
    h2: false,
    handler: (_req, res) => {
      const r = res as ServerResponse;
      r.writeHead(200, { 'content-type': 'text/plain', 'content-length': TRICKLE.length });
      let sent = 0;
      const timer = setInterval(() => {
        r.write(TRICKLE[sent++]);
        if (sent < TRICKLE.length) return;
        clearInterval(timer);
        timers.delete(timer);
        r.end();
      }, 300);
      timers.add(timer);
    },
  });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false });
  const retries: string[] = [];
  balancer.on('retry', (e) => retries.push(e.reason));
  try {
    const sentAt = Date.now();
    const res = await undici.request(`${ORIGIN}/trickle`, { dispatcher: balancer });
    const headersAfter = Date.now() - sentAt;
    t.log(`headers after ${headersAfter} ms (HOLD_MS ${HOLD_MS})`);
    t.is(res.statusCode, 200);
    t.true(headersAfter < HOLD_MS + SLACK_MS, `headers after ${headersAfter} ms`);
    t.is(await res.body.text(), TRICKLE);
    t.deepEqual(retries, []);
    t.is(balancer.stats().totals.failed, 0);
  } finally {
    for (const timer of timers) clearInterval(timer);
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('a held GET that breaks mid-body within HOLD_MS is still retried whole; one that breaks after it was handed over reaches the caller broken', async (t) => {
  const stalled: ServerResponse[] = [];
  const servers = await startServers(HOSTS.slice(0, 2), {
    h2: false,
    handler: (_req, res) => {
      const r = res as ServerResponse;
      r.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) });
      if (stalled.length === 0) {
        r.write(BODY.slice(0, 1000));
        stalled.push(r);
      } else r.end(BODY);
    },
  });
  const balancer = createBalancer({ origin: ORIGIN, target: staticTarget(servers), tls: { ca: certs.ca }, probe: false, hedge: false });
  const retries: string[] = [];
  balancer.on('retry', (e) => retries.push(e.reason));
  try {
    let headersAt = 0;
    const retried = undici.request(`${ORIGIN}/a`, { dispatcher: balancer }).then(async (res) => {
      headersAt = Date.now();
      return { status: res.statusCode, text: await res.body.text() };
    });
    await until(() => stalled.length === 1, { what: 'a response stalled mid-body' });
    t.is(headersAt, 0, 'nothing reaches the caller while the response is held');
    stalled[0]!.socket!.destroy();
    t.deepEqual(await retried, { status: 200, text: BODY });
    t.deepEqual(retries, ['reset']);

    // Stalled past HOLD_MS: the caller has its head and the first half; the break is then its own.
    stalled.length = 0;
    retries.length = 0;
    const res = await undici.request(`${ORIGIN}/b`, { dispatcher: balancer });
    t.is(res.statusCode, 200);
    let received = 0;
    res.body.on('data', (chunk: Buffer) => (received += chunk.length));
    const ended = new Promise<unknown>((resolve) => res.body.once('end', () => resolve('end')).once('error', resolve));
    await until(() => received === 1000, { what: 'the held half to be handed over' });
    stalled[0]!.socket!.destroy();
    t.like(await ended, { code: 'UND_ERR_SOCKET' });
    t.deepEqual(retries, [], 'no retry after the hand-over');
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});
