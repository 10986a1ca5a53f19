import type { Dispatcher } from 'undici';
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import { EndpointSet } from '../../src/balancer/EndpointSet.ts';
import type { Policy } from '../../src/balancer/Picker.ts';
import { AttemptAccounts } from '../../src/dispatcher/AttemptAccounts.ts';
import { BalancedRequest } from '../../src/dispatcher/BalancedRequest.ts';
import { BodyTimers } from '../../src/dispatcher/BodyTimer.ts';
import type { RequestHost } from '../../src/dispatcher/RequestHost.ts';
import { RetryBudget } from '../../src/dispatcher/RetryBudget.ts';
import { WatchRebalancer } from '../../src/dispatcher/WatchRebalancer.ts';
import { HealthTracker } from '../../src/health/HealthTracker.ts';
import { OutcomeJudge } from '../../src/health/OutcomeJudge.ts';
import { Prober } from '../../src/health/Prober.ts';
import { StallWatch } from '../../src/health/StallWatch.ts';
import { Totals } from '../../src/observability/stats.ts';
import { BalancerError } from '../../src/errors.ts';
import type { Route } from '../../src/net/tls.ts';
import { defaultOptions } from '../../src/options/BalancerOptions.ts';
import type { EndpointAddress, Resolver } from '../../src/resolver/Resolver.ts';
import type { AppCall, Transport } from '../client/Transport.ts';
import type { Apiserver, Connection, Exchange, Stream, WireError } from '../server/Apiserver.ts';
import type { Random } from '../sim/random.ts';
import type { Scheduler } from '../sim/Scheduler.ts';

type Controller = Dispatcher.DispatchController;
type Handler = Dispatcher.DispatchHandler;
type DispatchOptions = Dispatcher.DispatchOptions;

/** The request options of one simulated request: what undici would carry, plus the call it belongs to. */
interface SimOptions extends DispatchOptions {
  call: AppCall;
}

