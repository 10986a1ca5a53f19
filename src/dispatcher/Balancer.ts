import { EventEmitter } from 'node:events';
import * as undici from 'undici';
import type { Agent } from 'undici';
import type { Endpoint, EndpointInfo } from '../balancer/Endpoint.ts';
import { EndpointSet } from '../balancer/EndpointSet.ts';
import { classify } from '../balancer/longRunning.ts';
import { BalancerError } from '../errors.ts';
import { HealthTracker, type ProbeResult } from '../health/HealthTracker.ts';
import { LagMonitor } from '../health/LagMonitor.ts';
import { OutcomeJudge } from '../health/OutcomeJudge.ts';
import { Prober, type ProbeSettings } from '../health/Prober.ts';
import { ProbeSender } from '../health/sendProbe.ts';
import { StallWatch } from '../health/StallWatch.ts';
import { withHost } from '../net/headers.ts';
import { TlsState } from '../net/TlsState.ts';
import { ejectChannel, pickChannel, retryChannel } from '../observability/channels.ts';
import type { BalancerEvents } from '../observability/events.ts';
import { attachLogger } from '../observability/logger.ts';
import { Totals, type BalancerStats } from '../observability/stats.ts';
import type { BalancerOptions, UndiciModule } from '../options/BalancerOptions.ts';
import { resolveOptions, validateTls, type ResolvedOptions } from '../options/validate.ts';
import { describeTarget } from '../resolver/describeTarget.ts';
import { limitEndpoints } from '../resolver/limitEndpoints.ts';
import { createResolver } from '../resolver/parseTarget.ts';
import type { EndpointAddress, Resolver } from '../resolver/Resolver.ts';
import { AttemptAccounts } from './AttemptAccounts.ts';
import { BalancedRequest } from './BalancedRequest.ts';
import { BodyTimers } from './BodyTimer.ts';
import { EndpointPools } from './EndpointPools.ts';
import { Hedging } from './Hedge.ts';
import { registerInternals, type BalancerInternals } from './internals.ts';
import type { RequestHost } from './RequestHost.ts';
import { Origins, type KnownOrigin } from './Origins.ts';
import { RetryBudget } from './RetryBudget.ts';
import { WaitingAttempts } from './WaitingAttempts.ts';
import { WatchRebalancer } from './WatchRebalancer.ts';
import { reportError, withoutDispatcher, wrapLegacyHandler, type DispatchHandler, type DispatchOptions } from './handlers.ts';

