import type { Dispatcher } from 'undici';
import type { Endpoint } from '../balancer/Endpoint.ts';
import type { Clock } from '../clock.ts';
import type { BalancerError } from '../errors.ts';
import type { AttemptOutcome, RetryReason } from '../health/outcome.ts';
import type { Route } from '../net/tls.ts';
import type { ChannelRequest } from '../observability/channels.ts';
import type { Totals } from '../observability/stats.ts';
import type { BodyTimers } from './BodyTimer.ts';
import type { Hedging } from './Hedge.ts';
import type { RetryBudget } from './RetryBudget.ts';
import type { WaitingAttempts } from './WaitingAttempts.ts';
import type { MovableWatch } from './WatchRebalancer.ts';

type DispatchOptions = Dispatcher.DispatchOptions;
type Handler = Dispatcher.DispatchHandler;

/** A request or connection as diagnostics_channel messages name it; asked only when someone listens. */
export interface DescribedRequest {
  describe(): ChannelRequest;
}

/** What a request (or an https.Agent connection) needs from the balancer. */
export interface RequestHost {
  readonly maxAttempts: number;
  readonly maxReplayBytes: number;
  /** Bytes of a short GET/HEAD response held until it is complete, so a break before its end is retried; 0: none. */
  readonly maxHeldResponse: number;
  readonly budget: RetryBudget;
  readonly totals: Totals;
  readonly clock: Clock;
  /** Times the response bodies (see BodyTimer). */
  readonly bodyTimers: BodyTimers;
  /** Hedged requests (short GET/HEAD), unless turned off. */
  readonly hedging: Hedging | undefined;
  /** Idempotent attempts not yet answered, by endpoint: moved when health takes theirs out. */
  readonly waiting?: WaitingAttempts;
  /** Whether the weights follow load (`'weighted-round-robin'`): then every short request's latency is measured. */
  readonly loadAware?: boolean;
  /** The endpoint for the next attempt, never one in `exclude`; `probationOk` for safe requests. */
  pick(longRunning: boolean, probationOk: boolean, exclude: ReadonlySet<Endpoint> | undefined): Endpoint | undefined;
  /** The lagging endpoint a short GET picked for `picked` is to measure by an exploration copy, if any (`EndpointSet.toMeasure`, `Explore.ts`). */
  toMeasure?(picked: Endpoint, timed: boolean, loadClass: string | undefined): Endpoint | undefined;
  /** Sends one attempt to one endpoint. */
  send(endpoint: Endpoint, route: Route, opts: DispatchOptions, handler: Handler): void;
  /**
   * The `attempt`-th attempt of `request` goes to `endpoint`, sent at clock time `sentAt` (a
   * BalancedRequest's attempts give it: the latency of a timed one is measured from it).
   */
  attemptStarted(endpoint: Endpoint, longRunning: boolean, request: DescribedRequest, attempt: number, sentAt?: number): void;
  /**
   * `startedAt`: the `sentAt` of a timed request's attempt, or of one with a `loadClass` (NaN or
   * absent otherwise), for its latency.
   */
  attemptEnded(endpoint: Endpoint, longRunning: boolean, outcome: AttemptOutcome, startedAt?: number, loadClass?: string): void;
  retrying(from: Endpoint, to: Endpoint, reason: RetryReason, attempt: number, request: DescribedRequest): void;
  noEndpoints(): BalancerError;
  /** A watch's response reached the caller; until `watchClosed` it may be moved (watch rebalancing). */
  watchOpened?(endpoint: Endpoint, watch: MovableWatch): void;
  watchClosed?(endpoint: Endpoint, watch: MovableWatch): void;
}
