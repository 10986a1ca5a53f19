// The outcome → health verdict rules, on a real HealthTracker with the fake clock; no sockets. Our
// own event-loop lag is injected: `lag` is what the LagMonitor would report for the window.
import test from 'ava';
import { Endpoint } from '../../src/balancer/Endpoint.ts';
import { HealthTracker } from '../../src/health/HealthTracker.ts';
import type { AttemptOutcome, FailureKind } from '../../src/health/outcome.ts';
import { OutcomeJudge } from '../../src/health/OutcomeJudge.ts';
import { FakeClock } from '../helpers/FakeClock.ts';

const CONNECT_TIMEOUT = 1000;
const PING_INTERVAL = 5000;

function setup({ consecutive5xx = 3, probes = true } = {}) {
  const clock = new FakeClock();
  const endpoints = Array.from({ length: 3 }, (_, i) => new Endpoint({ address: `10.0.0.${i + 1}`, port: 6443 }, -Infinity));
  const events: string[] = [];
  const health = new HealthTracker(
    { consecutive5xx, baseEjectionMs: 1000, maxEjectionMs: 30_000, maxEjectionPercent: 50, probes },
    clock,
    {
      changed: () => {},
      eject: (e, reason, ms) => events.push(`eject ${reason} ${Math.round(ms)}`),
      drain: (_e, reason) => events.push(`drain ${reason}`),
      restore: (_e, via) => events.push(`restore ${via}`),
    },
    () => endpoints,
    () => 0.5,
  );
  const lag = { ms: 0, maxSince: (_since: number) => lag.ms };
  const calls = { earned: [] as number[], refresh: 0 };
  const judge = new OutcomeJudge(health, { connectTimeout: CONNECT_TIMEOUT, pingInterval: PING_INTERVAL }, clock, lag, {
    earned: (now) => calls.earned.push(now),
    refresh: () => calls.refresh++,
  });
  return { clock, endpoint: endpoints[0]!, events, health, lag, calls, judge };
}

function failure(kind: FailureKind, code?: string, message = 'failed'): AttemptOutcome {
  return { type: 'error', kind, error: Object.assign(new Error(message), code ? { code } : {}) };
}

function response(statusCode: number, headers: Record<string, string> = {}, body = '', eviction = false): AttemptOutcome {
  return { type: 'response', statusCode, headers, body, eviction };
}

test('a refused connection ejects at once (connect) and asks the resolver to look again', (t) => {
  const { endpoint, events, calls, judge } = setup();
  judge.judge(endpoint, failure('connect', 'ECONNREFUSED'));
  t.is(endpoint.state, 'ejected');
  t.is(endpoint.failures, 1);
  t.deepEqual(events, ['eject connect 1000']);
  t.is(calls.refresh, 1);
});

test('a failed TLS handshake ejects at once (tls) and asks the resolver to look again', (t) => {
  const { endpoint, events, calls, judge } = setup();
  judge.judge(endpoint, failure('tls', 'ERR_TLS_CERT_ALTNAME_INVALID'));
  t.is(endpoint.state, 'ejected');
  t.deepEqual(events, ['eject tls 1000']);
  t.is(calls.refresh, 1);
});

test('resets count as server errors: consecutive5xx of them eject (failures), fewer do not', (t) => {
  const { endpoint, events, calls, judge } = setup({ consecutive5xx: 3 });
  judge.judge(endpoint, failure('reset', 'ECONNRESET'));
  judge.judge(endpoint, failure('reset', 'ECONNRESET'));
  t.is(endpoint.state, 'ready');
  judge.judge(endpoint, failure('reset', 'ECONNRESET'));
  t.is(endpoint.state, 'ejected');
  t.deepEqual(events, ['eject failures 1000']);
  t.is(endpoint.failures, 3);
  t.is(calls.refresh, 0);
});

test('an unanswered PING (unresponsive) with no stall of ours and no recent answer: unreachable', (t) => {
  const { endpoint, events, calls, judge } = setup();
  judge.judge(endpoint, failure('unresponsive', undefined, 'connection unresponsive'));
  t.is(endpoint.state, 'ejected');
  t.deepEqual(events, ['eject unreachable 1000']);
  t.is(calls.refresh, 1);
});

test('unresponsive while our own event loop stalled: only a server error, never unreachable', (t) => {
  const { endpoint, events, lag, calls, judge } = setup();
  lag.ms = PING_INTERVAL / 4;
  judge.judge(endpoint, failure('unresponsive', undefined, 'connection unresponsive'));
  t.is(endpoint.state, 'ready');
  t.deepEqual(events, []);
  t.is(endpoint.failures, 1);
  t.is(calls.refresh, 0);
  lag.ms = PING_INTERVAL / 4 - 1;
  judge.judge(endpoint, failure('unresponsive', undefined, 'connection unresponsive'));
  t.deepEqual(events, ['eject unreachable 1000']);
});

