// Hedged requests, unit level on a fake clock: BalancedRequest with a real Hedging policy and
// retry budget over a host whose endpoints are scripted (one black-holed: it never answers).
import test from 'ava';
import type { Dispatcher } from 'undici';
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import { BalancedRequest } from '../../src/dispatcher/BalancedRequest.ts';
import { Hedging } from '../../src/dispatcher/Hedge.ts';
import type { RequestHost } from '../../src/dispatcher/RequestHost.ts';
import { RetryBudget } from '../../src/dispatcher/RetryBudget.ts';
import type { Route } from '../../src/net/tls.ts';
import { Totals } from '../../src/observability/stats.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { endpoint } from '../helpers/endpoints.ts';

type Handler = Dispatcher.DispatchHandler;
const ROUTE: Route = { key: 'https://kubernetes.default.svc kubernetes.default.svc kubernetes.default.svc h2', protocol: 'https:', host: 'kubernetes.default.svc', verification: { name: 'kubernetes.default.svc', sni: 'kubernetes.default.svc' }, http1Only: false };
const SETTINGS = { minDelayMs: 50, maxDelayMs: 250, percentile: 99 };

/** Three endpoints; `silent` ones take requests and never answer, the others answer at once. */
function setUp() {
  const clock = new FakeClock();
  const endpoints = [endpoint(1), endpoint(2), endpoint(3)];
  const silent = new Set<Endpoint>();
  const ejected = new Set<Endpoint>();
  const sent: Array<{ endpoint: Endpoint; method: string; aborted: boolean }> = [];
  let next = 0;
  const hedging = new Hedging(SETTINGS, clock, (e) => ejected.add(e));
  const budget = new RetryBudget(20, 3, clock);
  const host: RequestHost = {
    maxAttempts: 3,
    maxReplayBytes: 1024,
    maxHeldResponse: 1024,
    budget,
    totals: new Totals('static:///test'),
    clock,
    hedging,
    pick: (_longRunning, _probationOk, exclude) => {
      const ready = endpoints.filter((e) => !exclude?.has(e) && !ejected.has(e));
      return ready.length ? ready[next++ % ready.length] : undefined;
    },
    send: (e, _route, opts, handler) => {
      const record = { endpoint: e, method: opts.method, aborted: false };
      sent.push(record);
      const controller = { abort: () => (record.aborted = true), pause() {}, resume() {}, aborted: false, paused: false, reason: null, rawHeaders: null, rawTrailers: null } as unknown as Dispatcher.DispatchController;
      handler.onRequestStart?.(controller, {});
      if (silent.has(e)) return;
      queueMicrotask(() => {
        if (record.aborted) return;
        handler.onResponseStart?.(controller, 200, { 'content-type': 'application/json' }, 'OK');
        handler.onResponseData?.(controller, Buffer.from('{}'));
        handler.onResponseEnd?.(controller, {});
      });
    },
    attemptStarted: () => NaN,
    // As the balancer's judge does: successes earn retry credit.
    attemptEnded: (_e, _long, outcome) => void (outcome.type === 'response' && budget.earn(clock.now())),
    retrying: () => {},
    noEndpoints: () => new Error('none') as never,
  };
  /** Starts a request; `done` is the clock time it completed (or failed), undefined while running. */
  const request = (method = 'GET', path = '/api/v1/namespaces/default/configmaps/a', longRunning = false) => {
    const result: { startedAt: number; done?: number; status?: number; error?: Error } = { startedAt: clock.now() };
    const downstream: Handler = {
      onRequestStart() {},
      onResponseStart: (_c, status) => void (result.status = status),
      onResponseData() {},
      onResponseEnd: () => void (result.done = clock.now()),
      onResponseError: (_c, error) => {
        result.error = error;
        result.done = clock.now();
      },
    };
    new BalancedRequest(host, ROUTE, { origin: 'https://kubernetes.default.svc', method: method, path }, downstream, longRunning, longRunning).start();
    return result;
  };
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
  /** Advances the clock in 10 ms steps, letting answers through between them. */
  const run = async (ms: number) => {
    for (let t = 0; t < ms; t += 10) {
      clock.advance(10);
      await flush();
    }
  };
  return { clock, endpoints, silent, ejected, sent, hedging, host, request, flush, run };
}

