/**
 * How quickly the estimate follows a slower sample, and a faster one (ms, time constants of an
 * exponential moving average over unevenly spaced samples: a sample Δt after the previous one has
 * weight `1 − e^(−Δt/τ)`, Finagle's `Ema`). Rising fast and falling slowly is peak-EWMA softened:
 * Finagle and Linkerd reset to any higher sample (the peak), which suits their power of two choices
 * that re-reads in-flight counts per request, but here one stray slow answer would unbalance a
 * weighted order for a whole decay time; a server that really turned slow is followed within
 * ~300 ms. At a few answers a second each input all but replaces the last, so a rarely used
 * endpoint is judged by its latest answers (the median of three, see `end`). A faster fall was tried (τ = 300 ms): a busy machine's stalls then narrow the
 * fast endpoints' lead over a slow one for less long (simulated, 40-ms stalls every 300 ms: the
 * slow one's light-load share 1.4 % → 0.6 %), but equal endpoints, saturated, react to every
 * stall (throughput 0.95 → 0.87 of the capacities; round robin 0.965).
 */
const RISE_MS = 150;
export const FALL_MS = 1_000;
/**
 * The `relative` estimate (LISTs, writes, discovery) follows the median of its last seven samples:
 * their answers can be as fast as a millisecond, and a busy machine's delays of 20–40 ms came two
 * and three in a row on one endpoint's connection, which a median of three lets in.
 */
export const RELATIVE_MEDIAN_OF = 7;
/**
 * For this long (ms) after an endpoint's first answer the estimate falls as fast as it rises: a
 * cold client's first answers are slow everywhere (TLS handshakes, JIT, a busy start) and a slow
 * fall remembered them for seconds — traced on real sockets, the fast endpoints still at 130–140 ms
 * after a 500-ms warm-up, which narrowed their lead over a 100-ms endpoint (factor 0.64 instead of
 * 0.005) and sent it a share of the next second's requests.
 */
const LEARN_MS = 2_000;

/** The median of three numbers. */
function median3(a: number, b: number, c: number): number {
  return a > b ? (b > c ? b : a > c ? c : a) : a > c ? a : b > c ? c : b;
}

/**
 * One endpoint's observed latency (ms) for requests of one shape — short GETs of one named object,
 * see `isPointRead` — and its in-flight count of them, which catches an endpoint that stopped
 * answering before any answer says so.
 */
export class LatencyEstimate {
  /** Moving average of completed samples, ms; NaN before the first. */
  value = NaN;
  /** Samples taken (answers that measured serving time). */
  samples = 0;
  /** Clock time of the last sample that moved `value`; −Infinity before the first. */
  sampledAt = -Infinity;
  /** Timed requests sent and not finished. */
  inFlight = 0;
  /**
   * Whether the last timed request to end here was answered (a sample, not censored): a slow
   * endpoint's was, a black hole's were given up on.
   */
  answered = false;
  /**
   * Moving average of the timed requests in flight (itself included) when each sample ended, with
   * the same weights as `value`: the queue its latency was measured at (see `reweigh`). NaN before the first.
   */
  load = NaN;
  /** Since when requests have been in flight with none finishing: the last end, or the start that ended an idle spell. */
  #waitingSince = 0;
  /** Clock time of the first sample. */
  #firstAt = 0;

  /** The newest sample (ms), whether or not the median let it in; NaN before the first. */
  get newest(): number {
    return this.value === this.value ? this.#last : NaN;
  }

  /** Since when (clock ms) it has had samples; Infinity before the first. */
  get sampledSince(): number {
    return this.value === this.value ? this.#firstAt : Infinity;
  }
  /** Time constant of a rise (ms): `RISE_MS` unless given. */
  readonly #riseMs: number;
  /**
   * The last three samples (newest first) and how many of them there are: the moving average
   * follows their median, so one stray answer, however slow, never enters it (see `end`).
   */
  #last = 0;
  #before = 0;
  #kept = 0;
  /** Clock time of the last `restart`: requests sent before it give no sample. */
  #restartedAt = -Infinity;

  /**
   * `riseMs`: how quickly it follows a slower sample (`RISE_MS` by default). The `relative` estimate
   * of LISTs, writes and discovery rises as slowly as it falls (1 s): their answers are as fast as a
   * millisecond, where a busy machine's delays of 20–40 ms came two and three in a row on one
   * endpoint's connection (sequential `/version` GETs in the tests) and a fast rise took them for a
   * slow endpoint; a real slowdown lasts, and is followed within a second or two.
   */
  constructor(riseMs = RISE_MS, medianOf = 3) {
    this.#riseMs = riseMs;
    if (medianOf > 3) {
      this.#ring = new Float64Array(medianOf);
      this.#sorted = new Float64Array(medianOf);
    }
  }

  /** The last samples and a scratch copy, for a median of more than three (`constructor`'s `medianOf`). */
  readonly #ring: Float64Array | undefined;
  readonly #sorted: Float64Array | undefined;
  #ringCount = 0;

