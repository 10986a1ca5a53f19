// Hedged requests, unit level on a fake clock: BalancedRequest with a real Hedging policy and
// retry budget over a host whose endpoints are scripted (one black-holed: it never answers).
import test from 'ava';
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import { Hedging } from '../../src/dispatcher/Hedge.ts';
import type { RequestHost } from '../../src/dispatcher/RequestHost.ts';
import { RetryBudget } from '../../src/dispatcher/RetryBudget.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { fakeController, hostParts, startRequest } from '../helpers/requestHost.ts';
import { endpoint } from '../helpers/endpoints.ts';

const SETTINGS = { minDelayMs: 50, maxDelayMs: 250, percentile: 99 };

/**
 * Three endpoints; `silent` ones take requests and never answer, `refusing` ones fail them at once
 * as a crashed apiserver's closed port does, `scripted` ones answer with their status after their
 * delay on the clock, the others answer 200 at once.
 */
function setUp() {
  const clock = new FakeClock();
  const endpoints = [endpoint(1), endpoint(2), endpoint(3)];
  const silent = new Set<Endpoint>();
  const refusing = new Set<Endpoint>();
  const scripted = new Map<Endpoint, { status: number; delayMs: number }>();
  const ejected = new Set<Endpoint>();
  const sent: Array<{ endpoint: Endpoint; method: string; aborted: boolean }> = [];
  let next = 0;
  const hedging = new Hedging(SETTINGS, clock, (e) => ejected.add(e));
  const budget = new RetryBudget(20, 3, clock);
  const host: RequestHost = {
    ...hostParts(clock, budget, hedging),
    pick: (_longRunning, _probationOk, exclude) => {
      const ready = endpoints.filter((e) => !exclude?.has(e) && !ejected.has(e));
      return ready.length ? ready[next++ % ready.length] : undefined;
    },
    send: (e, _route, opts, handler) => {
      const record = { endpoint: e, method: opts.method, aborted: false };
      sent.push(record);
      const controller = fakeController(record);
      if (refusing.has(e)) return queueMicrotask(() => handler.onResponseError?.(controller, Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })));
      handler.onRequestStart?.(controller, {});
      if (silent.has(e)) return;
      const { status, delayMs } = scripted.get(e) ?? { status: 200, delayMs: 0 };
      const answer = () => {
        if (record.aborted) return;
        handler.onResponseStart?.(controller, status, { 'content-type': 'application/json' }, String(status));
        handler.onResponseData?.(controller, Buffer.from('{}'));
        handler.onResponseEnd?.(controller, {});
      };
      if (delayMs > 0) clock.setTimeout(answer, delayMs);
      else queueMicrotask(answer);
    },
    attemptStarted: () => NaN,
    // As the balancer's judge does: successes earn retry credit.
    attemptEnded: (_e, _long, outcome) => void (outcome.type === 'response' && budget.earn(clock.now())),
  };
  /** Starts a request; `done` is the clock time it completed (or failed), undefined while running. */
  const request = (method = 'GET', path = '/api/v1/namespaces/default/configmaps/a', longRunning = false) => startRequest(host, clock, method, path, longRunning);
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
  const answered = async <T>(result: T): Promise<T> => {
    await flush();
    return result;
  };
  /** Advances the clock in 10 ms steps, letting answers through between them. */
  const run = async (ms: number) => {
    for (let t = 0; t < ms; t += 10) {
      clock.advance(10);
      await flush();
    }
  };
  return { clock, endpoints, silent, refusing, scripted, ejected, sent, hedging, host, request, flush, answered, run };
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

test("a hedge answered with a rejection (a draining apiserver's 503, a 429) does not win the race: the first attempt, slow but healthy, goes on and its answer reaches the caller", async (t) => {
  const { endpoints, scripted, ejected, sent, request, run } = setUp();
  // Two endpoints left: the first answers 200 after 400 ms, the second rejects at once (it began
  // its shutdown before anyone marked it draining). Seen in the demo under load: the 503 won, the
  // healthy attempt was aborted, and the retry had nowhere left to go, so the caller got the 503.
  ejected.add(endpoints[2]!);
  for (const status of [503, 429]) {
    scripted.set(endpoints[0]!, { status: 200, delayMs: 400 });
    scripted.set(endpoints[1]!, { status, delayMs: 0 });
    sent.length = 0;
    const r = request();
    await run(600);
    t.deepEqual(
      sent.map((s) => [s.endpoint.key, s.aborted]),
      [
        [endpoints[0]!.key, false],
        [endpoints[1]!.key, false],
      ],
      `${status}: the GET went first to the slow endpoint, was hedged to the rejecting one, and the slow one was not aborted`,
    );
    t.is(r.status, 200, `${status}: the slow endpoint's answer, not the rejection, reached the caller`);
    t.is(r.error, undefined);
  }
});

