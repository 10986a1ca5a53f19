import type { Endpoint } from '../balancer/Endpoint.ts';
import type { Clock, ClockTimer } from '../clock.ts';

export interface HedgeSettings {
  /** Shortest wait before a hedge, ms. */
  minDelayMs: number;
  /** Longest wait before a hedge, ms: the worst a GET caught on a silent endpoint waits, plus the hedge's own time. */
  maxDelayMs: number;
  /** The percentile (50–99.9) of recent short-request times to first byte that a request may wait before it is hedged. */
  percentile: number;
}

/** A request that may be hedged: its timer fires once it has waited the hedge delay without a response. */
export interface Hedgeable {
  hedge(): void;
}

/** Recent times to first byte kept for the delay (a ring); it is recomputed every `RECOMPUTE` samples. */
const SAMPLES = 512;
const RECOMPUTE = 64;
/** Hedges won against an endpoint that answered nothing meanwhile, before it is judged silent. */
const WINS_TO_SILENCE = 3;
/** Hedges earned per hundred answered short requests, and the most saved up for a burst. */
const HEDGE_PERCENT = 2;
const HEDGE_BURST = 100;

/**
 * Hedged requests for short idempotent requests, as gRPC's hedging policy and Finagle's backup
 * requests do: one that has no response headers after the hedge delay — the `percentile` of
 * recent short-request times to first byte, within [minDelayMs, maxDelayMs] — is sent to a second
 * endpoint too, if its own endpoint has answered nothing since it was sent (a slow endpoint that
 * answers others is the load-aware picker's business, not a hedge's); the first response wins and the other attempt is aborted with no health
 * verdict. Hedges are earned: 2 per 100 answered short requests, at most 100 saved up (Finagle's
 * backup-request budget); each also spends a unit of the retry budget, so an outage cannot
 * multiply the load.
 *
 * It also tells a black hole early: an endpoint against which three hedges won while it has
 * answered nothing for twice the delay is reported silent, so new requests stop going there long
 * before a probe or an HTTP/2 PING could tell (a wrong guess costs one ejection, no request).
 *
 * One timer serves every request: waiting requests sit in a map (O(1) in and out, no timer per
 * request), swept every quarter of the delay while any waits.
 */
export class Hedging {
  readonly #settings: HedgeSettings;
  readonly #clock: Clock;
  readonly #silent: (endpoint: Endpoint) => void;
  /** Hedges earned, in hundredths (whole numbers, so 50 answers earn exactly one). */
  #credit = 0;
  readonly #samples = new Float64Array(SAMPLES);
  #count = 0;
  #delay: number;
  readonly #waiting = new Map<Hedgeable, number>();
  #timer: ClockTimer | undefined;
  #timerAt = 0;
  readonly #wins = new WeakMap<Endpoint, number>();
  /** Hedges sent, for stats. */
  hedges = 0;

  constructor(settings: HedgeSettings, clock: Clock, silent: (endpoint: Endpoint) => void) {
    this.#settings = settings;
    this.#clock = clock;
    this.#silent = silent;
    this.#delay = settings.maxDelayMs;
  }

  /** How long an endpoint that hedges keep beating must have answered nothing to be judged silent: twice the delay. */
  get silenceMs(): number {
    return 2 * this.#delay;
  }

  /** The wait before a hedge now. */
  get delayMs(): number {
    return this.#delay;
  }

  now(): number {
    return this.#clock.now();
  }

  /** `request` was sent at `sentAt` and may be hedged once it has waited the delay. */
  wait(request: Hedgeable, sentAt: number): void {
    this.#waiting.set(request, sentAt);
    const due = sentAt + this.#delay;
    // One timer for all; rescheduled only when the delay has shrunk well below what it was set for.
    if (this.#timer !== undefined && this.#timerAt <= due + this.#delay / 4) return;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#schedule(this.#delay);
  }

  /** No hedge for `request` after all (a response came, it ended, or it was hedged). */
  cancel(request: Hedgeable): void {
    this.#waiting.delete(request);
  }

  /**
   * Whether a request sent to `endpoint` at `sentAt` is to be hedged now: `true` (the hedge is
   * spent), `false` (none is left), or the time from which to wait again, when the endpoint has
   * answered something since the request was sent.
   */
  mayHedge(endpoint: Endpoint, sentAt: number): boolean | number {
    if (endpoint.lastAnswerAt > sentAt) return endpoint.lastAnswerAt;
    if (this.#credit < 100) return false;
    this.#credit -= 100;
    this.hedges++;
    return true;
  }

  /** A short request's response headers came from `endpoint`, `ms` after its attempt was sent. */
  answered(endpoint: Endpoint, ms: number): void {
    endpoint.lastAnswerAt = this.#clock.now();
    this.#credit = Math.min(HEDGE_BURST * 100, this.#credit + HEDGE_PERCENT);
    this.#wins.delete(endpoint);
    this.#samples[this.#count++ % SAMPLES] = ms;
    if (this.#count % RECOMPUTE === 0) this.#recompute();
  }

  /** A hedge won against an attempt on `endpoint`. */
  lost(endpoint: Endpoint): void {
    const wins = (this.#wins.get(endpoint) ?? 0) + 1;
    this.#wins.set(endpoint, wins);
    // Asked again at every further win until the endpoint answers: the verdict may be held back once.
    if (wins >= WINS_TO_SILENCE && this.#clock.now() - endpoint.lastAnswerAt >= this.silenceMs) this.#silent(endpoint);
  }

  close(): void {
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#waiting.clear();
  }

  #sweep(): void {
    this.#timer = undefined;
    const delay = this.#delay;
    const due = this.#clock.now() - delay;
    const hedged: Hedgeable[] = [];
    for (const [request, since] of this.#waiting) if (since <= due) hedged.push(request);
    for (const request of hedged) {
      this.#waiting.delete(request);
      request.hedge();
    }
    if (this.#waiting.size > 0) this.#schedule(delay / 4);
  }

  #schedule(ms: number): void {
    this.#timerAt = this.#clock.now() + Math.max(1, ms);
    this.#timer = this.#clock.setTimeout(() => this.#sweep(), Math.max(1, ms));
  }

  #recompute(): void {
    const n = Math.min(this.#count, SAMPLES);
    const sorted = this.#samples.slice(0, n).sort();
    const at = sorted[Math.min(n - 1, Math.floor((n * this.#settings.percentile) / 100))]!;
    this.#delay = Math.min(this.#settings.maxDelayMs, Math.max(this.#settings.minDelayMs, at));
  }
}