  /** The lower median of the last samples, `ms` (the newest) included. */
  #wideMedian(ms: number): number {
    const ring = this.#ring!;
    ring[this.#ringCount % ring.length] = ms;
    this.#ringCount++;
    const n = Math.min(this.#ringCount, ring.length);
    const sorted = this.#sorted!.subarray(0, n);
    sorted.set(ring.subarray(0, n));
    sorted.sort();
    return sorted[(n - 1) >> 1]!;
  }

  /** A timed request starts. */
  begin(now: number): void {
    if (this.inFlight === 0) this.#waitingSince = now;
    this.inFlight++;
  }

  /**
   * The endpoint is back from an ejection or a drain, at clock time `now`: what was measured
   * before — its failing spell, a request that waited out its restart, the process it was before —
   * says nothing of it now. The estimate starts over as a new endpoint's: not judged until it has
   * answered again (`reweigh`'s minimum of samples), its first answers forgotten as fast as they
   * come. Requests still in flight stay counted as such, but give no sample when they end. Kept,
   * one outlier (a GET that waited ~1 s for a restarting apiserver, answered while it was still
   * ejected) was all its estimate held once it was back: at the weights' floor it got no request
   * that would have measured it again, and its excess over ~5-ms peers took ~19 s to age away.
   */
  restart(now: number): void {
    this.value = NaN;
    this.samples = 0;
    this.sampledAt = -Infinity;
    this.answered = false;
    this.load = NaN;
    this.#kept = 0;
    this.#restartedAt = now;
  }

  /**
   * A timed request ended after `ms`. `censored` for an outcome that is no measure of serving time
   * (an error, a 5xx, a 429, the caller giving up): it is at least that slow, so it only counts
   * where it raises the estimate — a fast failure must never make an endpoint look fast.
   *
   * The moving average is fed the median of the last three samples, not the sample: its weight per
   * sample is time-based, so at a few answers a second one sample all but replaced it, and a single
   * slow answer (a GC pause, one heavy GET) put a healthy endpoint at the weights' floor for
   * seconds — one 400-ms answer beside 1-ms ones at ~60 req/s halved its share for 3 s, where at thousands a
   * second it moved nothing. The median lets no lone outlier in at any rate, while a real slowdown
   * is followed from its second slow answer on (one sample later than before).
   *
   * `fastFall`: the estimate falls as fast as it rises, for an endpoint that is `lagging` (its
   * answers are a re-measure's, a few a second at most: see `measureAgain.ts`). Falling over
   * `FALL_MS` (1 s) from 40 to 4 ms took ~2 s once two fast answers had turned the median, with
   * the endpoint at the weights' floor all along; a lagging endpoint is one that hardly takes
   * requests, so no busy endpoint's weights get the jumpier estimate.
   */
  end(now: number, ms: number, censored: boolean, fastFall = false): void {
    const seen = this.inFlight;
    if (this.inFlight > 0) this.inFlight--;
    this.#waitingSince = now;
    // Sent before the endpoint came back: a measure of what it was then.
    if (now - ms < this.#restartedAt) return;
    this.answered = !censored;
    if (!censored) this.samples++;
    const value = this.value;
    if (value !== value) {
      if (!censored) {
        this.value = ms;
        this.load = seen;
        this.sampledAt = now;
        this.#firstAt = now;
        this.#last = ms;
        this.#kept = 1;
        if (this.#ring) {
          this.#ringCount = 0;
          this.#wideMedian(ms);
        }
      }
      return;
    }
    if (censored && ms <= value) return;
    // Of two samples, the lower: a slow one is only believed once another agrees.
    const kept = this.#kept;
    const filtered = this.#ring ? this.#wideMedian(ms) : kept >= 2 ? median3(ms, this.#last, this.#before) : kept === 1 ? Math.min(ms, this.#last) : ms;
    this.#before = this.#last;
    this.#last = ms;
    if (kept < 2) this.#kept = kept + 1;
    const weight = 1 - Math.exp(-Math.max(0, now - this.sampledAt) / (filtered > value || fastFall || now - this.#firstAt < LEARN_MS ? this.#riseMs : FALL_MS));
    this.value = value + weight * (filtered - value);
    if (!censored) this.load += weight * (seen - this.load);
    this.sampledAt = now;
  }

  /** A timed request ended that gives no sample at all (its class not yet comparable, see `ClassCosts`). */
  cancel(now: number): void {
    if (this.inFlight > 0) this.inFlight--;
    this.#waitingSince = now;
  }

  /**
   * How long requests have been in flight here without any of them finishing (ms), 0 when none is
   * in flight: the in-flight count's evidence, which grows while an endpoint that stopped answering
   * gives no sample at all.
   */
  silentFor(now: number): number {
    return this.inFlight > 0 ? now - this.#waitingSince : 0;
  }
}