const ORIGIN = 'https://kubernetes.default.svc';
// Its key in the format of `Origins.route` (origin, verification name, SNI, protocol).
const ROUTE: Route = { key: 'https://kubernetes.default.svc kubernetes.default.svc kubernetes.default.svc h2', protocol: 'https:', host: 'kubernetes.default.svc', hostHeaders: { host: 'kubernetes.default.svc' }, verification: { name: 'kubernetes.default.svc', sni: 'kubernetes.default.svc' }, http1Only: false };
const METHOD = { get: 'GET', list: 'GET', watch: 'GET', write: 'PUT' } as const;
const PATH = { get: '/api/v1/namespaces/default/configmaps/x', list: '/api/v1/pods', watch: '/api/v1/pods?watch=true', write: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/x' } as const;

/** kube-balancer's settings that the simulation uses, from the library's own defaults. */
export interface KubeSettings {
  policy: Policy;
  /** `probe.intervalMs` (default: the library's). */
  probeIntervalMs?: number;
}

/**
 * One client running kube-balancer's own parts — EndpointSet and its picker, HealthTracker, Prober,
 * RetryBudget, WatchRebalancer, BalancedRequest (the retry-safety rules, watches ended at event
 * boundaries) and the resolver it is given — wired the way `Balancer` wires them, on the
 * simulation's clock, with undici's connection pools replaced by simulated HTTP/2 connections.
 *
 * The outcome judge is the library's (`OutcomeJudge`); the wiring below (the `RequestHost`, the
 * endpoint-set and health listeners) is a copy of what `Balancer` does in its private code, since
 * `Balancer` itself needs real sockets.
 */
export class KubeClient implements Transport {
  readonly #clock: Scheduler;
  readonly #servers: ReadonlyMap<string, Apiserver>;
  readonly #resolver: Resolver;
  readonly #set: EndpointSet;
  readonly #health: HealthTracker;
  readonly #prober: Prober;
  readonly #stallWatch: StallWatch;
  readonly #budget: RetryBudget;
  readonly #rebalancer: WatchRebalancer;
  readonly #judge: OutcomeJudge;
  readonly #host: RequestHost;
  readonly #connections = new Map<Endpoint, Connection>();
  #waiting: AppCall[] = [];
  #closed = false;
  readonly #bodyTimers: BodyTimers;

  /** Told every endpoint set the resolver hands on (for measuring how soon clients learn of a change). */
  onSet: ((addresses: readonly EndpointAddress[]) => void) | undefined;
  /** Told the address of every endpoint the health tracker drains or ejects (for measuring how soon a shutdown is seen). */
  onDrain: ((address: string) => void) | undefined;

  constructor(clock: Scheduler, random: Random, servers: ReadonlyMap<string, Apiserver>, resolver: Resolver, settings: KubeSettings) {
    const o = defaultOptions;
    this.#clock = clock;
    this.#bodyTimers = new BodyTimers(clock);
    this.#servers = servers;
    this.#resolver = resolver;
    this.#set = new EndpointSet(clock, { policy: settings.policy, slowStartMs: o.slowStartMs, panicThreshold: o.panicThreshold });
    this.#budget = new RetryBudget(o.retryBudget.percent, o.retryBudget.min, clock);
    this.#rebalancer = new WatchRebalancer(this.#set, clock, o.rebalanceWatches, () => {}, random);
    this.#health = new HealthTracker(
      { consecutive5xx: o.consecutive5xx, baseEjectionMs: o.baseEjectionMs, maxEjectionMs: o.maxEjectionMs, maxEjectionPercent: o.maxEjectionPercent, probes: true },
      clock,
      {
        changed: () => this.#set.rebuild(),
        eject: (endpoint) => {
          endpoint.ejections++;
          this.onDrain?.(endpoint.address);
        },
        drain: (endpoint) => this.onDrain?.(endpoint.address),
        restore: () => this.#rebalancer.nudge(),
      },
      () => this.#set.list(),
      random,
    );
    // Virtual time never lags: a timeout is always conclusive (none happens in these scenarios anyway).
    this.#judge = new OutcomeJudge(this.#health, o, clock, NO_LAG, {
      earned: (now) => this.#budget.earn(now),
      refresh: () => resolver.refresh?.(),
    });
    this.#prober = new Prober({ ...o.probe, intervalMs: settings.probeIntervalMs ?? o.probe.intervalMs, headers: {} }, clock, (endpoint) => this.#probe(endpoint), (endpoint, result) => this.#health.probeResult(endpoint, result), random);
    this.#stallWatch = new StallWatch(clock, () => this.#set.list(), (endpoint) => this.#prober.probeNow(endpoint));
    this.#host = this.#requestHost(new Totals('fleet'));
    resolver.start({
      endpoints: (set) => this.#onEndpoints(set),
      error: () => {},
    });
  }

  /** Retries on another endpoint. */
  retries = 0;

  send(call: AppCall): void {
    if (this.#closed) return;
    if (!this.#set.known) {
      this.#waiting.push(call);
      return;
    }
    const kind = call.kind;
    const opts: SimOptions = { origin: ORIGIN, method: METHOD[kind], path: PATH[kind], headers: {}, call };
    const longRunning = kind === 'watch';
    new BalancedRequest(this.#host, ROUTE, opts, new AppHandler(call), longRunning, longRunning).start();
  }

  close(): void {
    this.#closed = true;
    this.#bodyTimers.close();
    this.#rebalancer.close();
    this.#prober.close();
    this.#stallWatch.close();
    this.#health.close();
    void this.#resolver.close?.();
  }

  /** As `Balancer.#requestHost`: probation first for safe requests, then the picker. */
  #requestHost(totals: Totals): RequestHost {
    const set = this.#set;
    const health = this.#health;
    const rebalancer = this.#rebalancer;
    const accounts = new AttemptAccounts(set, this.#judge, this.#stallWatch, this.#clock);
    return {
      maxAttempts: defaultOptions.maxAttempts,
      maxReplayBytes: defaultOptions.maxBufferedBody,
      maxHeldResponse: defaultOptions.maxHeldResponse,
      // Off by default, as in the balancer.
      hedging: undefined,
      loadAware: set.loadAware,
      budget: this.#budget,
      totals,
      clock: this.#clock,
      bodyTimers: this.#bodyTimers,
      pick: (longRunning, probationOk, exclude) => {
        if (probationOk) {
          const probation = health.takeProbation();
          if (probation && !exclude?.has(probation)) return probation;
          if (probation) health.releaseProbation(probation);
        }
        if (exclude) return set.pick({ longRunning, exclude });
        if (longRunning) return rebalancer.claim() ?? set.pick(PICK_LONG);
        return set.pick(PICK_SHORT);
      },
      send: (endpoint, _route, opts, handler) => this.#sendAttempt(endpoint, opts as SimOptions, handler),
      attemptStarted: (endpoint, longRunning, request, _attempt, sentAt) =>
        request instanceof BalancedRequest ? accounts.started(endpoint, longRunning, request.timed, sentAt, request.loadClass) : accounts.started(endpoint, longRunning, false, sentAt),
      attemptEnded: (endpoint, longRunning, outcome, startedAt = NaN, loadClass) => accounts.ended(endpoint, longRunning, outcome, startedAt, loadClass),
      retrying: () => {
        this.retries++;
      },
      noEndpoints: () => new BalancerError('ERR_NO_ENDPOINTS', 'no apiserver endpoint can take the request'),
      watchOpened: (endpoint, watch) => rebalancer.opened(endpoint, watch),
      watchClosed: (endpoint, watch) => rebalancer.closed(endpoint, watch),
    };
  }

  /** One attempt on one endpoint: over its HTTP/2 connection, a new one if there is none or it got GOAWAY. */
  #sendAttempt(endpoint: Endpoint, opts: SimOptions, handler: Handler): void {
    const server = this.#servers.get(endpoint.address);
    const now = this.#clock.now();
    let connection = this.#connections.get(endpoint);
    if (!connection?.usable(now)) {
      connection = server?.connect();
      if (!connection) {
        this.#clock.setTimeout(() => handler.onResponseError?.(REFUSED_CONTROLLER, wireError('ECONNREFUSED')), server?.config.rttMs ?? 1);
        return;
      }
      this.#connections.set(endpoint, connection);
    }
    const wire = new Wire(handler, opts.call, connection);
    handler.onRequestStart?.(wire, {});
    wire.stream = connection.server.handle(connection, wire);
  }

  /** `/readyz` over the endpoint's connection (answered at once: the probe's latency does not matter here). */
  #probe(endpoint: Endpoint): Promise<'pass' | 'fail' | 'connect'> {
    this.#clock.touch();
    const ready = this.#servers.get(endpoint.address)?.readyz();
    if (ready !== undefined) endpoint.lastAnswerAt = this.#clock.now();
    return ready === undefined ? CONNECT : ready ? PASS : FAIL;
  }

  /** As `Balancer.#onEndpoints`. */
  #onEndpoints(addresses: readonly EndpointAddress[]): void {
    if (this.#closed) return;
    if (addresses.length === 0 && this.#set.size > 0) return;
    this.onSet?.(addresses);
    const { added, removed } = this.#set.update(addresses);
    for (const endpoint of removed) {
      this.#prober.remove(endpoint);
      this.#health.forget(endpoint);
      this.#connections.delete(endpoint);
    }
    for (const endpoint of added) this.#prober.add(endpoint);
    if (added.length > 0) this.#rebalancer.nudge();
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const call of waiting) this.send(call);
  }
}