test('a GET caught on a black hole whose hedge is refused (a crashed apiserver not yet ejected) is hedged again, not left on the hole', async (t) => {
  const { clock, endpoints, silent, refusing, sent, hedging, host, request, run } = setUp();
  const [crashed, fine, hole] = endpoints as [Endpoint, Endpoint, Endpoint];
  // The bench's failover run: one apiserver crashed (its port refuses), another turned black hole.
  refusing.add(crashed);
  silent.add(hole);
  // The race goes on without the refused hedge, and the attempt left on the hole is hedged again,
  // to the one endpoint not tried yet (before: it waited there until the hole was ejected).
  const pick = host.pick.bind(host);
  host.pick = (longRunning, probationOk, exclude) => (!exclude ? hole : exclude.has(crashed) ? pick(longRunning, probationOk, exclude) : crashed);
  const since = clock.now();
  const stuck = request();
  await run(1000);
  t.deepEqual(
    sent.map((s) => s.endpoint.key),
    [hole.key, crashed.key, fine.key],
    'sent to the hole, hedged to the crashed one, hedged again to the one that answers',
  );
  t.is(stuck.status, 200);
  t.true(stuck.done! - since <= 2 * (hedging.delayMs + hedging.delayMs / 8) + 40, `answered after ${stuck.done! - since} ms`);
});

test('writes, watches and long-running requests are never hedged; hedges stop when the retry budget is spent', async (t) => {
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

  // Every endpoint is silent, so each hedge keeps its unit of the retry budget: they stop at the
  // budget (20 % of the 103 requests in flight + 3, plus 20 % of the 300 successes: 83), below the 100 earned.
  const gets = Array.from({ length: 100 }, () => request());
  await run(1000);
  t.is(hedging.hedges, 83, 'no more hedges than the retry budget allows');
  t.is(host.budget.retries, 83, 'each hedge holds a unit of the retry budget');
  t.true(host.budget.refused > 0);
  t.true(gets.every((r) => r.done === undefined));
});

test('earned hedges: 100 up front, 2 per 100 answers, never more than 100 saved; moving requests off an ejected endpoint costs none', (t) => {
  const clock = new FakeClock();
  const hedging = new Hedging(SETTINGS, clock, () => {});
  const stuck = endpoint(1);
  const other = endpoint(2);
  const sentAt = clock.now();
  clock.advance(SETTINGS.maxDelayMs);
  let spent = 0;
  while (hedging.mayHedge(stuck, sentAt, true) === true && spent < 1000) {
    hedging.sent(stuck);
    spent++;
  }
  t.is(spent, 100, 'the burst a start begins with');
  for (let i = 0; i < 49; i++) hedging.answered(other, 1);
  t.false(hedging.mayHedge(stuck, sentAt, true));
  hedging.answered(other, 1);
  t.true(hedging.mayHedge(stuck, sentAt, true), '50 answers earn one');
  hedging.sent(stuck);
  t.false(hedging.mayHedge(stuck, sentAt, true));
  stuck.state = 'ejected';
  stuck.lastEjection = { reason: 'unreachable', at: 0, durationMs: 30_000 };
  t.true(hedging.mayHedge(stuck, sentAt, true));
  hedging.sent(stuck);
  t.true(hedging.mayHedge(stuck, sentAt, true), 'free while its endpoint is out');
  stuck.state = 'ready';
  for (let i = 0; i < 100_000; i++) hedging.answered(other, 1);
  spent = 0;
  while (hedging.mayHedge(stuck, sentAt, true) === true && spent < 1000) {
    hedging.sent(stuck);
    spent++;
  }
  t.is(spent, 100, 'at most 100 saved up, however many answers');
});

test('an endpoint resting for a 429 (or a run of failures) is not out: its queued GETs are hedged only with earned hedges, and a LIST not at all', (t) => {
  const clock = new FakeClock();
  const hedging = new Hedging(SETTINGS, clock, () => {});
  const resting = endpoint(1);
  const sentAt = clock.now();
  clock.advance(SETTINGS.maxDelayMs);
  for (let i = 0; i < 100; i++) hedging.sent(resting);
  t.false(hedging.mayHedge(resting, sentAt, true), 'none earned left');
  resting.state = 'ejected';
  for (const reason of ['throttled', 'failures'] as const) {
    resting.lastEjection = { reason, at: 0, durationMs: 1000 };
    t.false(hedging.mayHedge(resting, sentAt, true), `ejected for ${reason}: it answers, a free hedge would only load its peers`);
  }
  resting.lastEjection = { reason: 'unreachable', at: 0, durationMs: 1000 };
  t.true(hedging.mayHedge(resting, sentAt, false), 'a LIST moves off an endpoint that is out, for free');
  resting.state = 'ready';
  for (let i = 0; i < 10_000; i++) hedging.answered(endpoint(2), 1);
  t.true(hedging.mayHedge(resting, sentAt, true));
  t.false(hedging.mayHedge(resting, sentAt, false), 'a LIST is never hedged for being slow');
});

