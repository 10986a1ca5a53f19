import type { RequestKind } from '../server/Apiserver.ts';
import type { Meter } from '../sim/Meter.ts';
import { exponential, type Random } from '../sim/random.ts';
import type { Scheduler } from '../sim/Scheduler.ts';
import type { AppCall, Transport } from './Transport.ts';

export interface WorkloadConfig {
  /** Informers per client: each LISTs, then WATCHes from that resourceVersion, re-watching as watches end. */
  informers: number;
  /** GETs per second per client (Poisson). */
  getsPerSecond: number;
  /** Writes per second per client (Poisson): a kubelet renews its node Lease every 10 s. */
  writesPerSecond: number;
  /**
   * A watch's `timeoutSeconds`: client-go's reflector asks for 5 min × [1, 2) (minWatchTimeout), so
   * the server ends each watch after 5–10 min and the informer re-watches.
   */
  watchTimeoutMs: number;
  /** client-go retries a 429 or 5xx that carries Retry-After, and a GET whose connection broke, up to this many times. */
  maxRetries: number;
  /**
   * How often an open watch sees a bookmark (or an event) that moves its resourceVersion on: the
   * watch cache sends a bookmark about once a minute. A quiet cluster, so a conservative figure: a
   * watch that moves to an apiserver which started after its resourceVersion gets 410 and relists.
   */
  bookmarkMs: number;
}

export const defaultWorkload: WorkloadConfig = {
  informers: 3,
  getsPerSecond: 0.2,
  writesPerSecond: 0.1,
  watchTimeoutMs: 300_000,
  maxRetries: 10,
  bookmarkMs: 60_000,
};

/** The reflector's backoff after a failed LIST or WATCH: 800 ms doubling to 30 s, jittered (client-go). */
function reflectorBackoff(failures: number, random: Random): number {
  return Math.min(30_000, 800 * 2 ** Math.min(failures, 6)) * (0.5 + random());
}

/**
 * What one simulated client does, the same whatever carries its requests: informers (list + watch),
 * GETs and writes, with client-go's own retry rules above the transport (rest/with_retry.go, as
 * ../shared/research/landscape-2026.md sums them up: a 429 or 5xx with Retry-After is retried after
 * that wait, a GET also after a broken connection, up to 10 times).
 */
export class Workload {
  readonly #clock: Scheduler;
  readonly #random: Random;
  readonly #meter: Meter;
  readonly #config: WorkloadConfig;
  readonly #transport: Transport;
  #stopped = false;

  constructor(clock: Scheduler, random: Random, meter: Meter, config: WorkloadConfig, transport: Transport) {
    this.#clock = clock;
    this.#random = random;
    this.#meter = meter;
    this.#config = config;
    this.#transport = transport;
  }

