// The invariants every schedule is judged by, from what really happened: the requests' records, when
// each fault was on where, what the simulator counted, what the balancer ejected, what close() left.
// Pure: no sockets, so that test/chaos/invariants.test.ts can hand it facts.
import { SERVING_KINDS, type FaultKind } from './schedule.ts';
import type { RequestRecord } from './workload.ts';

/** When a fault was really on one instance, in ms from the workload's start. */
export interface FaultWindow {
  kind: FaultKind;
  instance: number;
  from: number;
  to: number;
  /** How much longer than usual a request served there may take while it is on (slow handler, trickled body). */
  serviceMs: number;
}

export interface Facts {
  records: readonly RequestRecord[];
  windows: readonly FaultWindow[];
  instances: number;
  /** Executions of each write by request id (the simulator's count). */
  executions: ReadonlyMap<string, number>;
  /** The instances each request id reached. */
  arrivedAt: ReadonlyMap<string, ReadonlySet<number>>;
  ejections: readonly { time: number; instance: number; reason: string }[];
  /** The balancer's watch rebalances (it ends a watch on purpose so that its client re-watches elsewhere). */
  rebalances?: readonly { time: number; from: number; to: number }[];
  /** Handles and timers left after every client, proxy and server closed (`Timeout ×2`, …). */
  leftOpen: readonly string[];
  /** Request ids an instance still served when its drain was cut short, and when (see ChaosCluster's `Stuck`). */
  stuck?: readonly { instance: number; at: number; ids: readonly string[] }[];
  /**
   * Request ids the simulator answered with a 200 whose body never ends (`endless-body`). Once the
   * status went to the caller no client may retry (the caller may have read part of the body), and
   * one connection hangs alike: such a read is held to its deadline by its own answer, not by the balancer.
   */
  endless?: ReadonlySet<string>;
  heapMb: number;
  heapLimitMb: number;
  /** The balancer's `maxAttempts`. */
  maxAttempts: number;
}

export type Invariant = 'abandoned-still-running' | 'write-twice' | 'unjustified-failure' | 'wait-bound' | 'healthy-ejected' | 'left-open' | 'heap';

export interface Violation {
  invariant: Invariant;
  id?: string;
  detail: string;
}

/** Why one failed balancer request could not have gone elsewhere, or why it could have. */
export interface Judgement {
  id: string;
  justified: boolean;
  why: string;
}

/** How long beyond its service time a read may wait while an endpoint stays healthy. */
const WAIT_BOUND_MS = 5_000;
/** An ejection is judged against the faults of this long before it. */
const EJECTION_LOOKBACK_MS = 3_000;
const WRITES = new Set(['create', 'patch', 'delete']);

export function check(facts: Facts): { violations: Violation[]; judgements: Judgement[] } {
  const violations: Violation[] = [];
  const judgements: Judgement[] = [];
  const faultsOn = (i: number, a: number, b: number): FaultWindow[] => facts.windows.filter((w) => w.instance === i && w.from < b && w.to > a && !SERVING_KINDS.has(w.kind));
  const healthy = (a: number, b: number): number[] => range(facts.instances).filter((i) => faultsOn(i, a, b).length === 0);
  const names = (is: Iterable<number>): string => [...is].map((i) => `#${i}`).join(',') || 'none';

  for (const [id, n] of facts.executions) {
    if (n > 1) violations.push({ invariant: 'write-twice', id, detail: `${id} executed ${n} times (at ${names(facts.arrivedAt.get(id) ?? [])})` });
  }
  for (const r of facts.records) {
    if (r.client !== 'balancer') continue;
    const up = healthy(r.start, r.end);
    if (!r.ok) {
      const judgement = judge(r, facts, up, faultsOn);
      judgements.push(judgement);
      if (!judgement.justified) violations.push({ invariant: 'unjustified-failure', id: r.id, detail: judgement.why });
    }
    if ((r.op === 'get' || r.op === 'list' || r.op === 'discovery') && !facts.endless?.has(r.id)) {
      const service = Math.max(0, ...facts.windows.filter((w) => w.from < r.end && w.to > r.start).map((w) => w.serviceMs));
      const waited = r.end - r.start;
      if (waited > service + WAIT_BOUND_MS && up.length > 0) {
        violations.push({ invariant: 'wait-bound', id: r.id, detail: `${r.id} (${r.op}) took ${Math.round(waited)} ms (service ${service} ms + bound ${WAIT_BOUND_MS}) while ${names(up)} stayed healthy` });
      }
    }
  }
  for (const e of facts.ejections) {
    if (faultsOn(e.instance, e.time - EJECTION_LOOKBACK_MS, e.time + 1).length > 0) continue;
    const serving = facts.windows.filter((w) => w.instance === e.instance && w.from < e.time && w.to > e.time - EJECTION_LOOKBACK_MS).map((w) => w.kind);
    violations.push({
      invariant: 'healthy-ejected',
      detail: `#${e.instance} ejected (${e.reason}) at ${Math.round(e.time)} ms while it served within its normal latency${serving.length ? ` (only ${[...new Set(serving)].join(', ')} on it)` : ''}`,
    });
  }
  // A request its caller was done with over a second before must not still run on an apiserver
  // (held copies, hedges, explorations): the balancer's machinery, so only its requests are judged.
  const ended = new Map(facts.records.filter((r) => r.client === 'balancer').map((r) => [r.id, r]));
  for (const s of facts.stuck ?? []) {
    for (const id of s.ids) {
      const r = ended.get(id);
      if (r && r.op !== 'watch' && r.end < s.at - 1_000) {
        violations.push({ invariant: 'abandoned-still-running', id, detail: `${id} (${r.op}, ${r.ok ? 'done' : (r.error ?? r.status)} at ${Math.round(r.end)} ms) still ran on #${s.instance} at ${Math.round(s.at)} ms, holding its drain` });
      }
    }
  }
  if (facts.leftOpen.length > 0) violations.push({ invariant: 'left-open', detail: `left after close(): ${facts.leftOpen.join(', ')}` });
  if (facts.heapMb > facts.heapLimitMb) violations.push({ invariant: 'heap', detail: `heap ${Math.round(facts.heapMb)} MB after GC, limit ${facts.heapLimitMb} MB` });
  return { violations, judgements };
}