const NO_LAG = { maxSince: () => 0 };
const PASS = Promise.resolve('pass' as const);
const FAIL = Promise.resolve('fail' as const);
const CONNECT = Promise.resolve('connect' as const);
const PICK_SHORT = { longRunning: false } as const;
const PICK_LONG = { longRunning: true } as const;

/** The error undici would report, without a stack: capturing one per failed attempt was a percent of a run, and nothing reads it. */
function wireError(code: WireError): Error {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    if (code === 'GOAWAY') return new Error('HTTP/2: "GOAWAY" frame received with code 0');
    return Object.assign(new Error(code === 'ECONNREFUSED' ? 'connect ECONNREFUSED' : 'read ECONNRESET'), { code });
  } finally {
    Error.stackTraceLimit = limit;
  }
}

const REFUSED_CONTROLLER: Controller = { aborted: false, paused: false, reason: null, abort: () => {}, pause: () => {}, resume: () => {} };

/** One attempt's stream, as undici's controller for the attempt's handler and as the server's exchange. */
class Wire implements Exchange, Controller {
  readonly #handler: Handler;
  readonly #call: AppCall;
  readonly #connection: Connection;
  stream: Stream | undefined;
  #done = false;
  #aborted = false;
  #reason: Error | null = null;

  constructor(handler: Handler, call: AppCall, connection: Connection) {
    this.#handler = handler;
    this.#call = call;
    this.#connection = connection;
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

  get aborted(): boolean {
    return this.#aborted;
  }

  get paused(): boolean {
    return false;
  }

  get reason(): Error | null {
    return this.#reason;
  }

  respond(status: number, headers: Record<string, string>, body: string): void {
    if (this.#done) return;
    const handler = this.#handler;
    if (this.#call.kind === 'watch' && status === 200) {
      handler.onResponseStart?.(this, status, headers, 'OK');
      return;
    }
    this.#done = true;
    handler.onResponseStart?.(this, status, headers, '');
    if (body !== '' && status >= 400) handler.onResponseData?.(this, Buffer.from(body));
    handler.onResponseEnd?.(this, {});
  }

  ended(): void {
    if (this.#done) return;
    this.#done = true;
    this.#handler.onResponseEnd?.(this, {});
  }

  failed(error: WireError): void {
    if (this.#done) return;
    this.#done = true;
    this.#handler.onResponseError?.(this, wireError(error));
  }

  abort(reason: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.#aborted = true;
    this.#reason = reason;
    if (this.stream) this.#connection.server.cancel(this.stream);
    this.#handler.onResponseError?.(this, reason);
  }

  pause(): void {}

  resume(): void {}
}

/** The application's side of a balanced request: undici's handler protocol, told to the call. */
class AppHandler implements Handler {
  readonly #call: AppCall;
  #status = 0;
  #headers: Record<string, string> = {};
  #watching = false;

  constructor(call: AppCall) {
    this.#call = call;
  }

  onRequestStart(): void {}

  onResponseStart(_controller: Controller, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.#status = statusCode;
    this.#headers = headers as Record<string, string>;
    if (this.#call.kind === 'watch' && statusCode === 200) {
      this.#watching = true;
      this.#call.answered(200, this.#headers);
    }
  }

  onResponseData(): void {}

  onResponseEnd(): void {
    if (this.#watching) this.#call.watchEnded();
    else this.#call.answered(this.#status, this.#headers);
  }

  onResponseError(): void {
    if (this.#watching) this.#call.watchEnded();
    else this.#call.errored();
  }
}
