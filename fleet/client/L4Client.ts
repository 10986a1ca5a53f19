import type { Apiserver, Connection, Exchange, WireError } from '../server/Apiserver.ts';
import type { Random } from '../sim/random.ts';
import type { Scheduler } from '../sim/Scheduler.ts';
import type { AppCall, Transport } from './Transport.ts';

/**
 * An L4 load balancer in front of the apiservers (haproxy `mode tcp`, IPVS, a cloud NLB): it picks
 * a backend per connection, at random among those its health check passes, and never looks inside.
 * Health check as OpenShift's: `/readyz` every 10 s, 2 passes up, 2 failures down (Red Hat docs, in
 * ../shared/research/landscape-2026.md §6). A backend that refuses the connection is skipped
 * (haproxy's redispatch), so only listening backends are picked.
 */
export class L4Balancer {
  readonly #servers: readonly Apiserver[];
  readonly #clock: Scheduler;
  readonly #random: Random;
  readonly #intervalMs: number;
  readonly #health = new Map<Apiserver, { up: boolean; passes: number; fails: number }>();

  constructor(servers: readonly Apiserver[], clock: Scheduler, random: Random, intervalMs = 10_000) {
    this.#servers = servers;
    this.#clock = clock;
    this.#random = random;
    this.#intervalMs = intervalMs;
    for (const server of servers) this.#state(server);
  }

  /** A backend's health-check state; the first look at a backend (one added later too) starts its checks. */
  #state(server: Apiserver): { up: boolean; passes: number; fails: number } {
    let state = this.#health.get(server);
    if (state) return state;
    const health = { up: server.ready, passes: 0, fails: 0 };
    this.#health.set(server, health);
    const check = (): void => {
      if (server.readyz() === true) {
        health.fails = 0;
        if (++health.passes >= 2) health.up = true;
      } else {
        health.passes = 0;
        if (++health.fails >= 2) health.up = false;
      }
      this.#clock.setTimeout(check, this.#intervalMs);
    };
    this.#clock.setTimeout(check, this.#random() * this.#intervalMs);
    state = health;
    return state;
  }

  /** A new connection through the balancer, or `undefined` when no backend listens. */
  connect(): Connection | undefined {
    const healthy: Apiserver[] = [];
    const listening: Apiserver[] = [];
    for (const server of this.#servers) {
      if (!server.listening) continue;
      listening.push(server);
      if (this.#state(server).up) healthy.push(server);
    }
    const from = healthy.length > 0 ? healthy : listening;
    if (from.length === 0) return undefined;
    return from[Math.floor(this.#random() * from.length)]!.connect();
  }
}

/**
 * A client behind the L4 balancer: one HTTP/2 connection for everything, as client-go and undici 8
 * keep, until the connection breaks or the server sends GOAWAY; then a new one, wherever the
 * balancer puts it. Open watches stay on the connection they started on.
 */
export class L4Client implements Transport {
  readonly #balancer: L4Balancer;
  readonly #clock: Scheduler;
  #connection: Connection | undefined;
  retries = 0;

  constructor(balancer: L4Balancer, clock: Scheduler) {
    this.#balancer = balancer;
    this.#clock = clock;
  }

  send(call: AppCall): void {
    const now = this.#clock.now();
    if (!this.#connection?.usable(now)) this.#connection = this.#balancer.connect();
    const connection = this.#connection;
    if (!connection) {
      this.#clock.setTimeout(() => call.errored(), 1);
      return;
    }
    connection.server.handle(connection, new L4Exchange(this, call));
  }

  /** Go's HTTP/2 transport replays a request a GOAWAY says was never processed, on a new connection. */
  replay(call: AppCall): void {
    this.retries++;
    this.send(call);
  }

  close(): void {
    this.#connection = undefined;
  }
}

class L4Exchange implements Exchange {
  readonly #client: L4Client;
  readonly #call: AppCall;
  #open = false;

  constructor(client: L4Client, call: AppCall) {
    this.#client = client;
    this.#call = call;
  }

  get kind(): AppCall['kind'] {
    return this.#call.kind;
  }

  get since(): number {
    return this.#call.since;
  }

  get timeoutMs(): number {
    return this.#call.timeoutMs;
  }

  get discovery(): boolean {
    return this.#call.discovery === true;
  }

  event(line: string): void {
    this.#call.event?.(line);
  }

  respond(status: number, headers: Record<string, string>): void {
    if (this.#call.kind === 'watch' && status === 200) this.#open = true;
    this.#call.answered(status, headers);
  }

  ended(): void {
    this.#call.watchEnded();
  }

  failed(error: WireError): void {
    if (error === 'GOAWAY') return this.#client.replay(this.#call);
    if (this.#open) this.#call.watchEnded();
    else this.#call.errored();
  }
}
