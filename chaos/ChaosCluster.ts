// Three simulated apiservers with fault hooks, and the player that puts a schedule's faults on them
// at their times and records when each was really on (the invariants judge requests against that).
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiserverCluster, RESOURCES, type ApiserverInstance } from '../fixtures/apiserver/index.ts';
import { ChaosFaults } from '../fixtures/apiserver/ChaosHooks.ts';
import { seeded } from '../fleet/sim/random.ts';
import type { FaultWindow } from './invariants.ts';
import { INSTANCES, PRECREATED, type Fault, type FaultKind } from './schedule.ts';

function serviceMs(fault: Fault): number {
  if (fault.kind === 'slow-all') return Number(fault.params.latencyMs);
  if (fault.kind === 'trickle-body') return 16 * Number(fault.params.byteMs);
  return 0;
}

/** A rolling restart's instance that has not drained by then is crashed, and what it still served is reported. */
const DRAIN_BOUND_MS = 8_000;

/** Requests an instance still served when its drain passed `DRAIN_BOUND_MS` (ms from the workload's start). */
export interface Stuck {
  instance: number;
  at: number;
  ids: string[];
}

export class ChaosCluster {
  readonly cluster: ApiserverCluster;
  readonly hooks: ChaosFaults[];
  /** Shared by every instance: executions and arrivals (instance indexes) by request id. */
  readonly executions = new Map<string, number>();
  readonly arrivals = new Map<string, number>();
  readonly arrivedAt = new Map<string, Set<number>>();
  readonly #active: Set<Fault>[] = [];

  private constructor(cluster: ApiserverCluster, seed: number) {
    this.cluster = cluster;
    this.hooks = cluster.instances.map((instance, i) => {
      const hooks = new ChaosFaults(seeded(seed, 7_919, i), this.executions, this.arrivals);
      const intercept = hooks.intercept.bind(hooks);
      // Which instances a request reached: a watch cut there is judged by that instance's faults.
      hooks.intercept = (req, res, info) => {
        const id = req.headers['x-chaos-request-id'];
        if (typeof id === 'string') this.arrivedAt.set(id, (this.arrivedAt.get(id) ?? new Set()).add(i));
        return intercept(req, res, info);
      };
      instance.chaos = hooks;
      this.#active.push(new Set());
      return hooks;
    });
  }

