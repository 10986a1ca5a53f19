import type { EventEmitter } from 'node:events';
import { constants as h2, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import type { Dispatcher, Pool } from 'undici';
import type { Endpoint } from '../balancer/Endpoint.ts';
import type { UndiciModule } from '../options/BalancerOptions.ts';
import type { ResolvedOptions } from '../options/validate.ts';
import type { TlsState } from '../net/TlsState.ts';
import { tlsConnectOptions, type Route } from '../net/tls.ts';
import { watchConnectFailures } from './retrySafety.ts';

/**
 * Pools per endpoint, least recently used evicted (and closed) beyond this: one balanced origin
 * needs three (HTTP/2 short requests, HTTP/2 long-running ones, HTTP/1.1-only), the rest is headroom
 * for TLS name changes.
 */
const MAX_POOLS_PER_ENDPOINT = 8;

type PoolSettings = Pick<ResolvedOptions, 'connectTimeout' | 'keepAliveTimeout' | 'pingInterval'>;

/**
 * One undici `Pool` per endpoint (HTTP/2 when offered, so usually one multiplexed connection), one
 * for its long-running requests (watches: see `Origins.routeOf`), plus an HTTP/1.1-only pool for
 * legacy handlers, which undici 8 never puts on HTTP/2. A pool also
 * depends on the verification name (undici drops a connection whose servername changes) and on the
 * TLS credentials: when they are replaced, new requests get new pools and the old ones close once
 * what runs on them (watches included) has finished.
 */
export class EndpointPools {
  readonly #undici: UndiciModule;
  readonly #options: PoolSettings;
  readonly #tls: TlsState;
  readonly #forward: (event: string, origin: URL, targets: readonly Dispatcher[], error?: Error) => void;
  readonly #pools = new Map<Endpoint, Map<string, Pool>>();
  /** The TLS generation the pools in `#pools` were made for. */
  #generation: number;
  /** Pools of earlier TLS generations, closing, with the promise of their close. */
  readonly #stale = new Map<Pool, Promise<void>>();
  /** The pool `get` returned last, for that endpoint and route: a client mostly asks for the same. */
  #lastEndpoint: Endpoint | undefined;
  #lastRoute: Route | undefined;
  #lastPool: Pool | undefined;

  constructor(
    undici: UndiciModule,
    options: PoolSettings,
    tls: TlsState,
    forward: (event: string, origin: URL, targets: readonly Dispatcher[], error?: Error) => void,
  ) {
    // A request these pools fail with their connector's error never ran (`failedToConnect`).
    watchConnectFailures();
    this.#undici = undici;
    this.#options = options;
    this.#tls = tls;
    this.#forward = forward;
    this.#generation = tls.generation;
  }

  get(endpoint: Endpoint, route: Route): Pool {
    if (this.#tls.generation !== this.#generation) this.#retireStale();
    else if (endpoint === this.#lastEndpoint && route === this.#lastRoute) return this.#lastPool!;
    const pool = this.#lookup(endpoint, route);
    this.#lastEndpoint = endpoint;
    this.#lastRoute = route;
    this.#lastPool = pool;
    return pool;
  }

  #lookup(endpoint: Endpoint, route: Route): Pool {
    let byRoute = this.#pools.get(endpoint);
    if (!byRoute) {
      byRoute = new Map();
      this.#pools.set(endpoint, byRoute);
    }
    let pool = byRoute.get(route.key);
    if (pool) {
      // Least recently used last out; nothing to move when this endpoint has one pool.
      if (byRoute.size > 1) {
        byRoute.delete(route.key);
        byRoute.set(route.key, pool);
      }
      return pool;
    }
    pool = this.#create(endpoint.origin(route.protocol), route);
    byRoute.set(route.key, pool);
    if (byRoute.size > MAX_POOLS_PER_ENDPOINT) {
      const [oldestKey, oldest] = byRoute.entries().next().value as [string, Pool];
      byRoute.delete(oldestKey);
      this.#retire(oldest);
    }
    return pool;
  }

  /** Closes an endpoint's pools gracefully: requests and streams already running there finish. */
  retire(endpoint: Endpoint): Promise<void> {
    return this.#drop(endpoint, (pool) => pool.close());
  }

  async close(): Promise<void> {
    await Promise.all([...this.#current().map((pool) => pool.close()), ...this.#stale.values()]);
  }

  async destroy(error: Error | null): Promise<void> {
    const pools = [...this.#current(), ...this.#stale.keys()];
    this.#stale.clear();
    await Promise.all(pools.map((pool) => pool.destroy(error)));
  }

  async #drop(endpoint: Endpoint, end: (pool: Pool) => Promise<void>): Promise<void> {
    this.#forgetLast();
    const byRoute = this.#pools.get(endpoint);
    this.#pools.delete(endpoint);
    if (byRoute) await Promise.all([...byRoute.values()].map(end));
  }

  /** The number of pools open now (current and closing), for tests and stats. */
  get size(): number {
    let n = this.#stale.size;
    for (const byRoute of this.#pools.values()) n += byRoute.size;
    return n;
  }

  /** Every pool of the current generation, taken out of the map. */
  #current(): Pool[] {
    this.#forgetLast();
    const pools = [...this.#pools.values()].flatMap((byRoute) => [...byRoute.values()]);
    this.#pools.clear();
    return pools;
  }

  /** The pools a lookup last found may be closing: the next `get` looks again. */
  #forgetLast(): void {
    this.#lastEndpoint = undefined;
    this.#lastRoute = undefined;
    this.#lastPool = undefined;
  }

  /** The credentials changed: every pool made with the old ones closes gracefully. */
  #retireStale(): void {
    this.#generation = this.#tls.generation;
    for (const pool of this.#current()) this.#retire(pool);
  }

  /** Closes a pool gracefully (what runs on it finishes), kept in `#stale` until it has. */
  #retire(pool: Pool): void {
    const closed = pool.close().then(
      () => void this.#stale.delete(pool),
      () => void this.#stale.delete(pool),
    );
    this.#stale.set(pool, closed);
  }

  #create(origin: string, route: Route): Pool {
    const tls = route.protocol === 'https:' ? tlsConnectOptions(this.#tls.current, route.verification) : {};
    const pool = new this.#undici.Pool(origin, {
      allowH2: !route.http1Only,
      connectTimeout: this.#options.connectTimeout,
      keepAliveTimeout: this.#options.keepAliveTimeout,
      // An unanswered PING resets the connection by the next one: a black-holed apiserver frees
      // the requests waiting on it within two intervals instead of at their timeout.
      h2Options: { pingInterval: this.#options.pingInterval },
      connect: { ...tls, keepAlive: true, keepAliveInitialDelay: 30_000 },
    });
    (pool as EventEmitter).on('connect', (_url: URL, targets: readonly Dispatcher[]) => targets.forEach(ownOrphanStreams));
    (pool as EventEmitter).on('disconnect', (_url: URL, targets: readonly Dispatcher[]) => markBusyAfterGoaway(pool, targets));
    for (const event of ['connect', 'disconnect', 'connectionError']) {
      (pool as EventEmitter).on(event, (url: URL, targets: readonly Dispatcher[], error?: Error) => this.#forward(event, url, targets, error));
    }
    return pool;
  }
}

/**
 * A GOAWAY leaves the streams the old session accepted running on undici's client, which opens a
 * new connection only once fewer run than its `pipelining` (1 without a connection). The pool is not
 * told the client is busy, so the next request it hands that client waits for those streams to end:
 * behind a 200 whose body never ends, until its caller gives up (docs/chaos.md, schedule 300). The
 * pool's own flag is set as if the client had refused a request: it gets none until it drains.
 * The flag is undici's (`Symbol(needDrain)` on the pool and its clients), reached only here; the
 * only disconnect with requests still running is the GOAWAY's.
 */
function markBusyAfterGoaway(pool: Pool, targets: readonly Dispatcher[]): void {
  const client = targets.at(-1) as (Dispatcher & { stats?: { running: number } } & Record<symbol, unknown>) | undefined;
  if (!client || (client as Dispatcher) === pool || !((client.stats?.running ?? 0) > 0)) return;
  const busy = Object.getOwnPropertySymbols(pool).find((symbol) => symbol.description === 'needDrain');
  if (busy) client[busy] = true;
}

const ownedSessions = new WeakSet<ClientHttp2Session>();
const ignore = (): void => {};

/**
 * An abandoned request (the caller's abort, a copy superseded, an attempt moved off a silent
 * endpoint) whose stream undici destroys before its write side finished is never reset at the
 * apiserver; when the answer's headers come, Node makes a new stream for them that nobody owns,
 * and closing the balancer (undici destroys the session) errored it with no listener: an uncaught
 * `ClientDestroyedError`. Such a stream is reset at once and its errors dropped. The session is
 * undici's (`Symbol(http2Session)` on its client), reached only here.
 */
function ownOrphanStreams(target: Dispatcher): void {
  const key = Object.getOwnPropertySymbols(target).find((symbol) => symbol.description === 'http2Session');
  const session = key && (target as unknown as Record<symbol, ClientHttp2Session | null>)[key];
  if (!session || ownedSessions.has(session)) return;
  ownedSessions.add(session);
  session.on('stream', (stream: ClientHttp2Stream) => {
    stream.on('error', ignore);
    stream.close(h2.NGHTTP2_CANCEL);
  });
}
