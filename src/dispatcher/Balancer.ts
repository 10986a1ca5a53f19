import { EventEmitter } from 'node:events';
import * as undici from 'undici';
import type { Agent } from 'undici';
import type { EndpointInfo } from '../balancer/Endpoint.ts';
import type { Endpoint } from '../balancer/Endpoint.ts';
import { EndpointSet } from '../balancer/EndpointSet.ts';
import { isLongRunning } from '../balancer/longRunning.ts';
import { BalancerError } from '../errors.ts';
import { resolveOptions, type BalancerOptions, type ResolvedOptions, type UndiciModule } from '../options.ts';
import type { EndpointAddress, Resolver } from '../resolver/Resolver.ts';
import { AttemptHandler, type AttemptOutcome } from './AttemptHandler.ts';
import { EndpointPools } from './EndpointPools.ts';
import { withHost } from './headers.ts';
import { verificationFor, type Verification } from './tls.ts';

/** undici reads `allowH2` and `servername` per request, though its types do not list them. */
type DispatchOptions = undici.Dispatcher.DispatchOptions & { allowH2?: boolean; servername?: string };
type DispatchHandler = undici.Dispatcher.DispatchHandler;
type AnyHandler = DispatchHandler & { onError?: (error: Error) => void };

export interface BalancerEvents {
  /** The endpoint set changed (resolver update). */
  endpoints: [endpoints: EndpointInfo[]];
  /** Resolution failed; the previous endpoints stay in use. */
  'resolver-error': [error: Error];
  warning: [message: string];
}

