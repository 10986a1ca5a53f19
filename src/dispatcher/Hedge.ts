import type { Endpoint } from '../balancer/Endpoint.ts';
import { PatientTimer, type Clock } from '../clock.ts';

export interface HedgeSettings {
  /** Shortest wait before a hedge, ms. */
  minDelayMs: number;
  /** Longest wait before a hedge, ms: the worst a GET caught on a silent endpoint waits, plus the hedge's own time. */
  maxDelayMs: number;
  /** The percentile (50–99.9) of recent short-request times to first byte that a request may wait before it is hedged. */
  percentile: number;
}

/**
 * A request that may be hedged: its timer fires once it has waited the hedge delay without a
 * response. The `hedge*` fields are `Hedging`'s own (the request's place in its waiting list, and
 * since when it waits): a request carries them, so waiting costs no map entry.
 */
export interface Hedgeable {
  hedge(): void;
  hedgeSince?: number;
  hedgePrev?: Hedgeable | undefined;
  hedgeNext?: Hedgeable | undefined;
  hedgeQueued?: boolean;
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
 * Earned hedges an exploration copy (`Explore.ts`) leaves saved up: copies of a lagging endpoint's
 * picks, and its re-measures, may use the credit only above this, so a black hole still finds half the burst to move its
 * GETs (three wins eject it; after that its hedges are free).
 */
const EXPLORE_RESERVE = 50;

/**
 * Hedged requests for short idempotent requests, as gRPC's hedging policy and Finagle's backup
 * requests do: one that has no response headers after the hedge delay — the `percentile` of
 * recent short-request times to first byte, within [minDelayMs, maxDelayMs] — is sent to a second
 * endpoint too, if its own endpoint has answered nothing for the delay either (a slow endpoint
 * that answers others is the load-aware picker's business, not a hedge's); the first response wins
 * and the other attempt is aborted with no health verdict. Hedges are earned: 2 per 100 answered
 * short requests, at most 100 saved up, and a start has all 100 (Finagle's backup-request budget,
 * gRPC's full token bucket); each also spends a unit of the retry budget, so an outage cannot
 * multiply the load. Moving the requests still waiting on an ejected endpoint costs no earned hedge.
 *
 * It also tells a black hole early: an endpoint against which three hedges won while it has
 * answered nothing for twice the delay is reported silent, so new requests stop going there long
 * before a probe or an HTTP/2 PING could tell (a wrong guess costs one ejection, no request).
 *
 * One timer serves every request: waiting requests sit in a list (O(1) in and out, no timer per
 * request), swept when the first is due, at most every eighth of the delay.
 */
export class Hedging {
  readonly #settings: HedgeSettings;
  readonly #clock: Clock;
  readonly #silent: (endpoint: Endpoint) => void;
  /**
   * Hedges earned, in hundredths (whole numbers, so 50 answers earn exactly one). It starts full, as
   * gRPC's retry throttling starts with all its tokens: a black hole in the first minute is covered too.
   */
  #credit = HEDGE_BURST * 100;
  readonly #samples = new Float64Array(SAMPLES);
  /** Where the samples are copied to pick the percentile. */
  readonly #scratch = new Float64Array(SAMPLES);
  #count = 0;
  #delay: number;
  /** Requests waiting, oldest first (a list through their `hedge*` fields: O(1) in and out). */
  #head: Hedgeable | undefined;
  #tail: Hedgeable | undefined;
  readonly #timer: PatientTimer;
  readonly #wins = new WeakMap<Endpoint, number>();
  /**
   * Entries `lost` put in `#wins` and `heard` has not taken out (an endpoint collected meanwhile
   * leaves one counted): while none, an answer costs no look-up there.
   */
  #winners = 0;
  /** Hedges sent, for stats. */
  hedges = 0;

