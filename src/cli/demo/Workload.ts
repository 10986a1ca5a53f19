import { setTimeout as sleep } from 'node:timers/promises';
import type { ClientNodeModule, DemoClient } from './clients.ts';
import { InformerStop } from './InformerStop.ts';
import { seconds } from './seconds.ts';

export interface WorkloadOptions {
  /** Where this client's objects live. */
  namespace: string;
  /** API calls per second (not counting informers), like client-go's QPS limit. */
  qps: number;
  /** Concurrent callers, like a controller's workers. */
  workers: number;
}

export interface WorkloadStats {
  /** API calls made (list, get, create, delete), informers' lists and watches not included. */
  calls: number;
  /** Calls that failed: the application saw an error. */
  failed: number;
  /** Informers that stopped on an error (a watch cut by a crash or by an apiserver's exit) and were started again. */
  informerRestarts: number;
  /** The first few failure messages. */
  errors: string[];
}

/** Each worker goes round this: per round one create and one delete, two gets, two lists. */
const ROUND = ['create', 'list', 'get', 'list-pods', 'get', 'delete'] as const;
const KEEP = 4;
const INFORMER_RESTART_MS = 500;
const MAX_FAILURE_TIMES = 10_000;

/**
 * What a small controller does, through client-node: three informers (ConfigMaps, Pods, Services
 * of its namespace) and workers that list, get, create and delete ConfigMaps at a fixed rate.
 */
export class Workload {
  readonly stats: WorkloadStats = { calls: 0, failed: 0, informerRestarts: 0, errors: [] };
  /** When calls failed (`performance.now()`), for the chart; the first `MAX_FAILURE_TIMES`. */
  readonly failedAt: number[] = [];
  readonly #options: WorkloadOptions;
  readonly #core: InstanceType<ClientNodeModule['CoreV1Api']>;
  readonly #informers: Array<InstanceType<ClientNodeModule['ListWatch']>>;
  readonly #informerStop: InformerStop;
  #workers: Promise<void>[] = [];
  #running = false;
  #nextSlot = 0;
  #startedAt = 0;
  #inFlight = 0;
  #paused: Promise<void> | undefined;
  #idle: (() => void) | undefined;

  constructor(k8s: ClientNodeModule, client: DemoClient, options: WorkloadOptions) {
    this.#options = options;
    this.#informerStop = new InformerStop(client.watch);
    const core = client.kubeConfig.makeApiClient(k8s.CoreV1Api);
    this.#core = core;
    const namespace = options.namespace;
    const base = `/api/v1/namespaces/${namespace}`;
    const watch = this.#informerStop.watch;
    const listWatchOptions = { delayFn: this.#informerStop.delayFn };
    this.#informers = [
      new k8s.ListWatch(`${base}/configmaps`, watch, () => core.listNamespacedConfigMap({ namespace }), false, undefined, undefined, listWatchOptions),
      new k8s.ListWatch(`${base}/pods`, watch, () => core.listNamespacedPod({ namespace }), false, undefined, undefined, listWatchOptions),
      new k8s.ListWatch(`${base}/services`, watch, () => core.listNamespacedService({ namespace }), false, undefined, undefined, listWatchOptions),
    ] as Array<InstanceType<ClientNodeModule['ListWatch']>>;
  }

  /** Creates the namespace, starts the informers (their first lists done), then the workers. */
  async start(): Promise<void> {
    await this.#core.createNamespace({ body: { metadata: { name: this.#options.namespace } } });
    this.#running = true;
    this.#startedAt = performance.now();
    for (const informer of this.#informers) {
      informer.on('error', () => {
        if (!this.#running) return;
        this.stats.informerRestarts++;
        // The informer re-watches from the last resourceVersion it saw; nothing is listed twice.
        void sleep(INFORMER_RESTART_MS).then(() => (this.#running ? informer.start() : undefined));
      });
    }
    await Promise.all(this.#informers.map((i) => i.start()));
    this.#nextSlot = performance.now();
    this.#workers = Array.from({ length: this.#options.workers }, (_, i) => this.#work(i));
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#workers);
    this.#informerStop.stop();
    await Promise.all(this.#informers.map((i) => i.stop()));
  }

  /**
   * Holds new calls until the returned function is called, once the calls in flight have finished
   * (or `maxWaitMs` passed). A crash cuts whatever is on the wire, and no client can take that back:
   * a create may have been applied, and a list whose response had begun reached the application
   * already, so neither is retried. The demo crashes its apiserver between two calls (watches
   * are cut all the same: their informers restart).
   */
  async pause(maxWaitMs = 10_000): Promise<() => void> {
    let release!: () => void;
    this.#paused = new Promise((resolve) => (release = resolve));
    if (this.#inFlight > 0) {
      const idle = new Promise<void>((resolve) => (this.#idle = resolve));
      await Promise.race([idle, sleep(maxWaitMs, undefined, { ref: false })]);
      this.#idle = undefined;
    }
    return () => {
      this.#paused = undefined;
      release();
    };
  }

  async #work(worker: number): Promise<void> {
    const core = this.#core;
    const namespace = this.#options.namespace;
    const mine: string[] = [];
    for (let step = worker; this.#running; step++) {
      await this.#slot();
      if (!this.#running) return;
      const op = ROUND[step % ROUND.length]!;
      while (this.#paused) await this.#paused;
      this.#inFlight++;
      try {
        switch (op) {
          case 'create': {
            const created = await core.createNamespacedConfigMap({ namespace, body: { metadata: { generateName: `worker-${worker}-` }, data: { step: String(step) } } });
            mine.push(created.metadata!.name!);
            break;
          }
          case 'list':
            await core.listNamespacedConfigMap({ namespace, limit: 100 });
            break;
          case 'list-pods':
            await core.listNamespacedPod({ namespace });
            break;
          case 'get':
            if (mine.length > 0) await core.readNamespacedConfigMap({ namespace, name: mine[step % mine.length]! });
            else await core.readNamespace({ name: namespace });
            break;
          case 'delete':
            if (mine.length > KEEP) await core.deleteNamespacedConfigMap({ namespace, name: mine.shift()! });
            else await core.listNamespacedService({ namespace });
            break;
        }
      } catch (error) {
        this.stats.failed++;
        if (this.failedAt.length < MAX_FAILURE_TIMES) this.failedAt.push(performance.now());
        if (this.stats.errors.length < 5) this.stats.errors.push(`${op} at ${seconds(performance.now() - this.#startedAt)}: ${describe(error)}`);
      } finally {
        this.stats.calls++;
        if (--this.#inFlight === 0) this.#idle?.();
      }
    }
  }

  /** Waits for the next request slot: `qps` slots a second, shared by the workers. */
  async #slot(): Promise<void> {
    const now = performance.now();
    // After a stall, do not burst to catch up: a rate limiter forgets missed slots.
    const at = Math.max(this.#nextSlot, now);
    this.#nextSlot = at + 1000 / this.#options.qps;
    if (at > now) await sleep(at - now);
  }
}

/** The message and its causes (`fetch failed` says little on its own), on one line. */
function describe(error: unknown): string {
  const parts: string[] = [];
  for (let e = error as { message?: string; code?: string; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    parts.push(`${e.code ? `${e.code} ` : ''}${(e.message ?? 'error').split('\n')[0]}`);
  }
  return parts.join(' ← ').slice(0, 300);
}
