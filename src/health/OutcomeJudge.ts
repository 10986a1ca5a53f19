import type { Endpoint } from '../balancer/Endpoint.ts';
import type { Clock } from '../clock.ts';
import type { HealthTracker } from './HealthTracker.ts';
import type { LagMonitor } from './LagMonitor.ts';
import type { AttemptOutcome, FailureKind } from './outcome.ts';
import { isResourceVersionTooLarge, isShutdown429, isShutdown503 } from './rejections.ts';
import { retryAfterMs } from './retryAfter.ts';

export interface JudgeSettings {
  /** Milliseconds a connection may take to set up: a connect timeout covers that window. */
  connectTimeout: number;
  /** HTTP/2 PING interval: an unanswered PING covers two of them. */
  pingInterval: number;
}

export interface JudgeHooks {
  /** A request succeeded on `now` (clock ms): the retry budget earns. */
  earned(now: number): void;
  /** The endpoint may be gone for good: the resolver should look again (it rate-limits itself). */
  refresh(): void;
}

type Verdicts = Pick<HealthTracker, 'releaseProbation' | 'connectFailure' | 'serverError' | 'shuttingDown' | 'throttled' | 'success'>;

/**
 * Turns how an attempt ended into a health verdict on its endpoint. A timeout counts against the
 * endpoint only when it proves the endpoint silent: not while this process itself stalled (its
 * timers fired late and replies sat unread), and not if the endpoint answered something meanwhile.
 */
export class OutcomeJudge {
  readonly #health: Verdicts;
  readonly #settings: JudgeSettings;
  readonly #clock: Clock;
  /** Our own event-loop lag: a timeout during our stall says nothing about the apiserver. */
  readonly #lag: Pick<LagMonitor, 'maxSince'>;
  readonly #hooks: JudgeHooks;

  constructor(health: Verdicts, settings: JudgeSettings, clock: Clock, lag: Pick<LagMonitor, 'maxSince'>, hooks: JudgeHooks) {
    this.#health = health;
    this.#settings = settings;
    this.#clock = clock;
    this.#lag = lag;
    this.#hooks = hooks;
  }

  /**
   * Feeds one attempt's outcome, which came at clock time `now`, to the endpoint's health; `sentAt`:
   * when the attempt went out (NaN: not measured).
   */
  judge(endpoint: Endpoint, outcome: AttemptOutcome, now = this.#clock.now(), sentAt = Number.NaN): void {
    if (outcome.type === 'aborted') {
      this.#health.releaseProbation(endpoint);
      return;
    }
    if (outcome.type === 'error') {
      // A refused stream (graceful GOAWAY) and errors that are not the endpoint's say nothing of its health.
      if (outcome.kind === 'other' || outcome.kind === 'refused') return this.#health.releaseProbation(endpoint);
      endpoint.failures++;
      const silentConnect = this.silentConnect(endpoint, outcome.kind, outcome.error);
      if (silentConnect === false) return this.#health.releaseProbation(endpoint);
      // Silent: a PING went unanswered, or TCP was accepted but TLS never answered (a black hole).
      // Ejecting it as unreachable also frees the requests stuck on its open connections.
      const ping = this.#settings.pingInterval;
      const silent = silentConnect === true || (outcome.kind === 'unresponsive' && this.conclusiveTimeout(endpoint, 2 * ping, ping));
      if (outcome.kind === 'connect' || outcome.kind === 'tls' || silent) {
        this.#health.connectFailure(endpoint, silent ? 'unreachable' : (outcome.kind as 'connect' | 'tls'));
        this.#hooks.refresh();
      } else {
        this.#health.serverError(endpoint);
      }
      return;
    }
    endpoint.lastAnswerAt = now;
    // Below 429 an answer is a success: every rejection `#rejected` reads is a 429 or a 5xx.
    if (outcome.statusCode >= 429 && this.#rejected(endpoint, outcome)) return;
    this.#hooks.earned(now);
    this.#health.success(endpoint, now, sentAt);
  }

  /** A 429 or 5xx's verdict, and true; false when it is an answer after all (an eviction's 429, a 4xx above 429). */
  #rejected(endpoint: Endpoint, outcome: Extract<AttemptOutcome, { type: 'response' }>): boolean {
    const { statusCode, headers } = outcome;
    if (isShutdown503(statusCode, headers, outcome.body)) {
      this.#health.shuttingDown(endpoint, retryAfterMs(headers['retry-after']));
    } else if (isResourceVersionTooLarge(statusCode, outcome.body)) {
      // Its watch cache lags behind the version asked for: an answer about that read, not about its health.
      this.#health.releaseProbation(endpoint);
    } else if (statusCode >= 500) {
      endpoint.failures++;
      this.#health.serverError(endpoint);
    } else if (statusCode === 429 && !outcome.eviction) {
      const wait = retryAfterMs(headers['retry-after']);
      if (isShutdown429(headers, outcome.body)) this.#health.shuttingDown(endpoint, wait);
      else this.#health.throttled(endpoint, wait);
    } else {
      return false;
    }
    return true;
  }

  /**
   * Whether a timeout that covered the last `windowMs` proves the endpoint silent: it did not if the
   * endpoint answered something meanwhile, or if this process itself lagged by a quarter of
   * `deadlineMs` (its timers fired late and replies sat unread).
   */
  conclusiveTimeout(endpoint: Endpoint, windowMs: number, deadlineMs: number): boolean {
    const answered = endpoint.lastAnswerAt > this.#clock.now() - windowMs;
    return !answered && this.#lag.maxSince(performance.now() - windowMs) < deadlineMs / 4;
  }

  /**
   * For a connection that could not be set up in time: whether that proves the endpoint silent
   * (false when our own stall or a recent answer explains it); `undefined` for any other failure.
   */
  silentConnect(endpoint: Endpoint, kind: FailureKind, error: Error): boolean | undefined {
    if (kind !== 'connect' || !isTimeout(error)) return undefined;
    const deadline = this.#settings.connectTimeout;
    return this.conclusiveTimeout(endpoint, deadline, deadline);
  }
}

function isTimeout(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  return code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT';
}
