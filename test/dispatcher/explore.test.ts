// Exploration copies, unit level on a fake clock: BalancedRequest with a real Hedging policy and
// retry budget over a host whose endpoints are scripted (each answers after its own delay). The
// host's picker sends every first pick to `first`, as a weighted round robin does with a lagging
// endpoint's trickle; other picks (the caller's request elsewhere, hedges) go round the others.
import test from 'ava';
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import { BalancedRequest } from '../../src/dispatcher/BalancedRequest.ts';
import { COPY_AFTER_MS } from '../../src/dispatcher/Explore.ts';
import { Hedging } from '../../src/dispatcher/Hedge.ts';
import type { RequestHost } from '../../src/dispatcher/RequestHost.ts';
import { RetryBudget } from '../../src/dispatcher/RetryBudget.ts';
import type { AttemptOutcome } from '../../src/health/outcome.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { fakeController, hostParts, ROUTE, startRequest } from '../helpers/requestHost.ts';
import { endpoint } from '../helpers/endpoints.ts';

const GET = '/api/v1/namespaces/default/configmaps/a';

function setUp() {
  const clock = new FakeClock();
  const [slow, fast1, fast2] = [endpoint(1), endpoint(2), endpoint(3)] as [Endpoint, Endpoint, Endpoint];
  slow.lagging = true;
  /** Milliseconds each endpoint takes to answer; Infinity: never. */
  const delay = new Map<Endpoint, number>([[slow, 100], [fast1, 20], [fast2, 20]]);
  /** Endpoints whose connections break instead of answering. */
  const broken = new Set<Endpoint>();
  const sent: Array<{ endpoint: Endpoint; method: string; at: number; aborted: boolean }> = [];
  const started: Array<{ endpoint: Endpoint; sentAt: number | undefined }> = [];
  const ended: Array<{ endpoint: Endpoint; outcome: AttemptOutcome; startedAt: number; loadClass: string | undefined }> = [];
  /**
   * As `EndpointSet.toMeasure`: a lagging endpoint picked by any short GET, else `due` for a GET of
   * the kind the weights follow (of one object, unless `points` is false: then LISTs and discovery).
   */
  const follows = { points: true, due: undefined as Endpoint | undefined };
  let next = 0;
  const hedging = new Hedging({ minDelayMs: 50, maxDelayMs: 250, percentile: 99 }, clock, () => {});
  const budget = new RetryBudget(20, 3, clock);
  const others = [fast1, fast2];
  const host: RequestHost = {
    ...hostParts(clock, budget, hedging),
    loadAware: true,
    toMeasure: (picked, timed) => (picked.lagging ? picked : timed === follows.points ? follows.due : undefined),
    pick: (_longRunning, _probationOk, exclude) => {
      if (!exclude) return slow;
      const ready = others.filter((e) => !exclude.has(e));
      return ready.length ? ready[next++ % ready.length] : undefined;
    },
    send: (e, _route, opts, handler) => {
      const record = { endpoint: e, method: opts.method, at: clock.now(), aborted: false };
      sent.push(record);
      const controller = fakeController(record);
      handler.onRequestStart?.(controller, {});
      const ms = delay.get(e)!;
      if (ms === Infinity) return;
      clock.setTimeout(() => {
        if (record.aborted) return;
        if (broken.has(e)) return handler.onResponseError?.(controller, Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
        handler.onResponseStart?.(controller, 200, { 'content-type': 'application/json' }, 'OK');
        handler.onResponseData?.(controller, Buffer.from('{}'));
        handler.onResponseEnd?.(controller, {});
      }, ms);
    },
    attemptStarted: (e, _long, _request, _attempt, sentAt) => void started.push({ endpoint: e, sentAt }),
    attemptEnded: (e, _long, outcome, startedAt = NaN, loadClass) => {
      ended.push({ endpoint: e, outcome, startedAt, loadClass });
      if (outcome.type === 'response') budget.earn(clock.now());
    },
  };
  const request = (method = 'GET', path = GET, longRunning = false) => startRequest(host, clock, method, path, longRunning);
  return { clock, slow, fast1, fast2, delay, broken, sent, started, ended, hedging, budget, host, request, follows };
}

test('a timed GET picked for a lagging endpoint: the caller is answered by another endpoint, sent at once, while a copy measures the lagging one', async (t) => {
  const { clock, slow, sent, started, ended, hedging, budget, request } = setUp();
  const r = request();
  t.deepEqual(
    sent.map((s) => [s.endpoint.key, s.at - r.startedAt]),
    [
      [slow.key, 0],
      ['10.0.0.2:6443', 0],
    ],
    'the copy and the caller’s request go out together, no hedge delay',
  );
  t.is(hedging.hedges, 1, 'paid as a hedge');
  t.is(budget.retries, 1, 'the copy holds a unit of the retry budget while it runs');
  clock.advance(20);
  // A lone held response's body and end follow its head within the same turn, a tick later (BalancedRequest.completedHeld).
  await new Promise((resolve) => setImmediate(resolve));
  t.is(r.status, 200);
  t.is(r.done! - r.startedAt, 20, 'the caller waited for the fast endpoint only');
  t.is(ended.filter((e) => e.endpoint === slow).length, 0, 'the copy runs on');
  clock.advance(80);
  const copy = ended.find((e) => e.endpoint === slow)!;
  t.is(copy.outcome.type, 'response', 'the copy is read to its end and judged as an answer');
  t.is(clock.now() - copy.startedAt, 100, 'its latency is measured from its own start: the estimate sees the slow answer');
  t.is(started.find((s) => s.endpoint === slow)!.sentAt, r.startedAt);
  t.is(budget.retries, 0, 'released');
  t.is(slow.lastAnswerAt, r.startedAt + 100, 'hedging heard it answer: hedges that beat it meanwhile are no sign of a black hole');
  t.false(sent.some((s) => s.aborted), 'nothing aborted: no loser to cut short');
});

test('never for a write, a watch, a request that is not picked for a lagging endpoint, or with hedging off', (t) => {
  const { slow, fast1, sent, hedging, host, request } = setUp();
  request('POST', '/api/v1/namespaces/default/configmaps');
  request('PUT', GET);
  request('DELETE', GET);
  request('GET', '/api/v1/namespaces/default/configmaps?watch=true', true);
  t.deepEqual(
    sent.map((s) => s.endpoint),
    [slow, slow, slow, slow],
    'each went where it was picked, alone',
  );
  t.is(hedging.hedges, 0);
  slow.lagging = false;
  request();
  t.is(sent.at(-1)!.endpoint, slow, 'an endpoint that does not lag keeps its pick');
  slow.lagging = true;
  const off = { ...host, hedging: undefined };
  new BalancedRequest(off, ROUTE, { origin: 'https://kubernetes.default.svc', method: 'GET', path: GET }, {}, false, false).start();
  t.is(sent.at(-1)!.endpoint, slow, 'hedging off: no copies');
  t.is(sent.length, 6);
  t.false(sent.some((s) => s.endpoint === fast1));
});

test('copies stop at the reserve that keeps half the earned hedges for black holes, which still get hedged', async (t) => {
  const { clock, slow, delay, sent, hedging, request } = setUp();
  // A healthy warm-up first, so that the retry budget has credit for a burst (20 % of 500 answers).
  slow.lagging = false;
  delay.set(slow, 1);
  for (let i = 0; i < 500; i++) {
    request();
    clock.advance(1);
  }
  sent.length = 0;
  t.is(hedging.hedges, 0);
  // Then it lags, and turns into a black hole: copies earn nothing back, and nothing comes from there.
  slow.lagging = true;
  delay.set(slow, Infinity);
  const results = Array.from({ length: 80 }, () => request());
  t.is(hedging.hedges, 50, 'copies spend half the burst of 100, no more');
  t.is(sent.filter((s) => s.endpoint !== slow).length, 50, 'fifty callers went elsewhere at once');
  t.is(sent.filter((s) => s.endpoint === slow).length, 80, 'fifty copies, and thirty requests where they were picked');
  clock.advance(400);
  t.is(hedging.hedges, 80, 'the thirty GETs stuck on the silent endpoint were hedged from the reserve');
  // With other requests in flight a held answer's body and end follow its head from a setImmediate.
  await new Promise(setImmediate);
  t.true(
    results.every((r) => r.status === 200 && r.done! - r.startedAt <= 400),
    'every caller answered',
  );
});

// A caller's short GET of any kind never waits on a lagging endpoint it picked: a LIST or discovery
// GET is copied there as a GET of one object is, the copy's answer fed to the `relative` estimate
// with its class. A client that sends no GET of one object (an informer's relists, discovery) has
// its weights follow those, and its LISTs and discovery GETs re-measure a lagging endpoint that is
// due, as GETs of one object do otherwise. A write is never sent twice.
test('a LIST or discovery GET picked for a lagging endpoint is copied there, its class measured; while the weights follow them, they re-measure one that is due', async (t) => {
  const { clock, slow, fast1, sent, ended, hedging, host, request, follows } = setUp();
  const LIST = '/api/v1/namespaces/default/configmaps';
  const list = request('GET', LIST);
  t.deepEqual(
    sent.map((s) => s.endpoint.key),
    [slow.key, '10.0.0.2:6443'],
    'a copy to the lagging endpoint, the caller’s LIST elsewhere at once',
  );
  clock.advance(20);
  await new Promise((resolve) => setImmediate(resolve));
  t.is(list.done! - list.startedAt, 20, 'the caller waited for the fast endpoint only');
  clock.advance(80);
  t.like(ended.find((e) => e.endpoint === slow), { outcome: { type: 'response' }, loadClass: 'GET /api/v1/namespaces/*/configmaps' }, 'the copy’s answer is a sample of its class');
  request('GET', '/api');
  t.is(sent.at(-2)!.endpoint, slow, 'a discovery GET: copied too');
  t.not(sent.at(-1)!.endpoint, slow);
  t.is(hedging.hedges, 2);
  // At the weights' floor: `slow` is never picked, but due a re-measure.
  follows.due = slow;
  const elsewhere: RequestHost = { ...host, pick: () => fast1 };
  startRequest(elsewhere, clock, 'GET', LIST, false);
  t.is(sent.at(-1)!.endpoint, fast1, 'weights following GETs of one object: a LIST keeps its pick, no copy');
  follows.points = false;
  const before = sent.length;
  startRequest(elsewhere, clock, 'GET', LIST, false);
  t.deepEqual(sent.slice(before).map((s) => s.endpoint), [slow, fast1], 'weights following the other requests: the LIST re-measures it by a copy, and keeps its pick');
  clock.advance(100);
  const writes = sent.length;
  request('DELETE', GET);
  request('POST', LIST);
  t.deepEqual(sent.slice(writes).map((s) => s.endpoint), [slow, slow], 'writes go where they were picked, alone');
  t.is(hedging.hedges, 3);
});

test('a copy’s answer tells hedging that its endpoint answers, but is no sample of the callers’ wait', (t) => {
  const clock = new FakeClock();
  const hedging = new Hedging({ minDelayMs: 50, maxDelayMs: 250, percentile: 99 }, clock, () => {});
  const lagging = endpoint(1);
  for (let i = 0; i < 64; i++) hedging.answered(endpoint(2), 10);
  t.is(hedging.delayMs, 50);
  clock.advance(100);
  for (let i = 0; i < 640; i++) hedging.heard(lagging, clock.now());
  t.is(lagging.lastAnswerAt, clock.now());
  for (let i = 0; i < 64; i++) hedging.answered(endpoint(2), 10);
  t.is(hedging.delayMs, 50, 'copies do not move the hedge delay');
  for (let i = 0; i < 64; i++) hedging.answered(lagging, 200);
  t.is(hedging.delayMs, 200, 'callers’ answers do');
});

test('a copy that breaks is judged as the failure it is, releases its budget, and leaves the caller alone', (t) => {
  const { clock, slow, broken, ended, budget, request } = setUp();
  broken.add(slow);
  const r = request();
  clock.advance(100);
  t.is(r.status, 200);
  t.true(r.error === undefined);
  const copy = ended.find((e) => e.endpoint === slow)!;
  t.like(copy.outcome, { type: 'error', kind: 'reset' });
  t.is(budget.retries, 0);
});

test('a lagging endpoint due a re-measure gets a copy of a GET picked elsewhere, which keeps its pick; never of a LIST, nor with hedging off', async (t) => {
  const { clock, slow, fast1, sent, ended, hedging, budget, host } = setUp();
  // The weights' floor: `slow` is never picked, but the set says it is due a re-measure.
  let due: Endpoint | undefined = slow;
  const remeasuring: RequestHost = { ...host, pick: () => fast1, toMeasure: (_picked, timed) => (timed ? due : undefined) };
  const send = (h: RequestHost, path = GET) => startRequest(h, clock, 'GET', path, false);
  const r = send(remeasuring);
  t.deepEqual(
    sent.map((s) => s.endpoint),
    [slow, fast1],
    'a copy to the lagging endpoint, the caller’s request where it was picked',
  );
  t.is(hedging.hedges, 1, 'paid as a hedge');
  t.is(budget.retries, 1);
  clock.advance(20);
  await new Promise((resolve) => setImmediate(resolve));
  t.is(r.done! - r.startedAt, 20, 'the caller waited for its own pick only');
  clock.advance(80);
  t.is(ended.find((e) => e.endpoint === slow)?.outcome.type, 'response', 'the copy measured it');
  t.is(budget.retries, 0);
  send(remeasuring, '/api/v1/namespaces/default/configmaps');
  t.is(sent.at(-1)!.endpoint, fast1, 'a LIST: no copy');
  send({ ...remeasuring, hedging: undefined });
  t.is(sent.at(-1)!.endpoint, fast1, 'hedging off: no copy');
  due = undefined;
  send(remeasuring);
  t.is(sent.at(-1)!.endpoint, fast1, 'none due: no copy');
  t.is(sent.length, 5);
});

test('a copy reads on past its caller’s answer for COPY_AFTER_MS, no longer: then it is aborted, a censored sample with no verdict (chaos finding 3)', async (t) => {
  const { clock, slow, delay, sent, ended, budget, request } = setUp();
  // Answered within the bound: a whole sample, nothing aborted.
  delay.set(slow, 20 + COPY_AFTER_MS - 1);
  const answered = request();
  clock.advance(20);
  await new Promise((resolve) => setImmediate(resolve));
  t.is(answered.status, 200);
  clock.advance(COPY_AFTER_MS - 1);
  t.is(ended.find((e) => e.endpoint === slow)?.outcome.type, 'response', 'a slow answer inside the bound is still measured');
  t.false(sent.some((s) => s.aborted));
  // Never answered: aborted COPY_AFTER_MS after the caller's answer, its budget back.
  delay.set(slow, Infinity);
  const r = request();
  clock.advance(20);
  await new Promise((resolve) => setImmediate(resolve));
  t.is(r.status, 200);
  clock.advance(COPY_AFTER_MS - 1);
  t.false(sent.at(-2)!.aborted, 'the copy still runs a moment before the bound');
  t.is(budget.retries, 1);
  clock.advance(1);
  t.is(sent.at(-2)!.endpoint, slow);
  t.true(sent.at(-2)!.aborted, 'the copy is aborted: its stream no longer holds the apiserver');
  const copy = ended.filter((e) => e.endpoint === slow).at(-1)!;
  t.deepEqual(copy.outcome, { type: 'aborted' }, 'no verdict on the endpoint');
  t.is(clock.now() - copy.startedAt, 20 + COPY_AFTER_MS, 'its time is a censored sample: it only raises the estimate');
  t.is(budget.retries, 0, 'its unit of retry budget is back');
});