test('a GET sent before its endpoint last answered is hedged once that endpoint has been silent for the delay, not put off for ever; one sweep timer serves all', async (t) => {
  const { clock, endpoints, silent, hedging, host, request, flush, answered, run } = setUp();
  const [hole, ...others] = endpoints as [Endpoint, Endpoint, Endpoint];
  const pick = host.pick.bind(host);
  let first = hole;
  // First attempts go to `first`; hedges wherever the host's picker says.
  host.pick = (longRunning, probationOk, exclude) => (exclude ? pick(longRunning, probationOk, exclude) : first);
  silent.add(hole);
  const caught = Array.from({ length: 5 }, () => request());
  clock.advance(30);
  // The hole answers one more request after those were sent, then nothing.
  silent.delete(hole);
  const last = request();
  await flush();
  t.is(last.status, 200);
  const lastAnswer = clock.now();
  silent.add(hole);
  for (let i = 0; i < 30; i++) {
    // Other traffic, answered by the others, on and on.
    first = others[i % 2]!;
    t.is((await answered(request())).status, 200);
    await run(10);
    t.true(clock.pending <= 3, `timers pending: ${clock.pending}`);
  }
  await run(300);
  t.true(caught.every((r) => r.status === 200), 'every GET caught there was hedged and answered');
  const latest = Math.max(...caught.map((r) => r.done!));
  t.true(latest - lastAnswer <= hedging.delayMs + hedging.delayMs / 8 + 20, `hedged ${latest - lastAnswer} ms after the last answer from there`);
});

test('a sweep that runs late (our own stall) waits for the answers that came meanwhile before it hedges', (t) => {
  // A clock whose time jumps without running timers, as a blocked event loop's does.
  let now = 0;
  const timers = new Map<object, { at: number; run: () => void }>();
  const clock = {
    now: () => now,
    setTimeout: (run: () => void, ms: number) => {
      const handle = {};
      timers.set(handle, { at: now + ms, run });
      return handle;
    },
    clearTimeout: (handle: object) => void timers.delete(handle),
  };
  const fire = (): void => {
    for (const [handle, timer] of [...timers]) {
      if (timer.at > now) continue;
      timers.delete(handle);
      timer.run();
    }
  };
  const hedging = new Hedging(SETTINGS, clock, () => {});
  const hedged: string[] = [];
  const answeredMeanwhile = { hedge: () => void hedged.push('answered meanwhile') };
  const unanswered = { hedge: () => void hedged.push('unanswered') };
  hedging.wait(answeredMeanwhile, 0);
  hedging.wait(unanswered, 0);
  now = 2000; // stalled for 2 s
  fire();
  t.deepEqual(hedged, [], 'nothing hedged by the late sweep');
  hedging.cancel(answeredMeanwhile); // its response was read right after
  now += 1;
  fire();
  t.deepEqual(hedged, ['unanswered'], 'the next sweep hedges what is still waiting');
  hedging.close();
  t.is(timers.size, 0);
});

test('hedge options: on by default, {} for the defaults, false for off, bounds validated', async (t) => {
  const { resolveOptions } = await import('../../src/options/validate.ts');
  t.deepEqual(resolveOptions({ origin: 'https://kubernetes.default.svc', target: 'static:///127.0.0.2:6443' }).hedge, SETTINGS);
  t.deepEqual(resolveOptions({ origin: 'https://kubernetes.default.svc', target: 'static:///127.0.0.2:6443', hedge: {} }).hedge, SETTINGS);
  t.is(resolveOptions({ origin: 'https://kubernetes.default.svc', target: 'static:///127.0.0.2:6443', hedge: false }).hedge, false);
  t.throws(() => resolveOptions({ origin: 'https://kubernetes.default.svc', target: 'static:///127.0.0.2:6443', hedge: { minDelayMs: 100, maxDelayMs: 50 } }), { message: /hedge\.maxDelayMs/ });
  t.throws(() => resolveOptions({ origin: 'https://kubernetes.default.svc', target: 'static:///127.0.0.2:6443', hedge: { percentile: 100 } }), { message: /hedge\.percentile/ });
});
