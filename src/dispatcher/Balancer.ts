import { EventEmitter } from 'node:events';
import * as undici from 'undici';
import type { Agent } from 'undici';
import { OUTCOME_ABORTED, OUTCOME_ERROR, type Endpoint, type EndpointInfo } from '../balancer/Endpoint.ts';
import { EndpointSet } from '../balancer/EndpointSet.ts';
import { classify } from '../balancer/longRunning.ts';
import { BalancerError } from '../errors.ts';
import { resolveOptions, validateTls, type BalancerOptions, type ResolvedOptions, type ResolvedTls, type TlsOptions, type UndiciModule } from '../options.ts';
import type { EndpointAddress, Resolver } from '../resolver/Resolver.ts';
import { classifyError, type FailureKind } from '../health/classifyError.ts';
import { LagMonitor } from '../health/LagMonitor.ts';
import { HealthTracker, type EjectReason, type ProbeResult } from '../health/HealthTracker.ts';
import { Prober, type ProbeSettings } from '../health/Prober.ts';
import { retryAfterMs } from '../health/retryAfter.ts';
import { ejectChannel, pickChannel, retryChannel } from '../observability/channels.ts';
import { attachLogger } from '../observability/logger.ts';
import { Totals, describeTarget, type BalancerStats } from '../observability/stats.ts';
import { BalancedRequest, type AttemptOutcome, type RequestHost, type RetryReason } from './BalancedRequest.ts';
import { EndpointPools } from './EndpointPools.ts';
import { Hedging } from './Hedge.ts';
import { RetryBudget } from './RetryBudget.ts';
import { withHost } from './headers.ts';
import { verificationFor, type Route, type Verification } from './tls.ts';
import { WatchRebalancer } from './WatchRebalancer.ts';

/** undici reads `allowH2` and `servername` per request, though its types do not list them. */
type DispatchOptions = undici.Dispatcher.DispatchOptions & { allowH2?: boolean; servername?: string };
type DispatchHandler = undici.Dispatcher.DispatchHandler;
type AnyHandler = DispatchHandler & { onError?: (error: Error) => void };