  constructor(settings: HedgeSettings, clock: Clock, silent: (endpoint: Endpoint) => void) {
    this.#settings = settings;
    this.#clock = clock;
    this.#silent = silent;
    this.#delay = settings.maxDelayMs;
    // Late by half the delay or more, a sweep waits for what our own stall left unread, so that our
    // stall neither hedges every request in flight nor makes the endpoints look silent.
    this.#timer = new PatientTimer(clock, (now) => this.#sweep(now), () => this.#delay / 2);
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

  /** `request` may be hedged once it, and its endpoint, have been silent for the delay from `since`. */
  wait(request: Hedgeable, since: number): void {
    request.hedgeSince = since;
    if (!request.hedgeQueued) {
      request.hedgeQueued = true;
      const tail = this.#tail;
      request.hedgePrev = tail;
      request.hedgeNext = undefined;
      if (tail) tail.hedgeNext = request;
      else this.#head = request;
      this.#tail = request;
    }
    const due = since + this.#delay;
    // One timer for all; rescheduled only when this one is due well before it would fire.
    if (this.#timer.armed && this.#timer.dueAt <= due + this.#delay / 8) return;
    this.#schedule(due - this.#clock.now());
  }

  /** No hedge for `request` after all (a response came, it ended, or it was hedged). */
  cancel(request: Hedgeable): void {
    if (!request.hedgeQueued) return;
    request.hedgeQueued = false;
    const { hedgePrev: prev, hedgeNext: next } = request;
    if (prev) prev.hedgeNext = next;
    else this.#head = next;
    if (next) next.hedgePrev = prev;
    else this.#tail = prev;
    request.hedgePrev = request.hedgeNext = undefined;
  }

  /**
   * Whether a request sent to `endpoint` at `sentAt` is to be hedged now: `true`, `false` (none is
   * left: wait again, in case one is earned or the endpoint is ejected), or the time from which to
   * wait again, when the endpoint answered something less than the delay ago (a slow endpoint that
   * answers others is the load-aware picker's business, not a hedge's). Nothing is spent until `sent`.
   * Only a `pointRead` (a GET of one named object) is hedged for being slow: a LIST takes seconds
   * anywhere, and a copy doubles the apiserver's most expensive load and reads the slow answer as
   * silence (three wins judged a slow-but-alive endpoint silent). Any other short GET only moves off
   * an endpoint that is out.
   */
  mayHedge(endpoint: Endpoint, sentAt: number, pointRead: boolean): boolean | number {
    const quietSince = Math.max(sentAt, endpoint.lastAnswerAt);
    if (this.#clock.now() - quietSince < this.#delay) return quietSince;
    return isOut(endpoint) || (pointRead && this.#credit >= 100);
  }

  /**
   * Whether a short GET picked for a `lagging` endpoint (or one due a re-measure) may measure it by a
   * copy while the caller's goes elsewhere (see `Explore.ts`): an earned hedge is left above the reserve.
   * Nothing is spent until `explored`.
   */
  mayExplore(): boolean {
    return this.#credit >= (EXPLORE_RESERVE + 1) * 100;
  }

  /** An exploration copy was sent: it costs an earned hedge, as any hedge does. */
  explored(): void {
    this.hedges++;
    this.#credit -= 100;
  }

  /**
   * A hedge of a request on `endpoint` was sent. It costs an earned hedge unless the endpoint is
   * already out (ejected: a black hole told by hedges or a probe): then moving its stuck requests is
   * failover, paid by the retry budget alone, not extra load.
   */
  sent(endpoint: Endpoint): void {
    this.hedges++;
    if (!isOut(endpoint)) this.#credit -= 100;
  }

  /** A short request's response headers came from `endpoint` at clock time `now`, `ms` after its attempt was sent. */
  answered(endpoint: Endpoint, ms: number, now = this.#clock.now()): void {
    this.heard(endpoint, now);
    if (this.#credit < HEDGE_BURST * 100) this.#credit += HEDGE_PERCENT;
    this.#samples[this.#count++ % SAMPLES] = ms;
    if (this.#count % RECOMPUTE === 0) this.#recompute();
  }

  /**
   * Response headers came from `endpoint`: it answers, so hedges that beat it meanwhile are no sign
   * of a black hole. All an exploration copy's answer tells: it is no sample of the delay, which is
   * the callers' wait, and it earns nothing (a copy is extra load).
   */
  heard(endpoint: Endpoint, now: number): void {
    endpoint.lastAnswerAt = now;
    if (this.#winners > 0 && this.#wins.delete(endpoint)) this.#winners--;
  }

  /** A hedge won against an attempt on `endpoint`. */
  lost(endpoint: Endpoint): void {
    const wins = (this.#wins.get(endpoint) ?? 0) + 1;
    if (wins === 1) this.#winners++;
    this.#wins.set(endpoint, wins);
    // Asked again at every further win until the endpoint answers: the verdict may be held back once.
    if (wins >= WINS_TO_SILENCE && this.#clock.now() - endpoint.lastAnswerAt >= this.silenceMs) this.#silent(endpoint);
  }

  close(): void {
    this.#timer.clear();
    while (this.#head) this.cancel(this.#head);
  }

  #sweep(now: number): void {
    const delay = this.#delay;
    const due = now - delay;
    const hedged: Hedgeable[] = [];
    let next = Infinity;
    for (let request = this.#head; request; request = request.hedgeNext) {
      const since = request.hedgeSince!;
      if (since <= due) hedged.push(request);
      else if (since < next) next = since;
    }
    for (const request of hedged) {
      this.cancel(request);
      // It may wait again (from a later time), which sets the timer.
      request.hedge();
    }
    if (this.#timer.armed || !this.#head) return;
    if (next === Infinity) for (let request: Hedgeable | undefined = this.#head; request; request = request.hedgeNext) next = Math.min(next, request.hedgeSince!);
    // No sooner than an eighth of the delay: a sweep serves every request due by then.
    this.#schedule(Math.max(next + delay - now, delay / 8));
  }

  #schedule(ms: number): void {
    this.#timer.arm(Math.max(1, ms));
  }

  #recompute(): void {
    const n = Math.min(this.#count, SAMPLES);
    const scratch = this.#scratch;
    scratch.set(n === SAMPLES ? this.#samples : this.#samples.subarray(0, n));
    const at = select(scratch, n, Math.min(n - 1, Math.floor((n * this.#settings.percentile) / 100)));
    this.#delay = Math.min(this.#settings.maxDelayMs, Math.max(this.#settings.minDelayMs, at));
  }
}

/**
 * The `k`-th smallest of the first `n` values (Hoare's quickselect, in place): what sorting would
 * put at `k`, in linear time and without a copy, run every `RECOMPUTE` answers.
 */
function select(values: Float64Array, n: number, k: number): number {
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const pivot = values[(lo + hi) >> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (values[i]! < pivot) i++;
      while (values[j]! > pivot) j--;
      if (i <= j) {
        const swap = values[i]!;
        values[i++] = values[j]!;
        values[j--] = swap;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return values[k]!;
}

/**
 * No longer listed, or ejected because requests there go unanswered (silent, refused, a failed
 * handshake): those still waiting there are moved, for free. Not an endpoint resting for a 429's
 * `Retry-After` or a run of failures: it answers, and free copies of its queued GETs would only
 * load its peers, which may be near their own limits.
 */
function isOut(endpoint: Endpoint): boolean {
  if (endpoint.removed) return true;
  const reason = endpoint.state === 'ejected' ? endpoint.lastEjection?.reason : undefined;
  return reason === 'unreachable' || reason === 'connect' || reason === 'tls';
}