test('unresponsive when the endpoint answered within two PING intervals: only a server error', (t) => {
  const { clock, endpoint, events, judge } = setup();
  judge.judge(endpoint, response(200));
  clock.advance(2 * PING_INTERVAL - 1);
  judge.judge(endpoint, failure('unresponsive', undefined, 'connection unresponsive'));
  t.is(endpoint.state, 'ready');
  t.deepEqual(events, []);
  clock.advance(2);
  judge.judge(endpoint, failure('unresponsive', undefined, 'connection unresponsive'));
  t.deepEqual(events, ['eject unreachable 1000']);
});

test('a request timeout counts as a server error, whatever our lag', (t) => {
  const { endpoint, events, lag, calls, judge } = setup({ consecutive5xx: 2 });
  lag.ms = 60_000;
  judge.judge(endpoint, failure('timeout', 'UND_ERR_HEADERS_TIMEOUT'));
  t.is(endpoint.state, 'ready');
  judge.judge(endpoint, failure('timeout', 'UND_ERR_HEADERS_TIMEOUT'));
  t.deepEqual(events, ['eject failures 1000']);
  t.is(calls.refresh, 0);
});

test('a connect timeout (silent connect) is unreachable when conclusive, no verdict during our stall or after a recent answer', (t) => {
  const stalled = setup();
  stalled.lag.ms = CONNECT_TIMEOUT / 4;
  stalled.judge.judge(stalled.endpoint, failure('connect', 'UND_ERR_CONNECT_TIMEOUT'));
  t.is(stalled.endpoint.state, 'ready');
  t.deepEqual(stalled.events, []);
  t.is(stalled.calls.refresh, 0);
  t.is(stalled.endpoint.failures, 1);

  const answered = setup();
  answered.judge.judge(answered.endpoint, response(200));
  answered.clock.advance(CONNECT_TIMEOUT - 1);
  answered.judge.judge(answered.endpoint, failure('connect', 'ETIMEDOUT'));
  t.is(answered.endpoint.state, 'ready');
  t.deepEqual(answered.events, []);

  const silent = setup();
  silent.judge.judge(silent.endpoint, failure('connect', 'UND_ERR_CONNECT_TIMEOUT'));
  t.is(silent.endpoint.state, 'ejected');
  t.deepEqual(silent.events, ['eject unreachable 1000']);
  t.is(silent.calls.refresh, 1);
});

test('a silent connect during our stall releases the probation it carried, so another request may try', (t) => {
  const { clock, endpoint, health, lag, judge } = setup();
  judge.judge(endpoint, failure('connect', 'ECONNREFUSED'));
  clock.advance(1000);
  t.is(endpoint.state, 'probing');
  t.is(health.takeProbation(), endpoint);
  t.is(health.takeProbation(), undefined);
  lag.ms = CONNECT_TIMEOUT;
  judge.judge(endpoint, failure('connect', 'UND_ERR_CONNECT_TIMEOUT'));
  t.is(endpoint.state, 'probing');
  t.is(health.takeProbation(), endpoint);
});

test('a run of 5xx ejects after consecutive5xx; each answer marks the endpoint as answering', (t) => {
  const { clock, endpoint, events, judge } = setup({ consecutive5xx: 3 });
  judge.judge(endpoint, response(503));
  judge.judge(endpoint, response(500));
  t.is(endpoint.state, 'ready');
  t.is(endpoint.lastAnswerAt, clock.now());
  judge.judge(endpoint, response(502));
  t.is(endpoint.state, 'ejected');
  t.is(endpoint.failures, 3);
  t.deepEqual(events, ['eject failures 1000']);
});

test('a success between 5xx starts the run again, and earns the retry budget at clock time', (t) => {
  const { clock, endpoint, calls, judge } = setup({ consecutive5xx: 2 });
  judge.judge(endpoint, response(500));
  clock.advance(10);
  judge.judge(endpoint, response(200));
  judge.judge(endpoint, response(500));
  t.is(endpoint.state, 'ready');
  t.deepEqual(calls.earned, [clock.now()]);
});

test('429 with Retry-After: throttled for that long, its share halved, then back', (t) => {
  const { clock, endpoint, events, calls, judge } = setup();
  judge.judge(endpoint, response(429, { 'retry-after': '2' }));
  t.is(endpoint.state, 'ejected');
  t.is(endpoint.weightFactor, 0.5);
  t.deepEqual(events, ['eject throttled 2000']);
  clock.advance(1999);
  t.is(endpoint.state, 'ejected');
  clock.advance(1);
  t.is(endpoint.state, 'ready');
  t.deepEqual(events.at(-1), 'restore retry-after');
  t.deepEqual(calls.earned, []);
});

