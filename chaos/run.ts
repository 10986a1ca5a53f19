// One schedule: the cluster, the real balancer (attached to a client-node KubeConfig, which also runs
// an informer through it) and the one-connection baseline (a Pool of one connection behind an L4
// proxy), the same workload through both while the faults play, then close() everything and judge.
import { KubeConfig } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import * as undici from 'undici';
import { certs } from '../fixtures/certs/index.ts';
import { seeded } from '../fleet/sim/random.ts';
import { attachToKubeConfig, defaultOptions } from '../src/index.ts';
import { ChaosCluster } from './ChaosCluster.ts';
import { check, type Judgement, type Violation } from './invariants.ts';
import { mark, origins } from './leaks.ts';
import type { Schedule } from './schedule.ts';
import { startInformer } from './informer.ts';
import { TcpProxy } from './TcpProxy.ts';
import { drawOps, runOps, type RequestRecord } from './workload.ts';

export interface ScheduleResult {
  schedule: Schedule;
  violations: Violation[];
  judgements: Judgement[];
  failures: { balancer: number; pool: number };
  requests: { balancer: number; pool: number };
  /** Errors the client-node informer reported (it is restarted after each, as an application would). */
  informerErrors: number;
  /** The one-connection client's failed calls, for --verbose. */
  poolFailed: string[];
  /** The balancer's eject, restore and drain events, and the fault windows, in time order. */
  events: string[];
  /** Rolling restarts whose drain was cut after 8 s, with the request ids the instance still served. */
  stuck: { instance: number; at: number; ids: string[] }[];
  ms: number;
}

const CLOSE_BOUND_MS = 5_000;
const HEAP_LIMIT_MB = 400;

export async function runSchedule(schedule: Schedule): Promise<ScheduleResult> {
  const started = performance.now();
  const before = resources();
  const since = mark();
  const cc = await ChaosCluster.start(schedule.seed ^ schedule.index);
  const kc = new KubeConfig();
  kc.loadFromString(cc.cluster.kubeconfig());
  const attachment = await attachToKubeConfig(kc, { target: cc.cluster.target });
  const balancer = attachment.balancer!;
  let t0 = performance.now();
  const ejections: { time: number; instance: number; reason: string }[] = [];
  // The balancer's verdicts against the fault windows, for --verbose.
  const events: string[] = [];
  const at = (): string => `${Math.round(performance.now() - t0)} ms`;
  balancer.on('eject', (endpoint, reason, ms) => {
    ejections.push({ time: performance.now() - t0, instance: cc.indexOf(endpoint.address), reason });
    events.push(`${at()} eject #${cc.indexOf(endpoint.address)} ${reason} for ${ms} ms`);
  });
  const rebalances: { time: number; from: number; to: number }[] = [];
  balancer.on('rebalance', ({ from, to }) => {
    rebalances.push({ time: performance.now() - t0, from: cc.indexOf(from.address), to: cc.indexOf(to.address) });
    events.push(`${at()} rebalance a watch #${cc.indexOf(from.address)} → #${cc.indexOf(to.address)}`);
  });
  balancer.on('restore', (endpoint, via) => events.push(`${at()} restore #${cc.indexOf(endpoint.address)} via ${via}`));
  balancer.on('drain', (endpoint, reason) => events.push(`${at()} drain #${cc.indexOf(endpoint.address)} (${reason})`));
  const proxy = await TcpProxy.start(
    cc.instances.map((i) => ({ host: i.host, port: i.port })),
    seeded(schedule.seed, schedule.index, 5),
  );
  const pool = new undici.Pool(`https://127.0.0.1:${proxy.port}`, { connections: 1, allowH2: true, connect: { ca: certs.ca } });
  const informer = await startInformer(kc);

  const context = (): string => {
    const stats = balancer.stats();
    const states = stats.endpoints.map((e) => `#${cc.indexOf(e.address)} ${e.state}`).join(', ');
    return `balancer at its end: ${states}; retries refused by the budget so far ${stats.budget.refused}`;
  };
  const ops = drawOps(schedule.seed, schedule.index);
  const tag = `${schedule.seed}-${schedule.index}`;
  const headers = cc.cluster.authHeaders;
  t0 = performance.now();
  const [{ windows, stuck }, ...runs] = await Promise.all([
    cc.play(schedule.faults, t0),
    runOps({ name: 'balancer', dispatcher: balancer, origin: cc.instances[0]!.url, headers, context }, ops, tag, t0),
    runOps({ name: 'pool', dispatcher: pool, origin: `https://127.0.0.1:${proxy.port}`, headers }, ops, tag, t0),
  ]);
  const records: RequestRecord[] = runs.flat();

  const closeProblems: string[] = [];
  await informer.stop();
  const bounded = async (what: string, close: () => Promise<unknown>): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => (timer = setTimeout(resolve, CLOSE_BOUND_MS, 'late')));
    const ended = await Promise.race([close().then(() => 'ok'), late]);
    clearTimeout(timer);
    if (ended === 'late') closeProblems.push(`${what}.close() still pending after ${CLOSE_BOUND_MS} ms`);
  };
  await bounded('balancer', () => attachment.detach());
  await bounded('pool', () => pool.destroy());
  await proxy.close();
  await cc.close();
  const leftOpen = [...closeProblems, ...(await settledLeftovers(before, since))];
  globalThis.gc?.();
  const heapMb = process.memoryUsage().heapUsed / 2 ** 20;

  const { violations, judgements } = check({
    records,
    windows,
    instances: cc.instances.length,
    executions: cc.executions,
    arrivedAt: cc.arrivedAt,
    endless: new Set(cc.hooks.flatMap((hooks) => [...hooks.endless])),
    ejections,
    rebalances,
    stuck,
    leftOpen,
    heapMb,
    heapLimitMb: HEAP_LIMIT_MB,
    maxAttempts: defaultOptions.maxAttempts,
  });
  const count = (client: string, failed: boolean): number => records.filter((r) => r.client === client && (!failed || !r.ok)).length;
  return {
    schedule,
    violations,
    judgements,
    failures: { balancer: count('balancer', true), pool: count('pool', true) },
    requests: { balancer: count('balancer', false), pool: count('pool', false) },
    informerErrors: informer.errors(),
    stuck,
    poolFailed: records.filter((r) => r.client === 'pool' && !r.ok).map((r) => `${r.id} (${r.op}, ${r.error ?? `status ${r.status}`}) at ${Math.round(r.start)}–${Math.round(r.end)} ms`),
    events: [...events, ...windows.map((w) => `${Math.round(w.from)}–${Math.round(w.to)} ms ${w.kind} on #${w.instance}`)].sort((a, b) => parseInt(a) - parseInt(b)),
    ms: performance.now() - started,
  };
}

function resources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) counts.set(r, (counts.get(r) ?? 0) + 1);
  return counts;
}

/** Handles and timers beyond those open before the schedule, once they have had 500 ms to go. */
async function settledLeftovers(before: Map<string, number>, since: number): Promise<string[]> {
  let extra: string[] = [];
  for (let i = 0; i < 10; i++) {
    await sleep(50);
    extra = [...resources()]
      .filter(([kind, n]) => n > (before.get(kind) ?? 0))
      .map(([kind, n]) => `${kind} ×${n - (before.get(kind) ?? 0)}${origins(kind, since).map((o) => ` [made at ${o}]`).join('')}`);
    if (extra.length === 0) break;
  }
  return extra;
}