function judge(r: RequestRecord, facts: Facts, up: number[], faultsOn: (i: number, a: number, b: number) => FaultWindow[]): Judgement {
  const reached = [...(facts.arrivedAt.get(r.id) ?? [])];
  const what = r.error ?? `status ${r.status}`;
  const at = reached.map((i) => `#${i}`).join(',') || 'no apiserver';
  const kinds = (is: number[]): string => [...new Set(is.flatMap((i) => faultsOn(i, r.start, r.end).map((w) => `${w.kind}@#${i}`)))].join(', ');
  const context = ` [${Math.round(r.start)}–${Math.round(r.end)} ms at ${at}${r.context ? `; ${r.context}` : ''}]`;
  const ok = (why: string): Judgement => ({ id: r.id, justified: true, why: `${r.id} (${r.op}, ${what}): ${why}${context}` });
  const bad = (why: string): Judgement => ({ id: r.id, justified: false, why: `${r.id} (${r.op}, ${what}): ${why}${context}` });
  if (up.length === 0) return ok(`no endpoint stayed healthy during it (${kinds(range(facts.instances))})`);
  // Handed to the caller after the hold bound, the answer is the caller's: its end (the caller's
  // deadline, or its apiserver breaking mid-body) fails one connection alike.
  if (facts.endless?.has(r.id) && r.status === 200) return ok(`its answer was a 200 whose body never ended (endless-body at ${at}): delivered, so no client may retry it`);
  const healthyNote = `while ${up.map((i) => `#${i}`).join(',')} stayed healthy`;
  if (r.op === 'watch') {
    const moved = (facts.rebalances ?? []).find((m) => reached.includes(m.from) && m.time >= r.start - 50 && m.time <= r.end + 50);
    if (moved && r.error === 'watch ended early') return ok(`the balancer rebalanced a watch from #${moved.from} to #${moved.to} at ${Math.round(moved.time)} ms (on purpose: its client re-watches)`);
    const hit = kinds(reached);
    return hit ? ok(`its apiserver ${at} had ${hit}; a watch cannot move without its client re-listing`) : bad(`watch at ${at} cut while that apiserver kept serving`);
  }
  if (WRITES.has(r.op)) {
    if (r.status === 429 && (facts.executions.get(r.id) ?? 0) === 0 && reached.length < 2) return bad(`a 429 (not executed) from ${at} passed on after one attempt ${healthyNote}`);
    if (reached.length > 0) return ok(`the write reached ${at} before it failed; a resend could execute it twice`);
    const holes = range(facts.instances).filter((i) => faultsOn(i, r.start, r.end).some((w) => w.kind === 'black-hole' || w.kind.startsWith('crash')));
    if (holes.length > 0) return ok(`sent toward ${kinds(holes)}: the transport cannot prove it unread`);
    return bad(`reached no apiserver, so it was provably unsent, ${healthyNote}`);
  }
  if (reached.length >= facts.maxAttempts) return ok(`failed at all ${reached.length} attempts it may make (${at})`);
  return bad(`${reached.length} attempt(s) (${at}) of ${facts.maxAttempts} ${healthyNote}`);
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}