test('429 without Retry-After rests the default second', (t) => {
  const { endpoint, events, judge } = setup();
  judge.judge(endpoint, response(429));
  t.deepEqual(events, ['eject throttled 1000']);
});

test('a shutdown 429 (Connection: close, or a body saying so) drains the endpoint instead of throttling it', (t) => {
  const closing = setup();
  closing.judge.judge(closing.endpoint, response(429, { connection: 'close', 'retry-after': '1' }));
  t.is(closing.endpoint.state, 'draining');
  t.deepEqual(closing.events, ['drain shutdown']);
  t.is(closing.endpoint.weightFactor, 1);

  const saying = setup();
  saying.judge.judge(saying.endpoint, response(429, {}, 'the apiserver is shutting down, please try again later'));
  t.deepEqual(saying.events, ['drain shutdown']);

  // Without probes nothing would bring it back from draining: it rests for its Retry-After instead.
  const unprobed = setup({ probes: false });
  unprobed.judge.judge(unprobed.endpoint, response(429, { connection: 'close', 'retry-after': '3' }));
  t.deepEqual(unprobed.events, ['eject probe 3000']);
});

test('the Eviction API’s 429 is an answer, not a throttle: a success', (t) => {
  const { endpoint, events, calls, judge } = setup();
  judge.judge(endpoint, response(429, { 'retry-after': '5' }, '', true));
  t.is(endpoint.state, 'ready');
  t.is(endpoint.weightFactor, 1);
  t.deepEqual(events, []);
  t.is(calls.earned.length, 1);
});

test('a refused stream (GOAWAY), an error that is not the endpoint’s, and an abort give no verdict', (t) => {
  const { clock, endpoint, events, health, calls, judge } = setup({ consecutive5xx: 1 });
  judge.judge(endpoint, failure('connect', 'ECONNREFUSED'));
  clock.advance(1000);
  t.is(endpoint.state, 'probing');
  for (const outcome of [
    failure('refused', undefined, 'HTTP/2: "GOAWAY" frame received with code 0'),
    failure('other', 'UND_ERR_INVALID_ARG'),
    { type: 'aborted' } as const,
  ]) {
    t.is(health.takeProbation(), endpoint);
    judge.judge(endpoint, outcome);
    t.is(endpoint.state, 'probing');
  }
  // Each released the probation it carried; none counted as a failure.
  t.is(health.takeProbation(), endpoint);
  t.is(endpoint.failures, 1);
  t.deepEqual(events, ['eject connect 1000']);
  t.is(calls.refresh, 1);
  t.deepEqual(calls.earned, []);
});

const SHUTDOWN_503 = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'apiserver is shutting down', reason: 'ServiceUnavailable', code: 503 });

test('the default shutdown’s 503 (Retry-After, ServiceUnavailable "apiserver is shutting down") drains; a 503 that lacks any of it is a server error', (t) => {
  const { endpoint, events, judge } = setup({ consecutive5xx: 1 });
  const json = { 'content-type': 'application/json', 'retry-after': '1' };
  judge.judge(endpoint, response(503, json, `${SHUTDOWN_503}\n`));
  t.is(endpoint.state, 'draining');
  t.is(endpoint.failures, 0);
  t.deepEqual(events, ['drain shutdown']);
  for (const [headers, body] of [
    [{ 'content-type': 'application/json' }, SHUTDOWN_503],
    [json, SHUTDOWN_503.replace('apiserver is shutting down', 'the server is currently unable to handle the request')],
    [{ 'content-type': 'text/plain', 'retry-after': '1' }, 'apiserver is shutting down'],
  ] as const) {
    const other = setup({ consecutive5xx: 1 });
    other.judge.judge(other.endpoint, response(503, headers, body));
    t.is(other.endpoint.state, 'ejected', body);
    t.is(other.endpoint.failures, 1);
  }
});

test('a 504 "Too large resource version" (a lagging watch cache) is no failure; another 504 is', (t) => {
  const { endpoint, events, judge } = setup({ consecutive5xx: 1 });
  const tooLarge = { kind: 'Status', status: 'Failure', message: 'Timeout: Too large resource version: 9, current: 7', reason: 'Timeout', details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 }, code: 504 };
  judge.judge(endpoint, response(504, { 'retry-after': '1' }, JSON.stringify(tooLarge)));
  t.is(endpoint.state, 'ready');
  t.is(endpoint.failures, 0);
  t.deepEqual(events, []);
  judge.judge(endpoint, response(504, {}, JSON.stringify({ ...tooLarge, details: {} })));
  t.is(endpoint.state, 'ejected');
});
