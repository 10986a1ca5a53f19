import { BalancerError } from '../errors.ts';
import { verificationFor, type Route } from '../net/tls.ts';
import type { TlsState } from '../net/TlsState.ts';
import type { DispatchOptions } from './handlers.ts';

/** A request origin seen before, with its routes once a balanced request needed them. */
export interface KnownOrigin {
  readonly url: URL;
  readonly balanced: boolean;
  route: Route | undefined;
  legacyRoute: Route | undefined;
  longRoute: Route | undefined;
}

/** Each cache holds at most this many origins: a client talks to a handful. */
const MAX_ORIGINS = 256;

/**
 * Request origins as callers write them, each parsed and judged once (parsing a URL or building its
 * origin string per request costs), and the route of each balanced origin, for modern and for
 * legacy (HTTP/1.1-only) handlers.
 */
export class Origins {
  /** `options.origin` as a string, the only origin balanced. */
  readonly #only: string;
  readonly #tls: TlsState;
  readonly #known = new Map<string, KnownOrigin>();
  readonly #routes = new Map<string, Route>();
  readonly #legacyRoutes = new Map<string, Route>();
  readonly #longRoutes = new Map<string, Route>();
  /** The last origin asked for: a client mostly asks for one, and hashing its string per request costs. */
  #lastKey: string | undefined;
  #last: KnownOrigin | undefined;

  constructor(only: URL, tls: TlsState) {
    this.#only = only.origin;
    this.#tls = tls;
  }

  balances(origin: URL): boolean {
    return this.#only === origin.origin;
  }

  known(origin: DispatchOptions['origin']): KnownOrigin {
    if (origin === undefined || origin === null || origin === '') {
      throw new BalancerError('ERR_INVALID_OPTION', 'the request has no origin: call the balancer with an absolute URL');
    }
    if (origin === this.#lastKey) return this.#last as KnownOrigin;
    const key = typeof origin === 'string' ? origin : origin.origin;
    let known = this.#known.get(key);
    if (!known) {
      const url = typeof origin === 'string' ? new URL(origin) : origin;
      known = { url, balanced: this.balances(url), route: undefined, legacyRoute: undefined, longRoute: undefined };
      if (this.#known.size >= MAX_ORIGINS) this.#known.clear();
      this.#known.set(key, known);
    }
    if (typeof origin === 'string') {
      this.#lastKey = origin;
      this.#last = known;
    }
    return known;
  }

  /**
   * The route of a balanced request of `known`: HTTP/1.1-only (legacy handlers, upgrades), or over
   * HTTP/2, long-running requests (watches) on their own pool, so on connections of their own. A
   * connection that gets a GOAWAY lets the streams it accepted finish, a watch's for minutes, and
   * undici's client opens the next connection only once fewer requests run than its `pipelining`
   * (1 without a connection): the short requests it was given meanwhile waited for the watch to end
   * (docs/chaos.md, finding 4). Short requests sent later go to a new connection
   * (`markBusyAfterGoaway`); only those the GOAWAY refused wait for the short ones still running there.
   */
  routeOf(known: KnownOrigin, http1: boolean, longRunning: boolean): Route {
    if (http1) return (known.legacyRoute ??= this.route(known.url, true));
    return longRunning ? (known.longRoute ??= this.route(known.url, false, true)) : (known.route ??= this.route(known.url, false));
  }

  route(origin: URL, legacy: boolean, longRunning = false): Route {
    const routes = legacy ? this.#legacyRoutes : longRunning ? this.#longRoutes : this.#routes;
    let route = routes.get(origin.origin);
    if (!route) {
      const verification = verificationFor(origin, this.#tls.current);
      const kind = legacy ? 'h1' : longRunning ? 'h2 long-running' : 'h2';
      const key = `${origin.protocol}//${origin.host} ${verification.name} ${verification.sni ?? '-'} ${kind}`;
      route = { key, protocol: origin.protocol, host: origin.host, hostHeaders: Object.freeze({ host: origin.host }), verification, http1Only: legacy };
      if (routes.size >= MAX_ORIGINS) routes.clear();
      routes.set(origin.origin, route);
    }
    return route;
  }

  /** The TLS settings changed, and the verification name with them maybe: routes are made again. */
  clear(): void {
    this.#routes.clear();
    this.#legacyRoutes.clear();
    this.#longRoutes.clear();
    this.#known.clear();
    this.#lastKey = undefined;
    this.#last = undefined;
  }
}
