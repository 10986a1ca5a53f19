import { Apiserver, type ApiserverConfig, type ApiserverMeter } from '../server/Apiserver.ts';
import type { Random } from './random.ts';
import type { Scheduler } from './Scheduler.ts';

export interface LifecycleConfig {
  /** From the process starting (listening) until `/readyz` passes: etcd, informers, watch cache. */
  startupMs: number;
  /** From the process exiting until its replacement starts (the kubelet restarting the static pod). */
  restartMs: number;
}

export const defaultLifecycle: LifecycleConfig = { startupMs: 15_000, restartMs: 5_000 };

/** The apiservers of one run, with what an operator does to them. */
export class Cluster {
  /** Every apiserver, in order of creation (a live array: servers added later appear in it). */
  readonly servers: Apiserver[] = [];
  readonly byAddress = new Map<string, Apiserver>();
  readonly lifecycle: LifecycleConfig;
  readonly #clock: Scheduler;
  readonly #random: Random;
  readonly #meter: ApiserverMeter;
  readonly #config: (index: number) => ApiserverConfig;
  readonly #added: Array<(server: Apiserver) => void> = [];

  constructor(clock: Scheduler, random: Random, meter: ApiserverMeter, config: (index: number) => ApiserverConfig, lifecycle: LifecycleConfig) {
    this.#clock = clock;
    this.#random = random;
    this.#meter = meter;
    this.#config = config;
    this.lifecycle = lifecycle;
  }

  /** A new apiserver: `ready` at once (the initial ones), or starting now. */
  add(ready: boolean): Apiserver {
    const index = this.servers.length;
    const server = new Apiserver(index, this.#config(index), this.#clock, this.#random, this.#meter);
    this.servers.push(server);
    this.byAddress.set(server.address, server);
    for (const listener of this.#added) listener(server);
    if (!ready) {
      server.crash();
      server.start(this.lifecycle.startupMs);
    }
    return server;
  }

  onAdded(listener: (server: Apiserver) => void): void {
    this.#added.push(listener);
  }

  /** SIGTERM, exit, restart, ready; `then` is called once it is ready again. */
  restart(server: Apiserver, then?: () => void): void {
    server.terminate(() => this.#clock.setTimeout(() => server.start(this.lifecycle.startupMs, then), this.lifecycle.restartMs));
  }

  /** The process dies without warning; the kubelet starts it again after `restartMs`. */
  crash(server: Apiserver, then?: () => void): void {
    server.crash();
    this.#clock.setTimeout(() => server.start(this.lifecycle.startupMs, then), this.lifecycle.restartMs);
  }

  /** Restarts every apiserver in turn, the next `pauseMs` after the previous is ready; `then` after the last. */
  rollingRestart(pauseMs: number, then: () => void): void {
    const step = (i: number): void => {
      const server = this.servers[i];
      if (!server) return then();
      this.restart(server, () => this.#clock.setTimeout(() => step(i + 1), i + 1 < this.servers.length ? pauseMs : 0));
    };
    step(0);
  }
}
