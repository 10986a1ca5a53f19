import type { Random } from '../sim/random.ts';
import type { Scheduler } from '../sim/Scheduler.ts';
import type { Apiserver } from './Apiserver.ts';

export interface SlicesConfig {
  /** The lease endpoint reconciler's interval: a server that turned ready is listed at its next run. */
  reconcileMs: number;
  /** The reconciler's lease TTL: a crashed server stays listed until its lease runs out. */
  leaseTtlMs: number;
  /** How often an apiserver's watch cache sends each watch a bookmark. */
  bookmarkMs: number;
}

/** kubernetes pkg/controlplane: DefaultEndpointReconcilerInterval 10 s, DefaultEndpointReconcilerTTL 15 s. */
export const defaultSlices: SlicesConfig = { reconcileMs: 10_000, leaseTtlMs: 15_000, bookmarkMs: 60_000 };

/**
 * The `default/kubernetes` EndpointSlice, as the apiservers' lease endpoint reconciler writes it
 * (../shared/research/landscape-2026.md): a server that turns ready is added at its next reconcile
 * (within 10 s); one that gets SIGTERM removes itself at once (its pre-shutdown hook); one that
 * crashed stays listed until its lease runs out (15 s) and another server's reconciler drops it.
 *
 * Every change is one MODIFIED event to every discovery watch, sent by the apiserver that holds
 * the watch; each apiserver also sends its discovery watches a bookmark every minute (all at once:
 * a per-watch timer would cost more than it tells). Versions are virtual times, as the
 * informers' are, so a watch from before a server's restart gets 410 there.
 */
export class EndpointSlices {
  readonly #config: SlicesConfig;
  readonly #clock: Scheduler;
  readonly #random: Random;
  readonly #servers: readonly Apiserver[];
  readonly #listed = new Set<Apiserver>();
  #version = 0;
  #list: string | undefined;

  constructor(config: SlicesConfig, clock: Scheduler, random: Random, servers: readonly Apiserver[]) {
    this.#config = config;
    this.#clock = clock;
    this.#random = random;
    this.#servers = servers;
    for (const server of servers) {
      if (server.ready) this.#listed.add(server);
      this.watch(server);
    }
  }

  /** Follows a server's readiness and starts its bookmarks (for servers added later too). */
  watch(server: Apiserver): void {
    server.onReadiness(() => this.#readinessChanged(server));
    const bookmark = (): void => {
      server.discoveryEvent(`{"type":"BOOKMARK","object":{"kind":"EndpointSlice","apiVersion":"discovery.k8s.io/v1","metadata":{"resourceVersion":"${Math.floor(this.#clock.now())}"}}}`);
      this.#clock.setTimeout(bookmark, this.#config.bookmarkMs);
    };
    this.#clock.setTimeout(bookmark, this.#random() * this.#config.bookmarkMs);
  }

  /** A LIST's body: `{ items, metadata: { resourceVersion } }`. */
  list(): string {
    return (this.#list ??= `{"kind":"EndpointSliceList","apiVersion":"discovery.k8s.io/v1","metadata":{"resourceVersion":"${this.#version}"},"items":[${this.#slice()}]}`);
  }

  #readinessChanged(server: Apiserver): void {
    if (server.ready) {
      this.#clock.setTimeout(() => {
        if (server.ready && !this.#listed.has(server)) this.#change(() => this.#listed.add(server));
      }, this.#random() * this.#config.reconcileMs);
    } else if (server.state === 'down') {
      this.#clock.setTimeout(() => {
        if (!server.ready && this.#listed.has(server)) this.#change(() => this.#listed.delete(server));
      }, this.#config.leaseTtlMs);
    } else if (this.#listed.has(server)) {
      this.#change(() => this.#listed.delete(server));
    }
  }

  #change(apply: () => void): void {
    apply();
    this.#version = Math.floor(this.#clock.now());
    this.#list = undefined;
    const line = `{"type":"MODIFIED","object":${this.#slice()}}`;
    for (const server of this.#servers) server.discoveryEvent(line);
  }

  #slice(): string {
    const endpoints = [...this.#listed].map((s) => `{"addresses":["${s.address}"],"conditions":{"ready":true}}`).join(',');
    return `{"metadata":{"name":"kubernetes","namespace":"default","resourceVersion":"${this.#version}","labels":{"kubernetes.io/service-name":"kubernetes"}},"addressType":"IPv4","endpoints":[${endpoints}],"ports":[{"name":"https","port":6443,"protocol":"TCP"}]}`;
  }
}
