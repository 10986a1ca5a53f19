import type { EventEmitter } from 'node:events';
import type { Dispatcher, Pool } from 'undici';
import type { Endpoint } from '../balancer/Endpoint.ts';
import type { ResolvedOptions, UndiciModule } from '../options.ts';
import { tlsConnectOptions, type Verification } from './tls.ts';

/**
 * One undici `Pool` per endpoint (HTTP/2 when offered, so usually one multiplexed connection), plus
 * an HTTP/1.1-only pool for legacy handlers, which undici 8 never puts on HTTP/2. A pool also
 * depends on the verification name: undici drops a connection whose servername changes.
 */
export class EndpointPools {
  readonly #undici: UndiciModule;
  readonly #options: ResolvedOptions;
  readonly #forward: (event: string, origin: URL, targets: readonly Dispatcher[], error?: Error) => void;
  readonly #pools = new Map<Endpoint, Map<string, Pool>>();

  constructor(
    undici: UndiciModule,
    options: ResolvedOptions,
    forward: (event: string, origin: URL, targets: readonly Dispatcher[], error?: Error) => void,
  ) {
    this.#undici = undici;
    this.#options = options;
    this.#forward = forward;
  }

  get(endpoint: Endpoint, protocol: string, verification: Verification, http1Only: boolean): Pool {
    let byKey = this.#pools.get(endpoint);
    if (!byKey) {
      byKey = new Map();
      this.#pools.set(endpoint, byKey);
    }
    const key = `${protocol}|${verification.name}|${http1Only ? 1 : 2}`;
    let pool = byKey.get(key);
    if (!pool) {
      pool = this.#create(endpoint.origin(protocol), protocol, verification, http1Only);
      byKey.set(key, pool);
    }
    return pool;
  }

  /** Closes an endpoint's pools gracefully: requests and streams already running there finish. */
  retire(endpoint: Endpoint): Promise<void> {
    const byKey = this.#pools.get(endpoint);
    this.#pools.delete(endpoint);
    if (!byKey) return Promise.resolve();
    return Promise.all([...byKey.values()].map((pool) => pool.close())).then(() => undefined);
  }

  /** Destroys an endpoint's connections now (requests on them fail); later requests open new ones. */
  reset(endpoint: Endpoint): Promise<void> {
    const byKey = this.#pools.get(endpoint);
    this.#pools.delete(endpoint);
    if (!byKey) return Promise.resolve();
    return Promise.all([...byKey.values()].map((pool) => pool.destroy())).then(() => undefined);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#pools.keys()].map((endpoint) => this.retire(endpoint)));
  }

  async destroy(error: Error | null): Promise<void> {
    const pools = [...this.#pools.values()].flatMap((byKey) => [...byKey.values()]);
    this.#pools.clear();
    await Promise.all(pools.map((pool) => pool.destroy(error)));
  }

  #create(origin: string, protocol: string, verification: Verification, http1Only: boolean): Pool {
    const tls = protocol === 'https:' ? tlsConnectOptions(this.#options.tls, verification) : {};
    const pool = new this.#undici.Pool(origin, {
      allowH2: !http1Only,
      connectTimeout: this.#options.connectTimeout,
      keepAliveTimeout: this.#options.keepAliveTimeout,
      // An unanswered PING resets the connection by the next one: a black-holed apiserver frees
      // the requests waiting on it within two intervals instead of at their timeout.
      h2Options: { pingInterval: this.#options.pingInterval },
      connect: { ...tls, keepAlive: true, keepAliveInitialDelay: 30_000 },
    });
    for (const event of ['connect', 'disconnect', 'connectionError']) {
      (pool as EventEmitter).on(event, (url: URL, targets: readonly Dispatcher[], error?: Error) => this.#forward(event, url, targets, error));
    }
    return pool;
  }
}