/**
 * An undici `Dispatcher` that sends each request to one of the apiserver endpoints the resolver
 * lists. Use it wherever undici takes a dispatcher: `fetch(url, { dispatcher })`,
 * `request(url, { dispatcher })`, `balancer.compose(...)`.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- adds typed events to undici's EventEmitter typings
export class Balancer extends undici.Dispatcher {
  readonly #options: ResolvedOptions;
  /** Replaced when credentials rotate. */
  readonly #tls: TlsState;
  readonly #undici: UndiciModule;
  readonly #resolver: Resolver;
  readonly #set: EndpointSet;
  readonly #pools: EndpointPools;
  readonly #origins: Origins;
  readonly #health: HealthTracker;
  readonly #judge: OutcomeJudge;
  readonly #prober: Prober | undefined;
  /** Probes at once an endpoint whose timed requests stalled (a black hole no answer will tell). */
  readonly #stallWatch: StallWatch | undefined;
  readonly #probes: ProbeSender;
  readonly #budget: RetryBudget;
  readonly #totals: Totals;
  readonly #host: RequestHost;
  readonly #rebalancer: WatchRebalancer | undefined;
  readonly #hedging: Hedging | undefined;
  readonly #bodyTimers: BodyTimers;
  /** Idempotent attempts handed to a pool and not yet answered: moved when health takes their endpoint out. */
  readonly #unanswered = new WaitingAttempts();
  /** The origin probes are sent for: the balanced one, never a request's guess. */
  readonly #probeOrigin: URL;
  /** Our own event-loop lag: a timeout during our stall says nothing about the apiserver. */
  readonly #lag = new LagMonitor();
  #passthrough: Agent | undefined;
  /** Requests that arrived before the first endpoint set. */
  #waiting: Array<() => void> = [];
  #readyWaiters: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  #lastResolverError: Error | undefined;
  #closed = false;

  constructor(options: BalancerOptions) {
    super();
    this.#options = resolveOptions(options);
    const { clock } = this.#options;
    const tls = (this.#tls = new TlsState(this.#options.tls));
    this.#resolver = limitEndpoints(
      createResolver(this.#options.target, { clock, dns: this.#options.dns, tls: () => tls.current, bootstrap: this.#options.bootstrap }),
      this.#options.maxEndpoints,
    );
    this.#undici = this.#options.undici ?? undici;
    this.#set = new EndpointSet(clock, this.#options, this.#lag);
    this.#pools = new EndpointPools(this.#undici, this.#options, tls, (event, origin, targets, error) =>
      this.#emit(event, origin, [this, ...targets], error),
    );
    this.#budget = new RetryBudget(this.#options.retryBudget.percent, this.#options.retryBudget.min, clock);
    this.#totals = new Totals(describeTarget(options.target));
    this.#health = new HealthTracker(
      { ...this.#options, probes: this.#options.probe !== false },
      clock,
      {
        changed: () => this.#set.rebuild(),
        eject: (endpoint, reason, ms) => {
          endpoint.ejections++;
          endpoint.lastEjection = { reason, at: Date.now(), durationMs: ms };
          this.#totals.ejections[reason]++;
          if (ejectChannel.hasSubscribers) ejectChannel.publish({ balancer: this, endpoint: endpoint.info(), reason, durationMs: ms });
          this.#emit('eject', endpoint.info(), reason, ms);
          this.#moveWaiting(endpoint, reason === 'unreachable');
        },
        drain: (endpoint, reason) => {
          this.#emit('drain', endpoint.info(), reason);
          this.#moveWaiting(endpoint, false);
        },
        restore: (endpoint, via) => {
          this.#emit('restore', endpoint.info(), via);
          this.#rebalancer?.nudge();
        },
      },
      () => this.#set.list(), Math.random, () => this.#set.panic, // the picker's panic: see HealthTracker.#backAtOnce
    );
    this.#judge = new OutcomeJudge(this.#health, this.#options, clock, this.#lag, {
      earned: (now) => this.#budget.earn(now),
      refresh: () => this.#resolver.refresh?.(),
    });
    this.#probes = new ProbeSender(this.#judge, clock, (message) => this.#emit('warning', message), () => this.#closed);
    this.#probeOrigin = this.#options.origin;
    this.#origins = new Origins(this.#options.origin, tls);
    if (this.#options.probe !== false) {
      const send = (endpoint: Endpoint, settings: ProbeSettings): Promise<ProbeResult | undefined> => this.#sendProbe(endpoint, settings);
      const prober = (this.#prober = new Prober(this.#options.probe, clock, send, (e, r, at) => this.#health.probeResult(e, r, at), Math.random, () => this.#set.panic));
      this.#stallWatch = new StallWatch(clock, () => this.#set.list(), (endpoint) => prober.probeNow(endpoint));
    }
    const rebalance = this.#options.rebalanceWatches;
    if (rebalance) {
      this.#rebalancer = new WatchRebalancer(this.#set, clock, rebalance, (from, to) =>
        this.#emit('rebalance', { from: from.info(), to: to.info() }),
      );
    }
    const hedge = this.#options.hedge;
    if (hedge) {
      // The hedges that won were read while nothing came from there: only a stall of ours as long
      // as half the silence could have hidden an answer.
      const hedging = (this.#hedging = new Hedging(hedge, clock, (endpoint) => {
        if (this.#judge.conclusiveTimeout(endpoint, hedging.silenceMs, 2 * hedging.silenceMs)) this.#health.silent(endpoint);
      }));
    }
    this.#bodyTimers = new BodyTimers(clock);
    this.#host = this.#requestHost();
    if (this.#options.logger) attachLogger(this, this.#options.logger);
    registerInternals(this, this.#internals());
    this.#resolver.start({
      endpoints: (set) => this.#onEndpoints(set),
      error: (error) => this.#onResolverError(error),
      warning: (message) => this.#resolverWarning(message),
      dnsQuery: (result) => this.#totals.dnsQuery(result),
    });
  }

  /** A snapshot of endpoints, counters, the retry budget, the picker and the resolver, as plain JSON-safe data. */
  stats(): BalancerStats {
    const { totals, resolver } = this.#totals.snapshot();
    return {
      endpoints: this.endpoints(),
      totals: { ...totals, inFlight: this.#budget.requests },
      budget: { retriesInFlight: this.#budget.retries, refused: this.#budget.refused, credit: this.#budget.credit },
      picker: { policy: this.#options.policy, panic: this.#set.panic },
      resolver,
    };
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
      const rest = 'dispatcher' in opts ? withoutDispatcher(opts) : opts;
      if (this.#closed) throw closedError();
      const origin = this.#origins.known(rest.origin);
      if (!origin.balanced) return this.#passthroughDispatch(rest, wrapped, legacy);
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
      this.#rebalancer?.close();
      this.#hedging?.close();
      this.#bodyTimers.close();
      this.#prober?.close();
      this.#stallWatch?.close();
      this.#health.close();
      this.#lag.close();
      this.#releaseWaiters(closedError()); // each waiting request fails with ERR_BALANCER_CLOSED
    }
    await Promise.all([this.#resolver.close?.(), pools(), passthrough()]);
  }

  /** undici types `emit` for its own events only. */
  #emit(event: string, ...args: unknown[]): void {
    EventEmitter.prototype.emit.call(this, event, ...args);
  }

  #dispatchBalanced(opts: DispatchOptions, origin: KnownOrigin, handler: DispatchHandler, legacy: boolean): void {
    if (this.#closed) return reportError(handler, closedError());
    // undici 8 never runs a legacy (v1) handler over HTTP/2: its route's pool is HTTP/1.1-only (a
    // Pool ignores a request's `allowH2`; only the passthrough Agent reads it). Upgrades (exec,
    // attach, port-forward) take it too: kube-apiserver upgrades HTTP/1.1 only, and undici refuses
    // a custom upgrade over HTTP/2 or tries a WebSocket as an extended CONNECT no apiserver accepts.
    const http1 = legacy || (opts.upgrade !== undefined && opts.upgrade !== null);
    const kind = classify(opts.method, opts.path, opts.upgrade, opts.query);
    const longRunning = kind !== 'short';
    const route = this.#origins.routeOf(origin, http1, longRunning);
    const watch = kind === 'watch';
    // The request's one copy of its options, addressed once for every attempt, made in one literal
    // (each key added later would move the object to another hidden class). Watches are quiet for
    // minutes (no body timeout: see BalancedRequest); other requests get a deadline for their
    // response headers. `bodyTimeout` is listed so that BalancedRequest's write of it adds no key.
    const own: DispatchOptions = {
      ...opts,
      headers: withHost(opts.headers, route.host, route.hostHeaders),
      servername: route.verification.sni || opts.servername,
      headersTimeout: longRunning ? opts.headersTimeout : (opts.headersTimeout ?? this.#options.requestTimeout),
      bodyTimeout: opts.bodyTimeout,
    };
    new BalancedRequest(this.#host, route, own, handler, longRunning, watch).start();
  }

  /** What each request needs from the balancer: picking, sending, and reporting outcomes. */
  #requestHost(): RequestHost {
    const options = this.#options;
    const rebalancer = this.#rebalancer;
    const accounts = new AttemptAccounts(this.#set, this.#judge, this.#stallWatch, options.clock);
    return {
      maxAttempts: options.maxAttempts,
      maxReplayBytes: options.maxBufferedBody,
      maxHeldResponse: options.maxHeldResponse,
      budget: this.#budget,
      totals: this.#totals,
      clock: options.clock,
      bodyTimers: this.#bodyTimers,
      hedging: this.#hedging,
      waiting: this.#unanswered,
      loadAware: this.#set.loadAware,
      pick: (longRunning, probationOk, exclude) => {
        if (this.#closed) return undefined;
        if (probationOk) {
          const probation = this.#health.takeProbation();
          if (probation && !exclude?.has(probation)) return probation;
          if (probation) this.#health.releaseProbation(probation);
        }
        if (exclude) return this.#set.pick({ longRunning, exclude });
        if (longRunning) return rebalancer?.claim() ?? this.#set.pick(PICK_LONG_RUNNING);
        return this.#set.pick(PICK_SHORT);
      },
      toMeasure: (picked, timed, loadClass) => this.#set.toMeasure(picked, timed, loadClass),
      send: (endpoint, route, opts, handler) => this.#pools.get(endpoint, route).dispatch(opts, handler),
      attemptStarted: (endpoint, longRunning, request, attempt, sentAt) => {
        if (pickChannel.hasSubscribers) {
          pickChannel.publish({ balancer: this, request: request.describe(), endpoint: endpoint.info(), attempt, longRunning });
        }
        const balanced = request instanceof BalancedRequest ? request : undefined;
        accounts.started(endpoint, longRunning, balanced?.timed ?? false, sentAt, balanced?.loadClass);
      },
      attemptEnded: (endpoint, longRunning, outcome, startedAt = NaN, loadClass) => accounts.ended(endpoint, longRunning, outcome, startedAt, loadClass),
      retrying: (from, to, reason, attempt, request) => {
        if (retryChannel.hasSubscribers) {
          retryChannel.publish({ balancer: this, request: request.describe(), from: from.info(), to: to.info(), reason, attempt });
        }
        this.#totals.retries[reason]++;
        if (this.listenerCount('retry') > 0) this.#emit('retry', { from: from.info(), to: to.info(), reason, attempt });
      },
      noEndpoints: () => this.#noEndpoints(),
      ...(rebalancer
        ? {
            watchOpened: (endpoint, watch) => rebalancer.opened(endpoint, watch),
            watchClosed: (endpoint, watch) => rebalancer.closed(endpoint, watch),
          }
        : {}),
    };
  }

  /** What the Kubernetes glue and the https.Agent adapter reach (see `balancerInternals`). */
  #internals(): BalancerInternals {
    return {
      host: this.#host,
      connectTimeout: this.#options.connectTimeout,
      closed: () => this.#closed,
      balances: (origin) => this.#origins.balances(origin),
      tlsFor: (origin) => ({ verification: this.#origins.route(origin, false).verification, tls: this.#tls.current }),
      beginTlsReading: () => this.#tls.beginReading(),
      replaceTls: (tls, reading = this.#tls.beginReading()) => {
        const state = this.#tls;
        // Compared before validated: the hooks hand over the same material with every request.
        if (state.holds(tls, reading)) return false;
        state.replace(validateTls(tls), reading);
        // The verification name may have changed with the settings; pools notice the new generation.
        this.#origins.clear();
        return true;
      },
    };
  }

  #sendProbe(endpoint: Endpoint, settings: ProbeSettings): Promise<ProbeResult | undefined> {
    const origin = this.#probeOrigin;
    if (endpoint.removed || this.#closed) return Promise.resolve(undefined);
    return this.#probes.send(endpoint, settings, () => {
      const route = this.#origins.route(origin, false);
      return { origin, sni: route.verification.sni, pool: this.#pools.get(endpoint, route) };
    });
  }

  /**
   * Health took `endpoint` out (ejected, draining): once the verdict is whole (the picker rebuilt), the idempotent
   * requests waiting there unsent go elsewhere, and when it went silent (`unreachable`), those sent and unanswered
   * too; then the prober hears (`Prober.wentOut`: none left ready, panic). Nothing being answered there is touched,
   * nor any connection: a verdict on an endpoint is none on its connections, whose PINGs and sockets tell when they die.
   */
  #moveWaiting(endpoint: Endpoint, silent: boolean): void {
    queueMicrotask(() => {
      if (!this.#closed && endpoint.state !== 'ready') this.#unanswered.moveAll(endpoint, silent);
      if (!this.#closed) this.#prober?.wentOut();
    });
  }

  #passthroughDispatch(opts: DispatchOptions, handler: DispatchHandler, legacy: boolean): boolean {
    this.#passthrough ??= new this.#undici.Agent();
    return this.#passthrough.dispatch(legacy ? { ...opts, allowH2: false } : opts, handler);
  }

  #onEndpoints(addresses: readonly EndpointAddress[]): void {
    if (this.#closed) return;
    if (addresses.length === 0 && this.#set.size > 0) {
      // Resolvers must keep the last good set; an empty update is refused rather than obeyed.
      this.#resolverWarning('resolver reported no endpoints; keeping the previous set');
      return;
    }
    this.#totals.resolverUpdate();
    const { added, removed } = this.#set.update(addresses);
    for (const endpoint of removed) {
      this.#prober?.remove(endpoint);
      this.#health.forget(endpoint);
      this.#unanswered.moveAll(endpoint, false);
      this.#unanswered.forget(endpoint);
      void this.#pools.retire(endpoint);
    }
    for (const endpoint of added) this.#prober?.add(endpoint);
    if (added.length > 0) this.#rebalancer?.nudge();
    this.#emit('endpoints', this.endpoints());
    this.#releaseWaiters();
  }

  #resolverWarning(message: string): void {
    this.#totals.resolverWarning(message);
    this.#emit('warning', message);
  }

  #onResolverError(error: Error): void {
    this.#lastResolverError = error;
    this.#totals.resolverError(error);
    this.#emit('resolver-error', error);
    if ((error as { code?: unknown }).code === 'ERR_DNS') this.#emit('dns-error', error);
    if (this.#set.known) return;
    // Nothing to fall back on yet: fail fast instead of queueing forever.
    this.#releaseWaiters(this.#noEndpoints());
  }

  /**
   * Settles `ready()` (rejected with `error`, if given) and runs the requests that waited for a
   * first endpoint set: they go out now, or fail for want of endpoints.
   */
  #releaseWaiters(error?: Error): void {
    const readyWaiters = this.#readyWaiters;
    const waiting = this.#waiting;
    this.#readyWaiters = [];
    this.#waiting = [];
    for (const waiter of readyWaiters) if (error) waiter.reject(error); else waiter.resolve();
    for (const run of waiting) run();
  }

  #noEndpoints(): BalancerError {
    // After close() every pick finds none: the reason is the close (for the https.Agent adapter's
    // connections and in-flight requests' retries alike), not the endpoints.
    if (this.#closed) return closedError();
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

const PICK_SHORT = { longRunning: false } as const;
const PICK_LONG_RUNNING = { longRunning: true } as const;

function closedError(): BalancerError {
  return new BalancerError('ERR_BALANCER_CLOSED', 'the balancer is closed');
}
