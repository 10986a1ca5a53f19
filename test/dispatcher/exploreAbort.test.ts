// The caller's abort reaches the exploration copy made for its request (issue 26): unit level on a
// fake clock, BalancedRequest with a real Hedging policy and retry budget over a scripted host whose
// first pick is a lagging endpoint that never answers (the copy), the others never answer either.
import test from 'ava';
import type { Dispatcher } from 'undici';
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import { BalancedRequest } from '../../src/dispatcher/BalancedRequest.ts';
import { Hedging } from '../../src/dispatcher/Hedge.ts';
import type { RequestHost } from '../../src/dispatcher/RequestHost.ts';
import { RetryBudget } from '../../src/dispatcher/RetryBudget.ts';
import type { AttemptOutcome } from '../../src/health/outcome.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { fakeController, hostParts, ROUTE } from '../helpers/requestHost.ts';
import { endpoint } from '../helpers/endpoints.ts';

test("the caller's abort cancels the exploration copy: no verdict on its endpoint, its retry budget back at once", (t) => {
  const clock = new FakeClock();
  const [slow, fast] = [endpoint(1), endpoint(2)] as [Endpoint, Endpoint];
  slow.lagging = true;
  const sent: Array<{ endpoint: Endpoint; aborted: boolean; started: boolean }> = [];
  const handlers = new Map<Endpoint, Dispatcher.DispatchHandler>();
  const ended: Array<{ endpoint: Endpoint; outcome: AttemptOutcome }> = [];
  const budget = new RetryBudget(20, 3, clock);
  const hedging = new Hedging({ minDelayMs: 50, maxDelayMs: 250, percentile: 99 }, clock, () => {});
  const host: RequestHost = {
    ...hostParts(clock, budget, hedging),
    pick: (_longRunning, _probationOk, exclude) => (exclude ? (exclude.has(fast) ? undefined : fast) : slow),
    send: (e, _route, _opts, handler) => {
      const record = { endpoint: e, aborted: false, started: false };
      sent.push(record);
      handlers.set(e, handler);
      // The copy's request waits in its pool for a connection; the caller's is sent and waits for its answer.
      if (e === fast) {
        record.started = true;
        handler.onRequestStart?.(fakeController(record), {});
      }
    },
    attemptStarted: () => NaN,
    attemptEnded: (e, _long, outcome) => void ended.push({ endpoint: e, outcome }),
  };
  let controller: Dispatcher.DispatchController | undefined;
  const downstream: Dispatcher.DispatchHandler = {
    onRequestStart: (c) => void (controller = c),
    onResponseError() {},
  };
  const path = '/api/v1/namespaces/default/configmaps/a';
  new BalancedRequest(host, ROUTE, { origin: 'https://kubernetes.default.svc', method: 'GET', path }, downstream, false).start();
  t.deepEqual(sent.map((s) => s.endpoint), [slow, fast], 'a copy for the lagging endpoint, the caller’s request elsewhere');
  t.is(budget.retries, 1, 'the copy holds a unit of the retry budget');

  controller!.abort(Object.assign(new Error('the caller gave up'), { name: 'Error' }));
  t.true(sent[1]!.aborted, 'the caller’s own attempt is aborted (its connection reports the abort)');
  t.is(budget.retries, 0, 'the copy gave its unit back at once');
  const copy = ended.find((e) => e.endpoint === slow);
  t.deepEqual(copy?.outcome, { type: 'aborted' }, 'the copy ended with no verdict on the slow endpoint');

  // The copy's request gets its connection only now: it is aborted there at once, and nothing more is judged.
  const copyRecord = { aborted: false };
  handlers.get(slow)!.onRequestStart?.(fakeController(copyRecord), {});
  t.true(copyRecord.aborted, 'the copy never goes out');
  handlers.get(slow)!.onResponseError?.(null as never, Object.assign(new Error('aborted'), { code: 'UND_ERR_INFO' }));
  t.is(ended.filter((e) => e.endpoint === slow).length, 1, 'judged once, as aborted');
  t.is(budget.retries, 0);
});