export interface BalancerEvents {
  /** The endpoint set changed (resolver update). */
  endpoints: [endpoints: EndpointInfo[]];
  /** An endpoint stopped taking requests for `durationMs` (connect/TLS failure, 5xx, 429, failed probe). */
  eject: [endpoint: EndpointInfo, reason: EjectReason, durationMs: number];
  /** An endpoint takes requests again. */
  restore: [endpoint: EndpointInfo, via: 'probation' | 'probe' | 'retry-after'];
  /** An endpoint's apiserver is shutting down or failing /readyz: no new requests, running ones finish. */
  drain: [endpoint: EndpointInfo, reason: 'probe' | 'shutdown'];
  /** A request is tried again on another endpoint. */
  retry: [event: { from: EndpointInfo; to: EndpointInfo; reason: RetryReason; attempt: number }];
  /** An open watch was ended (at an event boundary) so that its client re-watches where `to` has fewer. */
  rebalance: [event: { from: EndpointInfo; to: EndpointInfo }];
  /** Resolution failed, whatever the resolver (DNS, EndpointSlice, custom); the previous endpoints stay in use. */
  'resolver-error': [error: Error];
  /** A DNS resolution failed (`dns:`, `dns+srv:` targets; code `ERR_DNS`); also emitted as `resolver-error`. */
  'dns-error': [error: Error];
  /** Something to know that is not a failure: a resolver serving a stale answer, a probe refused for lack of credentials. */
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
  /** Routes by origin, for modern and for legacy (HTTP/1.1-only) handlers. */
  readonly #routes = new Map<string, Route>();
  readonly #legacyRoutes = new Map<string, Route>();
  /**
   * Request origins as callers write them, each parsed and judged once: a client talks to a handful,
   * and parsing a URL or building its origin string per request costs.
   */
  readonly #origins = new Map<string, KnownOrigin>();
  /** `options.origin` as a string, the only origin balanced when set. */
  readonly #onlyOrigin: string | undefined;
  readonly #health: HealthTracker;
  readonly #prober: Prober | undefined;
  readonly #budget: RetryBudget;
  readonly #totals: Totals;
  readonly #host: RequestHost;
  readonly #rebalancer: WatchRebalancer | undefined;
  readonly #hedging: Hedging | undefined;
  /** The origin probes are sent for: `options.origin`, else the last balanced request's. */
  #probeOrigin: URL | undefined;
  #warnedProbeAuth = false;
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
    this.#undici = this.#options.undici ?? undici;
    this.#resolver = this.#options.resolver;
    this.#set = new EndpointSet(this.#options.clock, this.#options);
    this.#pools = new EndpointPools(this.#undici, this.#options, (event, origin, targets, error) =>
      this.#emit(event, origin, [this, ...targets], error),
    );
    const { clock } = this.#options;
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
        },
        drain: (endpoint, reason) => this.#emit('drain', endpoint.info(), reason),
        restore: (endpoint, via) => {
          this.#emit('restore', endpoint.info(), via);
          this.#rebalancer?.nudge();
        },
        // A black hole: requests waiting there, on the silent connection or queued for a new one,
        // would only time out. Fail them now, so those that may go elsewhere do.
        unreachable: (endpoint) => void this.#pools.reset(endpoint),
      },
      () => this.#set.list(),
    );
    this.#probeOrigin = this.#options.origin;
    this.#onlyOrigin = this.#options.origin?.origin;
    if (this.#options.probe !== false) {
      this.#prober = new Prober(
        this.#options.probe,
        clock,
        (endpoint, settings) => this.#sendProbe(endpoint, settings),
        (endpoint, result) => this.#health.probeResult(endpoint, result),
      );
    }
    const rebalance = this.#options.rebalanceWatches;
    if (rebalance) {
      this.#rebalancer = new WatchRebalancer(this.#set, clock, rebalance.maxPerSecond, (from, to) =>
        this.#emit('rebalance', { from: from.info(), to: to.info() }),
      );
    }
    const hedge = this.#options.hedge;
    if (hedge) {
      // Silence is concluded only if this process did not stall meanwhile and nothing came from there.
      const hedging = new Hedging(hedge, clock, (endpoint) => {
        // The hedges that won were read while nothing came from there: only a stall of ours as long as
        // half the silence could have hidden an answer.
        if (this.#conclusiveTimeout(endpoint, hedging.silenceMs, 2 * hedging.silenceMs)) this.#health.silent(endpoint);
      });
      this.#hedging = hedging;
    }
    this.#host = this.#requestHost();
    if (this.#options.logger) attachLogger(this, this.#options.logger);
    internals.set(this, this.#internals());
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
      const origin = this.#knownOrigin(rest.origin);
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
      this.#prober?.close();
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

  #isBalanced(origin: URL): boolean {
    return this.#onlyOrigin === undefined || this.#onlyOrigin === origin.origin;
  }

  #dispatchBalanced(opts: DispatchOptions, origin: KnownOrigin, handler: DispatchHandler, legacy: boolean): void {
    if (this.#closed) return reportError(handler, closedError());
    this.#probeOrigin ??= origin.url;
    // undici 8 never runs a legacy (v1) handler over HTTP/2: its route's pool is HTTP/1.1-only (a
    // Pool ignores a request's `allowH2`; only the passthrough Agent reads it). Upgrades (exec,
    // attach, port-forward) take it too: kube-apiserver upgrades HTTP/1.1 only, and undici refuses
    // a custom upgrade over HTTP/2 or tries a WebSocket as an extended CONNECT no apiserver accepts.
    const http1 = legacy || (opts.upgrade !== undefined && opts.upgrade !== null);
    const route = http1 ? (origin.legacyRoute ??= this.#routeFor(origin.url, true)) : (origin.route ??= this.#routeFor(origin.url, false));
    const kind = classify(opts.method, opts.path, opts.upgrade, opts.query);
    const longRunning = kind !== 'short';
    const watch = kind === 'watch';
    // The request's one copy of its options, addressed once for every attempt.
    const own: DispatchOptions = { ...opts, headers: withHost(opts.headers, route.host) };
    if (route.verification.sni) own.servername = route.verification.sni;
    // Watches are quiet for minutes; other requests get a deadline for their response headers.
    if (longRunning) own.bodyTimeout ??= 0;
    else own.headersTimeout ??= this.#options.requestTimeout;
    new BalancedRequest(this.#host, route, own, handler, longRunning, watch).start();
  }

  #routeFor(origin: URL, legacy: boolean): Route {
    const routes = legacy ? this.#legacyRoutes : this.#routes;
    let route = routes.get(origin.origin);
    if (!route) {
      route = { protocol: origin.protocol, host: origin.host, verification: verificationFor(origin, this.#options.tls.current), http1Only: legacy };
      if (routes.size >= 256) routes.clear();
      routes.set(origin.origin, route);
    }
    return route;
  }

  /** What each request needs from the balancer: picking, sending, and reporting outcomes. */
  #requestHost(): RequestHost {
    const options = this.#options;
    const rebalancer = this.#rebalancer;
    return {
      maxAttempts: options.maxAttempts,
      maxReplayBytes: options.maxBufferedBody,
      maxHeldResponse: options.maxHeldResponse,
      budget: this.#budget,
      totals: this.#totals,
      hedging: this.#hedging,
      pick: (longRunning, probationOk, exclude) => {
        if (this.#closed) return undefined;
        if (probationOk) {
          const probation = this.#health.takeProbation();
          if (probation && !exclude?.has(probation)) return probation;
          if (probation) this.#health.releaseProbation(probation);
        }
        if (exclude) return this.#set.pick({ longRunning, exclude });
        return this.#set.pick(longRunning ? PICK_LONG_RUNNING : PICK_SHORT);
      },
      send: (endpoint, route, opts, handler) => this.#pools.get(endpoint, route).dispatch(opts, handler),
      attemptStarted: (endpoint, longRunning, request, attempt) => {
        if (pickChannel.hasSubscribers) {
          pickChannel.publish({ balancer: this, request: request.describe(), endpoint: endpoint.info(), attempt, longRunning });
        }
        endpoint.inFlight++;
        endpoint.requests++;
        if (longRunning) endpoint.streams++;
      },
      attemptEnded: (endpoint, longRunning, outcome) => {
        endpoint.inFlight--;
        if (longRunning) endpoint.streams--;
        endpoint.outcomes[outcomeIndex(outcome)]!++;
        this.#judge(endpoint, outcome);
      },
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
      balances: (origin) => this.#isBalanced(origin),
      tlsFor: (origin) => ({ verification: this.#routeFor(origin, false).verification, tls: this.#options.tls.current }),
      replaceTls: (tls) => {
        const state = this.#options.tls;
        const now = this.#options.clock.now();
        // Compared before validated: the hooks hand over the same material with every request.
        if (state.holds(tls, now)) return false;
        state.replace(validateTls(tls), now);
        // The verification name may have changed with the settings; pools notice the new generation.
        this.#routes.clear();
        this.#legacyRoutes.clear();
        this.#origins.clear();
        return true;
      },
    };
  }

  /** Feeds one attempt's outcome to the endpoint's health. */
  #judge(endpoint: Endpoint, outcome: AttemptOutcome): void {
    if (outcome.type === 'aborted') {
      this.#health.releaseProbation(endpoint);
      return;
    }
    if (outcome.type === 'error') {
      // A refused stream (graceful GOAWAY) and errors that are not the endpoint's say nothing of its health.
      if (outcome.kind === 'other' || outcome.kind === 'refused') return this.#health.releaseProbation(endpoint);
      endpoint.failures++;
      const silentConnect = this.#silentConnect(endpoint, outcome.kind, outcome.error);
      if (silentConnect === false) return this.#health.releaseProbation(endpoint);
      // Silent: a PING went unanswered, or TCP was accepted but TLS never answered (a black hole).
      // Ejecting it as unreachable also frees the requests stuck on its open connections.
      const silent = silentConnect === true || (outcome.kind === 'unresponsive' && this.#conclusiveTimeout(endpoint, 2 * this.#options.pingInterval, this.#options.pingInterval));
      if (outcome.kind === 'connect' || outcome.kind === 'tls' || silent) {
        this.#health.connectFailure(endpoint, silent ? 'unreachable' : (outcome.kind as 'connect' | 'tls'));
        // The endpoint may be gone for good: let the resolver look again (it rate-limits itself).
        this.#resolver.refresh?.();
      } else {
        this.#health.serverError(endpoint);
      }
      return;
    }
    const { statusCode, headers } = outcome;
    const now = this.#options.clock.now();
    endpoint.lastAnswerAt = now;
    if (statusCode >= 500) {
      endpoint.failures++;
      this.#health.serverError(endpoint);
    } else if (statusCode === 429 && !outcome.eviction) {
      const wait = retryAfterMs(headers['retry-after']);
      if (isShutdownResponse(headers, outcome.body)) this.#health.shuttingDown(endpoint, wait);
      else this.#health.throttled(endpoint, wait);
    } else {
      this.#budget.earn(now);
      this.#health.success(endpoint);
    }
  }

  async #sendProbe(endpoint: Endpoint, settings: ProbeSettings): Promise<ProbeResult | undefined> {
    const origin = this.#probeOrigin;
    if (!origin || endpoint.removed || this.#closed) return undefined;
    const route = this.#routeFor(origin, false);
    const verification = route.verification;
    const pool = this.#pools.get(endpoint, route);
    const clock = this.#options.clock;
    let headers: Record<string, string>;
    try {
      headers = typeof settings.headers === 'function' ? await settings.headers() : settings.headers;
    } catch (error) {
      // No credentials this time (an exec plugin failed): no verdict on the endpoint either.
      this.#emit('warning', `probe headers: ${(error as Error).message}`);
      return undefined;
    }
    if (endpoint.removed || this.#closed) return undefined;
    try {
      const res = await pool.request({
        path: settings.path,
        method: 'GET',
        headers: { ...headers, host: origin.host },
        headersTimeout: settings.timeoutMs,
        bodyTimeout: settings.timeoutMs,
        ...(verification.sni ? { servername: verification.sni } : {}),
      });
      await res.body.dump();
      endpoint.lastAnswerAt = clock.now();
      if (res.statusCode === 401 || res.statusCode === 403) {
        // The apiserver answers but will not say whether it is ready: count that as alive.
        if (!this.#warnedProbeAuth) {
          this.#warnedProbeAuth = true;
          this.#emit('warning', `probe ${settings.path} answered ${res.statusCode}: set probe.headers (authorization) so readiness can be read`);
        }
        return 'pass';
      }
      return res.statusCode >= 200 && res.statusCode < 400 ? 'pass' : 'fail';
    } catch (error) {
      const kind = classifyError(error);
      if ((kind === 'timeout' || kind === 'unresponsive') && !this.#conclusiveTimeout(endpoint, settings.timeoutMs, settings.timeoutMs)) return undefined;
      const silentConnect = this.#silentConnect(endpoint, kind, error as Error);
      if (silentConnect !== undefined) return silentConnect ? 'unreachable' : undefined;
      if (kind === 'connect' || kind === 'tls') return kind;
      // Connected but no answer in time: a black hole, or not talking.
      return 'unreachable';
    }
  }

  #knownOrigin(origin: DispatchOptions['origin']): KnownOrigin {
    if (origin === undefined || origin === null || origin === '') {
      throw new BalancerError('ERR_INVALID_OPTION', 'the request has no origin: call the balancer with an absolute URL');
    }
    const key = typeof origin === 'string' ? origin : origin.origin;
    let known = this.#origins.get(key);
    if (!known) {
      const url = typeof origin === 'string' ? new URL(origin) : origin;
      known = { url, balanced: this.#isBalanced(url), route: undefined, legacyRoute: undefined };
      if (this.#origins.size >= 256) this.#origins.clear();
      this.#origins.set(key, known);
    }
    return known;
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
    for (const waiter of readyWaiters) {
      if (error) waiter.reject(error);
      else waiter.resolve();
    }
    for (const run of waiting) run();
  }

  /**
   * Whether a timeout that covered the last `windowMs` proves the endpoint silent: it did not if the
   * endpoint answered something meanwhile, or if this process itself lagged by a quarter of
   * `deadlineMs` (its timers fired late and replies sat unread).
   */
  #conclusiveTimeout(endpoint: Endpoint, windowMs: number, deadlineMs: number): boolean {
    const answered = endpoint.lastAnswerAt >= this.#options.clock.now() - windowMs;
    return !answered && this.#lag.maxSince(performance.now() - windowMs) < deadlineMs / 4;
  }

  /**
   * For a connection that could not be set up in time: whether that proves the endpoint silent
   * (false when our own stall or a recent answer explains it); `undefined` for any other failure.
   */
  #silentConnect(endpoint: Endpoint, kind: FailureKind, error: Error): boolean | undefined {
    if (kind !== 'connect' || !isTimeout(error)) return undefined;
    const deadline = this.#options.connectTimeout;
    return this.#conclusiveTimeout(endpoint, deadline, deadline);
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

/**
 * What the rest of the package (never its users) reaches inside a balancer: the request host for the
 * https.Agent adapter, and swapping TLS credentials when a kubeconfig's rotate.
 */
export interface BalancerInternals {
  readonly host: RequestHost;
  readonly connectTimeout: number;
  /** Whether `close()` or `destroy()` was called: hooks installed for the balancer step aside. */
  closed(): boolean;
  /** Whether requests to `origin` are balanced (else they pass through). */
  balances(origin: URL): boolean;
  /** The name to verify and the TLS settings in force, for connections made for `origin`. */
  tlsFor(origin: URL): { verification: Verification; tls: ResolvedTls };
  /**
   * Switches to new TLS settings, validated like `options.tls`: new connections use them, those
   * already open finish what runs on them and close. Returns false when nothing changed.
   */
  replaceTls(tls: TlsOptions): boolean;
}

const internals = new WeakMap<Balancer, BalancerInternals>();

export function balancerInternals(balancer: Balancer): BalancerInternals {
  const found = internals.get(balancer);
  if (!found) throw new TypeError('not a kube-balancer Balancer');
  return found;
}

/** Builds a balancer; every option is validated here and a bad one throws `BalancerError`. */
export function createBalancer(options: BalancerOptions): Balancer {
  return new Balancer(options);
}


/**
 * A 429 from an apiserver that is shutting down (`--shutdown-send-retry-after`) rather than from API
 * Priority and Fairness: it closes the connection (HTTP/1.1; on HTTP/2 Go turns that into GOAWAY)
 * and says so in its body, and carries none of APF's `X-Kubernetes-PF-*` headers.
 */
function isShutdownResponse(headers: Record<string, string | string[] | undefined>, body: string): boolean {
  if (String(headers.connection ?? '').toLowerCase().includes('close')) return true;
  if (body.includes('shutting down')) return true;
  return false;
}

function isTimeout(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  return code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT';
}

/** A request origin seen before, with its routes once a balanced request needed them. */
interface KnownOrigin {
  readonly url: URL;
  readonly balanced: boolean;
  route: Route | undefined;
  legacyRoute: Route | undefined;
}

const PICK_SHORT = { longRunning: false } as const;
const PICK_LONG_RUNNING = { longRunning: true } as const;

function withoutDispatcher(opts: DispatchOptions): DispatchOptions {
  const { dispatcher: _ignored, ...rest } = opts as DispatchOptions & { dispatcher?: unknown };
  return rest;
}

/** Where an attempt's outcome is counted in `Endpoint.outcomes`. */
function outcomeIndex(outcome: AttemptOutcome): number {
  if (outcome.type === 'response') return Math.min(5, Math.trunc(outcome.statusCode / 100));
  return outcome.type === 'error' ? OUTCOME_ERROR : OUTCOME_ABORTED;
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
