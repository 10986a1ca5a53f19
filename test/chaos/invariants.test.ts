// The chaos suite's invariant checker, handed facts by hand: each invariant is broken once and kept once.
import test from 'ava';
import { check, type Facts, type FaultWindow } from '../../chaos/invariants.ts';
import type { RequestRecord } from '../../chaos/workload.ts';

function facts(overrides: Partial<Facts>): Facts {
  return {
    records: [],
    windows: [],
    instances: 3,
    executions: new Map(),
    arrivedAt: new Map(),
    ejections: [],
    leftOpen: [],
    heapMb: 50,
    heapLimitMb: 400,
    maxAttempts: 3,
    ...overrides,
  };
}

const record = (id: string, op: RequestRecord['op'], fields: Partial<RequestRecord> = {}): RequestRecord => ({
  id,
  client: 'balancer',
  op,
  start: 1_000,
  end: 1_200,
  ok: false,
  deadline: false,
  ...fields,
});
const window = (kind: FaultWindow['kind'], instance: number, from = 0, to = 4_000, serviceMs = 0): FaultWindow => ({ kind, instance, from, to, serviceMs });

test('a write executed twice is a violation; once is not', (t) => {
  const { violations } = check(facts({ executions: new Map([['w1', 2], ['w2', 1]]), arrivedAt: new Map([['w1', new Set([0, 1])]]) }));
  t.deepEqual(
    violations.map((v) => [v.invariant, v.id]),
    [['write-twice', 'w1']],
  );
  t.regex(violations[0]!.detail, /executed 2 times \(at #0,#1\)/);
});

test('a GET failed after one attempt while two endpoints stayed healthy is unjustified; with every endpoint faulted it is justified', (t) => {
  const get = record('g1', 'get', { error: 'UND_ERR_SOCKET: other side closed' });
  const arrivedAt = new Map([['g1', new Set([0])]]);
  const one = check(facts({ records: [get], windows: [window('crash', 0)], arrivedAt }));
  t.deepEqual(
    one.violations.map((v) => v.invariant),
    ['unjustified-failure'],
  );
  t.regex(one.judgements[0]!.why, /1 attempt\(s\) \(#0\) of 3 while #1,#2 stayed healthy/);

  const all = check(facts({ records: [get], windows: [0, 1, 2].map((i) => window('black-hole', i)), arrivedAt }));
  t.deepEqual(all.violations, []);
  t.true(all.judgements[0]!.justified);
  t.regex(all.judgements[0]!.why, /no endpoint stayed healthy/);
});

test('a failed write that reached an apiserver is justified; one provably unsent with a healthy endpoint is not', (t) => {
  const reached = check(facts({ records: [record('c1', 'create', { error: 'UND_ERR_SOCKET' })], windows: [window('crash', 0)], arrivedAt: new Map([['c1', new Set([0])]]) }));
  t.deepEqual(reached.violations, []);
  t.regex(reached.judgements[0]!.why, /reached #0 before it failed/);
  const unsent = check(facts({ records: [record('c2', 'create', { error: 'ECONNREFUSED' })], windows: [window('slow-all', 0, 0, 4_000, 600)] }));
  t.deepEqual(
    unsent.violations.map((v) => v.invariant),
    ['unjustified-failure'],
  );
});

test('the wait bound: a GET over its service time plus the bound with a healthy endpoint breaks it; within it does not', (t) => {
  const slow = record('g2', 'get', { start: 0, end: 9_000, ok: true });
  t.deepEqual(
    check(facts({ records: [slow], windows: [window('storm-503', 0)] })).violations.map((v) => v.invariant),
    ['wait-bound'],
  );
  t.deepEqual(check(facts({ records: [slow], windows: [window('slow-all', 0, 0, 9_000, 4_500)] })).violations, []);
});

test('an endpoint ejected with only a slow /readyz on it breaks the ejection invariant; one that crashed does not', (t) => {
  const slowProbe = check(facts({ windows: [window('slow-readyz', 1)], ejections: [{ time: 2_000, instance: 1, reason: 'unreachable' }] }));
  t.deepEqual(
    slowProbe.violations.map((v) => v.invariant),
    ['healthy-ejected'],
  );
  t.regex(slowProbe.violations[0]!.detail, /only slow-readyz on it/);
  t.deepEqual(check(facts({ windows: [window('crash', 1, 1_000, 1_500)], ejections: [{ time: 2_000, instance: 1, reason: 'unreachable' }] })).violations, []);
});

test('a watch cut while its apiserver kept serving is unjustified; cut by a crash of it, justified', (t) => {
  const watch = record('w', 'watch', { error: 'watch ended early', start: 0, end: 2_000 });
  const arrivedAt = new Map([['w', new Set([2])]]);
  t.deepEqual(
    check(facts({ records: [watch], windows: [window('goaway-storm', 2), window('crash', 0)], arrivedAt })).violations.map((v) => v.invariant),
    ['unjustified-failure'],
  );
  t.deepEqual(check(facts({ records: [watch], windows: [window('crash', 2, 500, 900)], arrivedAt })).violations, []);
  const rebalanced = check(facts({ records: [watch], arrivedAt, rebalances: [{ time: 1_990, from: 2, to: 0 }] }));
  t.deepEqual(rebalanced.violations, []);
  t.regex(rebalanced.judgements[0]!.why, /rebalanced a watch from #2 to #0/);
});

test('handles left after close() and a heap over its limit are violations', (t) => {
  t.deepEqual(
    check(facts({ leftOpen: ['Timeout ×1'], heapMb: 500 })).violations.map((v) => v.invariant),
    ['left-open', 'heap'],
  );
});

test('a request its caller was done with that still runs on a draining apiserver is a violation', (t) => {
  const done = record('g3', 'get', { start: 0, end: 2_000, ok: false, error: 'caller deadline' });
  const { violations } = check(facts({ records: [done], stuck: [{ instance: 2, at: 9_000, ids: ['g3', 'unknown'] }] }));
  t.true(violations.some((v) => v.invariant === 'abandoned-still-running' && v.id === 'g3'));
  t.false(violations.some((v) => v.id === 'unknown'));
});

test("the one connection's abandoned requests are not the balancer's machinery: not judged", (t) => {
  const done = record('p3', 'get', { client: 'pool', start: 0, end: 2_000, ok: false, error: 'caller deadline' });
  t.deepEqual(check(facts({ records: [done], stuck: [{ instance: 2, at: 9_000, ids: ['p3'] }] })).violations, []);
});

test('a read whose endless 200 was delivered and then broke with its apiserver is justified; one whose 200 was not endless is not', (t) => {
  const broke = { start: 1_000, end: 2_500, status: 200, error: 'ECONNRESET: read ECONNRESET' };
  const records = [record('g1', 'get', broke), record('g2', 'get', broke)];
  const { violations, judgements } = check(facts({ records, windows: [window('crash-mid-response', 0)], arrivedAt: new Map([['g1', new Set([0])], ['g2', new Set([0])]]), endless: new Set(['g1']) }));
  t.deepEqual(
    violations.map((v) => [v.invariant, v.id]),
    [['unjustified-failure', 'g2']],
  );
  t.regex(judgements.find((j) => j.id === 'g1')!.why, /delivered, so no client may retry it/);
});

test("a read held to its deadline by its own endless 200 breaks neither the wait bound nor the failure rule; another read's wait does", (t) => {
  const held = { start: 1_000, end: 9_001, deadline: true, status: 200, error: 'caller deadline' };
  const records = [record('g1', 'get', held), record('g2', 'get', held)];
  const { violations } = check(facts({ records, windows: [window('endless-body', 1)], arrivedAt: new Map([['g1', new Set([1])], ['g2', new Set([1])]]), endless: new Set(['g1']) }));
  t.deepEqual(
    violations.map((v) => [v.invariant, v.id]),
    [['unjustified-failure', 'g2'], ['wait-bound', 'g2']],
  );
});