/**
 * An undici `Dispatcher` that sends each request to one of the apiserver endpoints the resolver
 * lists. Use it wherever undici takes a dispatcher: `fetch(url, { dispatcher })`,
 * `request(url, { dispatcher })`, `balancer.compose(...)`.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- adds typed events to undici's EventEmitter typings
export class Balancer extends undici.Dispatcher {
  readonly #options: ResolvedOptions;
  readonly #undici: UndiciModule;
  readonly #resolver: Resolver;
  readonly #set: EndpointSet;
  readonly #pools: EndpointPools;
  readonly #verifications = new Map<string, Verification>();
  /** Parsed request origins: a client talks to a handful, and parsing a URL per request costs. */
  readonly #origins = new Map<string, URL>();
  #passthrough: Agent | undefined;
  /** Requests that arrived before the first endpoint set. */
  #waiting: Array<() => void> = [];
  #readyWaiters: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  #lastResolverError: Error | undefined;
  #closed = false;

  constructor(options: BalancerOptions) {
    super();
    this.#options = resolveOptions(options);
    this.#undici = this.#options.undici ?? undici;
    this.#resolver = this.#options.resolver;
    this.#set = new EndpointSet(this.#options.clock, this.#options);
    this.#pools = new EndpointPools(this.#undici, this.#options, (event, origin, targets, error) =>
      this.#emit(event, origin, [this, ...targets], error),
    );
    this.#resolver.start({
      endpoints: (set) => this.#onEndpoints(set),
      error: (error) => this.#onResolverError(error),
      warning: (message) => this.#emit('warning', message),
    });
  }

  /** A snapshot of every endpoint with its state and counters. */
  endpoints(): EndpointInfo[] {
    return this.#set.list().map((e) => e.info());
  }

  /**
   * Resolves once the first endpoint set is known; rejects with `ERR_NO_ENDPOINTS` if resolution has
   * failed and no set is known yet, and with `ERR_BALANCER_CLOSED` after close.
   */
  ready(): Promise<void> {
    if (this.#set.known) return Promise.resolve();
    if (this.#closed) return Promise.reject(closedError());
    if (this.#lastResolverError) return Promise.reject(this.#noEndpoints());
    return new Promise((resolve, reject) => this.#readyWaiters.push({ resolve, reject }));
  }

  override dispatch(opts: DispatchOptions, handler: DispatchHandler): boolean {
    const legacy = typeof handler.onRequestStart !== 'function';
    let wrapped: DispatchHandler = handler;
    try {
      wrapped = legacy ? wrapLegacyHandler(this.#undici, handler) : handler;
      // Instance methods of undici 8 reject `opts.dispatcher`; undici 7's request() leaks it here.
      const { dispatcher: _ignored, ...rest } = opts as DispatchOptions & { dispatcher?: unknown };
      if (this.#closed) throw closedError();
      const origin = this.#parseOrigin(rest.origin);
      if (!this.#isBalanced(origin)) return this.#passthroughDispatch(rest, wrapped, legacy);
      if (!this.#set.known) {
        this.#waiting.push(() => this.#dispatchBalanced(rest, origin, wrapped, legacy));
        return true;
      }
      this.#dispatchBalanced(rest, origin, wrapped, legacy);
    } catch (error) {
      reportError(wrapped, error as Error);
    }
    return true;
  }

  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    const done = this.#shutdown(() => this.#pools.close(), () => this.#passthrough?.close());
    if (!callback) return done;
    done.then(callback, callback);
  }

  override destroy(): Promise<void>;
  override destroy(error: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(error: Error | null, callback: () => void): void;
  override destroy(errorOrCallback?: Error | null | (() => void), callback?: () => void): Promise<void> | void {
    const cb = typeof errorOrCallback === 'function' ? errorOrCallback : callback;
    const error = typeof errorOrCallback === 'function' ? null : (errorOrCallback ?? null);
    const done = this.#shutdown(() => this.#pools.destroy(error), () => this.#passthrough?.destroy(error));
    if (!cb) return done;
    done.then(cb, cb);
  }

  async #shutdown(pools: () => Promise<void>, passthrough: () => Promise<void> | undefined): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      const error = closedError();
      for (const waiter of this.#readyWaiters) waiter.reject(error);
      this.#readyWaiters = [];
      const waiting = this.#waiting;
      this.#waiting = [];
      for (const run of waiting) run(); // each fails with ERR_BALANCER_CLOSED
    }
    await Promise.all([this.#resolver.close?.(), pools(), passthrough()]);
  }

  /** undici types `emit` for its own events only. */
  #emit(event: string, ...args: unknown[]): void {
    EventEmitter.prototype.emit.call(this, event, ...args);
  }

  #isBalanced(origin: URL): boolean {
    const only = this.#options.origin;
    return only === undefined || only.origin === origin.origin;
  }

  #dispatchBalanced(opts: DispatchOptions, origin: URL, handler: DispatchHandler, legacy: boolean): void {
    try {
      if (this.#closed) throw closedError();
      const longRunning = isLongRunning(opts.path, opts.upgrade, opts.query);
      const endpoint = this.#set.pick({ longRunning });
      if (!endpoint) throw this.#noEndpoints();
      const verification = this.#verificationFor(origin);
      const pool = this.#pools.get(endpoint, origin.protocol, verification, legacy);
      this.#begin(endpoint, longRunning);
      const attempt = new AttemptHandler(handler, (outcome) => this.#end(endpoint, longRunning, outcome));
      pool.dispatch(
        {
          ...opts,
          origin: endpoint.origin(origin.protocol),
          headers: withHost(opts.headers, origin.host),
          ...(verification.sni ? { servername: verification.sni } : {}),
          ...(longRunning && opts.bodyTimeout == null ? { bodyTimeout: 0 } : {}),
          ...(legacy ? { allowH2: false } : {}),
        },
        attempt,
      );
    } catch (error) {
      reportError(handler, error as Error);
    }
  }

  #begin(endpoint: Endpoint, longRunning: boolean): void {
    endpoint.inFlight++;
    endpoint.requests++;
    if (longRunning) endpoint.streams++;
  }

  #end(endpoint: Endpoint, longRunning: boolean, outcome: AttemptOutcome): void {
    endpoint.inFlight--;
    if (longRunning) endpoint.streams--;
    if (outcome.aborted) return;
    if (outcome.error !== undefined || (outcome.statusCode !== undefined && outcome.statusCode >= 500)) endpoint.failures++;
  }

  #parseOrigin(origin: DispatchOptions['origin']): URL {
    if (origin === undefined || origin === null || origin === '') {
      throw new BalancerError('ERR_INVALID_OPTION', 'the request has no origin: call the balancer with an absolute URL');
    }
    if (typeof origin !== 'string') return origin;
    let url = this.#origins.get(origin);
    if (!url) {
      url = new URL(origin);
      if (this.#origins.size >= 256) this.#origins.clear();
      this.#origins.set(origin, url);
    }
    return url;
  }

  #verificationFor(origin: URL): Verification {
    let verification = this.#verifications.get(origin.origin);
    if (!verification) {
      verification = verificationFor(origin, this.#options.tls);
      this.#verifications.set(origin.origin, verification);
    }
    return verification;
  }

  #passthroughDispatch(opts: DispatchOptions, handler: DispatchHandler, legacy: boolean): boolean {
    this.#passthrough ??= new this.#undici.Agent();
    return this.#passthrough.dispatch(legacy ? { ...opts, allowH2: false } : opts, handler);
  }

  #onEndpoints(addresses: readonly EndpointAddress[]): void {
    if (this.#closed) return;
    if (addresses.length === 0 && this.#set.size > 0) {
      // Resolvers must keep the last good set; an empty update is refused rather than obeyed.
      this.#emit('warning', 'resolver reported no endpoints; keeping the previous set');
      return;
    }
    const { removed } = this.#set.update(addresses);
    for (const endpoint of removed) void this.#pools.retire(endpoint);
    this.#emit('endpoints', this.endpoints());
    if (addresses.length > 0) {
      for (const waiter of this.#readyWaiters) waiter.resolve();
      this.#readyWaiters = [];
    }
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const run of waiting) run();
  }

  #onResolverError(error: Error): void {
    this.#lastResolverError = error;
    this.#emit('resolver-error', error);
    if (this.#set.known) return;
    // Nothing to fall back on yet: fail fast instead of queueing forever.
    const failure = this.#noEndpoints();
    for (const waiter of this.#readyWaiters) waiter.reject(failure);
    this.#readyWaiters = [];
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const run of waiting) run();
  }

  #noEndpoints(): BalancerError {
    const cause = this.#lastResolverError;
    const detail = cause ? `: ${cause.message}` : this.#set.size === 0 ? ': the resolver listed none' : ': none is ready';
    return new BalancerError('ERR_NO_ENDPOINTS', `no apiserver endpoint can take the request${detail}`, { cause });
  }
}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- see the class
export interface Balancer {
  on<E extends keyof BalancerEvents>(event: E, listener: (...args: BalancerEvents[E]) => void): this;
  once<E extends keyof BalancerEvents>(event: E, listener: (...args: BalancerEvents[E]) => void): this;
  off<E extends keyof BalancerEvents>(event: E, listener: (...args: BalancerEvents[E]) => void): this;
}

/** Builds a balancer; every option is validated here and a bad one throws `BalancerError`. */
export function createBalancer(options: BalancerOptions): Balancer {
  return new Balancer(options);
}


/** Wraps a v1 handler (Node's built-in fetch, undici 7) for the v2 core of undici 8. */
function wrapLegacyHandler(module: UndiciModule, handler: DispatchHandler): DispatchHandler {
  const wrapper = module.Dispatcher1Wrapper as unknown as { wrapHandler(h: unknown): DispatchHandler };
  return wrapper.wrapHandler(handler);
}

function closedError(): BalancerError {
  return new BalancerError('ERR_BALANCER_CLOSED', 'the balancer is closed');
}

/** Failures are reported through the handler, never thrown out of dispatch (undici's contract). */
function reportError(handler: AnyHandler, error: Error): void {
  if (typeof handler.onResponseError === 'function') handler.onResponseError(null as never, error);
  else handler.onError?.(error);
}
