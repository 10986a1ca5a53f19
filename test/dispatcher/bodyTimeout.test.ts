// The body timeout (the longest silence between two pieces of a response body) is kept by the
// request itself, not by undici (see src/dispatcher/BodyTimer.ts): same defaults, same error, and
// like undici's it does not count while the caller holds the body back.
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget, type TestServer } from '../../fixtures/server/TestServer.ts';
import { createBalancer, type Balancer } from '../../src/index.ts';
import { HOLD_MS } from '../../src/dispatcher/HoldBack.ts';
import { ORIGIN } from '../helpers/balancer.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { until } from '../helpers/poll.ts';

type Controller = undici.Dispatcher.DispatchController;

/** A server that sends response headers and one line of body, then says nothing more. */
async function silentServer(): Promise<{ server: TestServer; open: Map<string, ServerResponse> }> {
  const open = new Map<string, ServerResponse>();
  const [server] = await startServers(['127.0.0.2'], {
    handler: (req, res) => {
      (res as ServerResponse).writeHead(200, { 'content-type': 'application/json' });
      (res as ServerResponse).write('{"kind":"ConfigMapList","items":[\n');
      open.set(req.url ?? '', res as ServerResponse);
    },
  });
  return { server: server!, open };
}

/** `maxHeldResponse: 0` by default: short GETs stream to the caller instead of being held until complete. */
async function setUp(maxHeldResponse = 0): Promise<{ balancer: Balancer; clock: FakeClock; open: Map<string, ServerResponse>; close: () => Promise<void> }> {
  const { server, open } = await silentServer();
  const clock = new FakeClock();
  const balancer = createBalancer({ target: staticTarget([server]), origin: ORIGIN, tls: { ca: certs.ca }, probe: false, clock, maxHeldResponse });
  return {
    balancer,
    clock,
    open,
    close: async () => {
      await balancer.destroy();
      await server.close();
    },
  };
}

/**
 * Waits for the first chunk of a body (sent with the headers, so the fake clock's "now" is when it
 * came), then reads the rest: the promise settles when the body ends or fails.
 */
async function rest(body: Readable): Promise<{ read: Promise<void> }> {
  const chunks = body[Symbol.asyncIterator]();
  await chunks.next();
  const read = (async () => {
    while (!(await chunks.next()).done);
  })();
  read.catch(() => {});
  return { read };
}

/** 'pending' if the body has neither failed nor ended within a few ticks. */
async function bodyOutcome(body: Promise<unknown>): Promise<unknown> {
  return Promise.race([body.then(() => 'ended', (error: Error) => error), new Promise((resolve) => setTimeout(() => resolve('pending'), 50))]);
}

const timedOut = { instanceOf: undici.errors.BodyTimeoutError, code: 'UND_ERR_BODY_TIMEOUT' };

test('a short request whose body goes silent fails after 300 s, undici\'s default, with its BodyTimeoutError (fake clock)', async (t) => {
  const { balancer, clock, close } = await setUp();
  try {
    const res = await undici.request(`${ORIGIN}/api/v1/configmaps`, { dispatcher: balancer });
    const { read: body } = await rest(res.body);
    clock.advance(299_999);
    t.is(await bodyOutcome(body), 'pending');
    clock.advance(1);
    await t.throwsAsync(body, timedOut);
  } finally {
    await close();
  }
});

test('a short GET held until complete (the default) whose body goes silent is handed over after HOLD_MS, then times out after 300 s: no retry, the caller saw its head (fake clock)', async (t) => {
  const { balancer, clock, open, close } = await setUp(1024 * 1024);
  try {
    const request = undici.request(`${ORIGIN}/api/v1/configmaps`, { dispatcher: balancer });
    request.catch(() => {});
    const before = clock.pending;
    await until(() => open.get('/api/v1/configmaps'));
    // Nothing reaches the caller while it is held: wait for the clock timers instead, or, on a slow
    // machine, the steps below may pass before the response headers come.
    await until(() => clock.pending > before, { what: 'the response headers to reach the balancer' });
    t.is(await bodyOutcome(request), 'pending', 'held');
    clock.advance(HOLD_MS);
    const res = await request;
    t.is(res.statusCode, 200);
    const { read: body } = await rest(res.body);
    clock.advance(300_000 - HOLD_MS - 1);
    t.is(await bodyOutcome(body), 'pending');
    // Twice the timeout in all: the chunk sent with the headers may have come after the first step.
    clock.advance(300_001);
    await t.throwsAsync(body, timedOut);
    t.is(balancer.stats().totals.retries.timeout, 0);
  } finally {
    await close();
  }
});