  /** Starts the informers within a second, and the GETs and writes. */
  start(): void {
    for (let i = 0; i < this.#config.informers; i++) this.#clock.setTimeout(() => new Informer(this).list(), this.#random() * 1000);
    if (this.#config.getsPerSecond > 0) this.#poisson('get', 1000 / this.#config.getsPerSecond);
    if (this.#config.writesPerSecond > 0) this.#poisson('write', 1000 / this.#config.writesPerSecond);
  }

  stop(): void {
    this.#stopped = true;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  get clock(): Scheduler {
    return this.#clock;
  }

  get random(): Random {
    return this.#random;
  }

  get meter(): Meter {
    return this.#meter;
  }

  get config(): WorkloadConfig {
    return this.#config;
  }

  send(call: AppCall): void {
    if (!this.#stopped) this.#transport.send(call);
  }

  #poisson(kind: RequestKind, meanMs: number): void {
    const next = (): void => {
      if (this.#stopped) return;
      new ShortCall(this, kind).send();
      this.#clock.setTimeout(next, exponential(this.#random, meanMs));
    };
    this.#clock.setTimeout(next, exponential(this.#random, meanMs));
  }
}

/** A GET, LIST or write, with client-go's retries; `done` is told whether it succeeded in the end. */
class ShortCall implements AppCall {
  readonly kind: RequestKind;
  readonly since = 0;
  readonly timeoutMs = 0;
  readonly #workload: Workload;
  readonly #done: ((ok: boolean) => void) | undefined;
  readonly #startedAt: number;
  #tries = 0;
  #failedOnce = false;

  constructor(workload: Workload, kind: RequestKind, done?: (ok: boolean) => void) {
    this.kind = kind;
    this.#workload = workload;
    this.#done = done;
    this.#startedAt = workload.clock.now();
  }

  send(): void {
    this.#tries++;
    this.#workload.send(this);
  }

  answered(status: number, headers: Record<string, string>): void {
    if (status < 400 || (status !== 429 && status < 500)) return this.#finish(true);
    this.#failure();
    const retryAfter = headers['retry-after'];
    if (retryAfter !== undefined) return this.#retry(Number(retryAfter) * 1000);
    this.#finish(false);
  }

  watchEnded(): void {
    // Not a watch.
  }

  errored(): void {
    this.#failure();
    // Only GETs (and LISTs) are retried after a broken connection; a write may have run.
    if (this.kind !== 'write') return this.#retry(1000);
    this.#finish(false);
  }

  #failure(): void {
    if (this.#failedOnce) return;
    this.#failedOnce = true;
    this.#workload.meter.failed++;
  }

  #retry(ms: number): void {
    const workload = this.#workload;
    if (this.#tries > workload.config.maxRetries || workload.stopped) return this.#finish(false);
    workload.meter.clientRetries++;
    workload.clock.setTimeout(() => this.send(), ms);
  }

  #finish(ok: boolean): void {
    const meter = this.#workload.meter;
    if (!ok) meter.finalFailed++;
    else {
      meter.completed[this.kind]++;
      meter.latency(this.#workload.clock.now() - this.#startedAt);
    }
    this.#done?.(ok);
  }
}

/** One informer: LIST, then WATCH from its resourceVersion for as long as watches keep ending cleanly. */
class Informer {
  readonly #workload: Workload;
  /** The resourceVersion it holds, as the virtual time it was current. */
  #since = 0;
  #failures = 0;

  constructor(workload: Workload) {
    this.#workload = workload;
  }

  list(): void {
    if (this.#workload.stopped) return;
    const startedAt = this.#workload.clock.now();
    new ShortCall(this.#workload, 'list', (ok) => {
      if (!ok) return this.#backoff(() => this.list());
      this.#since = startedAt;
      this.#failures = 0;
      this.watch();
    }).send();
  }

  watch(): void {
    const workload = this.#workload;
    if (workload.stopped) return;
    const timeoutMs = workload.config.watchTimeoutMs * (1 + workload.random());
    let openedAt = -1;
    const call: AppCall = {
      kind: 'watch',
      since: this.#since,
      timeoutMs,
      answered: (status, headers) => {
        if (status === 200) {
          openedAt = workload.clock.now();
          this.#failures = 0;
          return;
        }
        if (status === 410) {
          workload.meter.relists++;
          return this.list();
        }
        workload.meter.failed++;
        const retryAfter = headers['retry-after'];
        if (retryAfter !== undefined) {
          workload.meter.clientRetries++;
          workload.clock.setTimeout(() => this.watch(), Number(retryAfter) * 1000);
          return;
        }
        this.#backoff(() => this.watch());
      },
      // Ended by the server, or broken: client-go's reflector re-watches at once from the last
      // resourceVersion either way (a closed result channel is a normal end unless the watch lasted < 1 s).
      watchEnded: () => {
        const bookmarks = Math.floor((workload.clock.now() - openedAt) / workload.config.bookmarkMs);
        if (bookmarks > 0) this.#since = Math.max(this.#since, openedAt + bookmarks * workload.config.bookmarkMs);
        this.watch();
      },
      errored: () => {
        if (openedAt >= 0) return call.watchEnded();
        workload.meter.failed++;
        this.#backoff(() => this.watch());
      },
    };
    workload.send(call);
  }

  #backoff(then: () => void): void {
    const workload = this.#workload;
    workload.clock.setTimeout(then, reflectorBackoff(this.#failures++, workload.random));
  }
}