  static async start(seed: number): Promise<ChaosCluster> {
    const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2', '127.0.0.3', '127.0.0.4'].slice(0, INSTANCES), leaseTtlMs: 60_000 });
    for (let i = 0; i < PRECREATED; i++) {
      cluster.store.create(RESOURCES.configmaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `pre-${i}`, namespace: 'default' }, data: { i: String(i) } });
    }
    return new ChaosCluster(cluster, seed);
  }

  get instances(): readonly ApiserverInstance[] {
    return this.cluster.instances;
  }

  /** Instance index of an endpoint `address:port`, or -1. */
  indexOf(address: string): number {
    return this.cluster.instances.findIndex((i) => i.authority === address || i.host === address);
  }

  /** Plays `faults` from now (the workload's start, `t0` on the performance clock); resolves once all are over. */
  async play(faults: readonly Fault[], t0: number): Promise<{ windows: FaultWindow[]; stuck: Stuck[] }> {
    const windows: FaultWindow[] = [];
    const stuck: Stuck[] = [];
    const now = (): number => performance.now() - t0;
    await Promise.all(
      faults.map(async (fault) => {
        await sleep(Math.max(0, fault.startMs - now()));
        try {
          await this.#run(fault, windows, stuck, now);
        } catch (err) {
          console.error(`chaos: fault ${fault.kind} failed to play: ${(err as Error).message}`);
        }
      }),
    );
    return { windows, stuck };
  }

  async #run(fault: Fault, windows: FaultWindow[], stuck: Stuck[], now: () => number): Promise<void> {
    const targets = fault.target === 'all' ? this.instances.map((_, i) => i) : [fault.target];
    if (fault.kind === 'rolling-restart-503' || fault.kind === 'rolling-restart-429') {
      const sendRetryAfter = fault.kind === 'rolling-restart-429';
      for (const i of targets) {
        const from = now();
        const instance = this.instances[i]!;
        const restarted = instance.restart({ graceful: true, shutdown: { delayMs: Number(fault.params.delayMs ?? 0), sendRetryAfter, drainMs: 300, timeoutMs: 1_000 } });
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => (timer = setTimeout(resolve, DRAIN_BOUND_MS, 'late')));
        if ((await Promise.race([restarted, late])) === 'late') {
          // The apiserver would wait up to its 60-s RequestTimeout: report who holds it, and move on.
          stuck.push({ instance: i, at: now(), ids: this.hooks[i]!.openIds() });
          await instance.crash();
          await restarted.catch(() => {});
          if (instance.state !== 'running') await instance.restart();
        }
        clearTimeout(timer);
        await instance.waitForState('running', 10_000);
        windows.push({ kind: fault.kind, instance: i, from, to: now(), serviceMs: 0 });
      }
      return;
    }
    const from = now();
    for (const i of targets) {
      this.#active[i]!.add(fault);
      this.#apply(i);
    }
    if (fault.kind === 'crash' || fault.kind === 'crash-mid-response') {
      if (fault.kind === 'crash-mid-response') await sleep(150);
      await Promise.all(targets.map((i) => this.instances[i]!.crash()));
    }
    await sleep(fault.durationMs);
    for (const i of targets) {
      this.#active[i]!.delete(fault);
      this.#apply(i);
      const instance = this.instances[i]!;
      if ((fault.kind === 'crash' || fault.kind === 'crash-mid-response') && instance.state === 'crashed' && !this.#crashedBy(i)) await instance.restart();
    }
    for (const i of targets) windows.push({ kind: fault.kind, instance: i, from, to: now(), serviceMs: serviceMs(fault) });
  }

  #crashedBy(i: number): boolean {
    return [...this.#active[i]!].some((f) => f.kind === 'crash' || f.kind === 'crash-mid-response');
  }

  /** Sets instance `i`'s modes and hooks from every fault on it now (overlapping ones combine: the worst wins). */
  #apply(i: number): void {
    const active = [...this.#active[i]!];
    const max = (kind: FaultKind, key: string): number => Math.max(0, ...active.filter((f) => f.kind === kind).map((f) => Number(f.params[key] ?? 0)));
    const has = (kind: FaultKind): Fault | undefined => active.find((f) => f.kind === kind);
    const seats = active.filter((f) => f.kind === 'apf-saturation').map((f) => Number(f.params.seats));
    this.instances[i]!.setModes({
      blackHole: has('black-hole') !== undefined,
      latencyMs: max('slow-all', 'latencyMs'),
      goawayChance: max('goaway-storm', 'chance'),
      bodyPauseMs: has('crash-mid-response') ? 300 : 0,
      apfSeats: seats.length > 0 ? Math.min(...seats) : 0,
      apfQueueLength: 0,
    });
    const hooks = this.hooks[i]!;
    hooks.healthDelayMs = max('slow-readyz', 'delayMs');
    const storm = active.find((f) => f.kind === 'storm-503' || f.kind === 'storm-429');
    hooks.storm = storm && {
      status: storm.kind === 'storm-503' ? 503 : 429,
      fraction: Number(storm.params.fraction),
      retryAfter: storm.params.retryAfter as string | undefined,
      trickleMs: Number(storm.params.trickleMs ?? 0),
    };
    const body = active.find((f) => f.kind === 'trickle-body' || f.kind === 'endless-body' || f.kind === 'rst-mid-stream');
    hooks.body = body && {
      kind: body.kind === 'trickle-body' ? 'trickle' : body.kind === 'endless-body' ? 'endless' : 'rst',
      fraction: Number(body.params.fraction),
      byteMs: Number(body.params.byteMs ?? 0),
    };
  }

  async close(): Promise<void> {
    for (const hooks of this.hooks) hooks.clear();
    await this.cluster.close();
  }
}