test('a held GET whose own bodyTimeout is shorter than HOLD_MS times out while held and may be retried: the caller saw none of it (fake clock)', async (t) => {
  const { balancer, clock, open, close } = await setUp(1024 * 1024);
  try {
    const request = undici.request(`${ORIGIN}/api/v1/configmaps`, { dispatcher: balancer, bodyTimeout: 400 });
    request.catch(() => {});
    const before = clock.pending;
    await until(() => open.get('/api/v1/configmaps'));
    await until(() => clock.pending > before, { what: 'the response headers to reach the balancer' });
    clock.advance(399);
    t.is(await bodyOutcome(request), 'pending');
    // Twice the timeout in all, still short of HOLD_MS: the chunk may have come after the first step.
    clock.advance(401);
    // One endpoint, so the retry finds none: the error names the body timeout as its cause.
    const error = await t.throwsAsync(request, { code: 'ERR_ALL_ENDPOINTS_FAILED' });
    t.true(error?.cause instanceof undici.errors.BodyTimeoutError, String(error?.cause));
  } finally {
    await close();
  }
});

test('a request\'s own bodyTimeout is kept; a watch has none unless it asks (fake clock)', async (t) => {
  const { balancer, clock, open, close } = await setUp();
  try {
    const short = await undici.request(`${ORIGIN}/api/v1/configmaps`, { dispatcher: balancer, bodyTimeout: 5_000 });
    const watch = await undici.request(`${ORIGIN}/api/v1/configmaps?watch=true`, { dispatcher: balancer });
    const { read: shortBody } = await rest(short.body);
    const { read: watchBody } = await rest(watch.body);
    const shortResponse = await until(() => open.get('/api/v1/configmaps'));
    clock.advance(4_000);
    const data = once(short.body, 'data');
    shortResponse.write('{"metadata":{"name":"a"}},\n');
    await data;
    clock.advance(4_000);
    t.is(await bodyOutcome(shortBody), 'pending', 'data restarts the wait');
    clock.advance(1_000);
    await t.throwsAsync(shortBody, timedOut);
    clock.advance(10_000_000);
    t.is(await bodyOutcome(watchBody), 'pending');
  } finally {
    await close();
  }
});

test('while the caller pauses the body the silence does not count; resuming starts the wait afresh (fake clock)', async (t) => {
  const { balancer, clock, close } = await setUp();
  try {
    let controller: Controller | undefined;
    let failure: Error | undefined;
    let chunks = 0;
    balancer.dispatch(
      { origin: ORIGIN, path: '/api/v1/configmaps', method: 'GET' },
      {
        onRequestStart: (c) => void (controller = c),
        onResponseStart: (c) => c.pause(),
        onResponseData: () => void chunks++,
        onResponseEnd: () => {},
        onResponseError: (_c, error) => void (failure = error),
      },
    );
    await until(() => controller?.paused === true);
    clock.advance(1_000_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    t.is(failure, undefined);
    t.is(chunks, 0);
    controller!.resume();
    // The chunk sent with the headers comes now; the wait starts from the resume either way.
    await until(() => chunks > 0);
    clock.advance(299_999);
    await new Promise((resolve) => setTimeout(resolve, 50));
    t.is(failure, undefined);
    clock.advance(1);
    t.like(await until(() => failure), { code: 'UND_ERR_BODY_TIMEOUT' });
  } finally {
    await close();
  }
});

test('close() is graceful for a body in flight: it still times out, and then close() resolves (fake clock)', async (t) => {
  const { balancer, clock, close } = await setUp();
  try {
    const res = await undici.request(`${ORIGIN}/api/v1/configmaps`, { dispatcher: balancer, bodyTimeout: 5_000 });
    const { read: body } = await rest(res.body);
    const closed = balancer.close();
    clock.advance(4_999);
    t.is(await bodyOutcome(body), 'pending');
    clock.advance(1);
    await t.throwsAsync(body, timedOut);
    // Its request over, the pools close; before, the body went untimed and the close waited for ever.
    t.is(await Promise.race([closed.then(() => 'closed'), new Promise((resolve) => setTimeout(resolve, 5_000, 'still closing'))]), 'closed');
    t.is(clock.pending, 0, 'no timer left');
  } finally {
    await close();
  }
});
