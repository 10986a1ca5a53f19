// A `RequestHost` for unit tests of `BalancedRequest` on a fake clock, with no sockets: the fields
// every such test sets alike, a controller for a fake send, and a request whose outcome is recorded.
import type { Dispatcher } from 'undici';
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import { BalancedRequest } from '../../src/dispatcher/BalancedRequest.ts';
import { BodyTimers } from '../../src/dispatcher/BodyTimer.ts';
import type { Hedging } from '../../src/dispatcher/Hedge.ts';
import type { RequestHost } from '../../src/dispatcher/RequestHost.ts';
import type { RetryBudget } from '../../src/dispatcher/RetryBudget.ts';
import type { Route } from '../../src/net/tls.ts';
import { Totals } from '../../src/observability/stats.ts';
import type { FakeClock } from './FakeClock.ts';

export const ROUTE: Route = { key: 'https://kubernetes.default.svc kubernetes.default.svc kubernetes.default.svc h2', protocol: 'https:', host: 'kubernetes.default.svc', hostHeaders: { host: 'kubernetes.default.svc' }, verification: { name: 'kubernetes.default.svc', sni: 'kubernetes.default.svc' }, http1Only: false };

/** The host's limits and parts that do not vary between these tests (3 attempts, 1 KiB replayed and held). */
export function hostParts(clock: FakeClock, budget: RetryBudget, hedging: Hedging | undefined) {
  return {
    maxAttempts: 3,
    maxReplayBytes: 1024,
    maxHeldResponse: 1024,
    budget,
    totals: new Totals('static:///test'),
    clock,
    bodyTimers: new BodyTimers(clock),
    hedging,
    // As `EndpointSet.toMeasure` for a lagging endpoint picked: a copy measures it (Explore.ts).
    toMeasure: (picked: Endpoint) => (picked.lagging ? picked : undefined),
    retrying: () => {},
    noEndpoints: () => new Error('none') as never,
  } satisfies Partial<RequestHost>;
}

/** A controller for a fake send: `abort` marks `record` aborted. */
export function fakeController(record: { aborted: boolean }): Dispatcher.DispatchController {
  return { abort: () => (record.aborted = true), pause() {}, resume() {}, aborted: false, paused: false, reason: null, rawHeaders: null, rawTrailers: null };
}

/** What became of a request: its status, or error, and `done`, the clock time it completed or failed (undefined while running). */
export interface RequestResult {
  startedAt: number;
  done?: number;
  status?: number;
  error?: Error;
}

/** Starts a request through `host` and records what becomes of it. */
export function startRequest(host: RequestHost, clock: FakeClock, method: string, path: string, longRunning: boolean): RequestResult {
  const result: RequestResult = { startedAt: clock.now() };
  const downstream: Dispatcher.DispatchHandler = {
    onRequestStart() {},
    onResponseStart: (_c, status) => void (result.status = status),
    onResponseData() {},
    onResponseEnd: () => void (result.done = clock.now()),
    onResponseError: (_c, error) => {
      result.error = error;
      result.done = clock.now();
    },
  };
  new BalancedRequest(host, ROUTE, { origin: 'https://kubernetes.default.svc', method, path }, downstream, longRunning, longRunning).start();
  return result;
}