test('a black-holed endpoint costs no GET more than the hedge bound: each is hedged to another endpoint, and the silent one is reported', async (t) => {
  const { endpoints, silent, ejected, hedging, request, flush, run } = setUp();
  // Steady state: answers at once, so the hedge delay falls to its floor and hedges are earned (100, the most).
  for (let i = 0; i < 1500; i++) {
    const r = request();
    await flush();
    t.is(r.status, 200);
  }
  t.is(hedging.hedges, 0, 'no hedges while every endpoint answers');
  t.is(hedging.delayMs, SETTINGS.minDelayMs);
  silent.add(endpoints[0]!);
  const during = [];
  for (let i = 0; i < 30; i++) {
    during.push(request());
    await run(10);
  }
  await run(600);
  const latencies = during.map((r) => (r.done ?? Infinity) - r.startedAt);
  t.log(`max GET latency across the black hole: ${Math.max(...latencies)} ms (fake clock); hedges: ${hedging.hedges}`);
  t.true(during.every((r) => r.status === 200 && !r.error), 'every GET succeeded');
  t.true(Math.max(...latencies) <= 500, 'no GET over 500 ms');
  t.true(hedging.hedges > 0 && hedging.hedges <= 10, 'only the GETs sent to the silent endpoint were hedged');
  t.true(ejected.has(endpoints[0]!), 'the silent endpoint is reported after hedges keep winning against it');
});

test('writes, watches and long-running requests are never hedged; hedges stop when none are earned or the retry budget is spent', async (t) => {
  const { endpoints, silent, sent, hedging, host, request, flush, run } = setUp();
  for (let i = 0; i < 300; i++) {
    request();
    await flush();
  }
  silent.add(endpoints[0]!);
  silent.add(endpoints[1]!);
  silent.add(endpoints[2]!);
  const before = sent.length;
  const post = request('POST', '/api/v1/namespaces/default/configmaps');
  const watch = request('GET', '/api/v1/namespaces/default/configmaps?watch=true', true);
  const log = request('GET', '/api/v1/namespaces/default/pods/p/log?follow=true', true);
  await run(1000);
  t.is(sent.length - before, 3, 'one attempt each, no hedge');
  t.is(hedging.hedges, 0);
  t.true([post, watch, log].every((r) => r.done === undefined));

  // Only the hedges earned (2 per 100 answered requests: 6 here) are spent, and each within the retry budget.
  const gets = Array.from({ length: 20 }, () => request());
  await run(1000);
  t.is(hedging.hedges, 6, 'no more hedges than earned');
  t.true(host.budget.retries <= 6, 'each hedge holds a unit of the retry budget');
  t.true(gets.every((r) => r.done === undefined));
});

test('with no hedge earned yet, a request waits on its endpoint as before', async (t) => {
  const { endpoints, silent, hedging, request, run } = setUp();
  silent.add(endpoints[0]!);
  const r = request();
  await run(1000);
  t.is(hedging.hedges, 0);
  t.is(r.done, undefined);
});

test('hedge options: off by default, {} for the defaults, bounds validated', async (t) => {
  const { resolveOptions } = await import('../../src/options/validate.ts');
  t.is(resolveOptions({ origin: 'https://kubernetes.default.svc', target: 'static:///127.0.0.2:6443' }).hedge, false);
  t.deepEqual(resolveOptions({ origin: 'https://kubernetes.default.svc', target: 'static:///127.0.0.2:6443', hedge: {} }).hedge, SETTINGS);
  t.throws(() => resolveOptions({ origin: 'https://kubernetes.default.svc', target: 'static:///127.0.0.2:6443', hedge: { minDelayMs: 100, maxDelayMs: 50 } }), { message: /hedge\.maxDelayMs/ });
  t.throws(() => resolveOptions({ origin: 'https://kubernetes.default.svc', target: 'static:///127.0.0.2:6443', hedge: { percentile: 100 } }), { message: /hedge\.percentile/ });
});
