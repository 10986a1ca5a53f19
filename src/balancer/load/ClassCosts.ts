/**
 * A class counts once this many of its requests were answered, over all endpoints: before that, its
 * reference is the first answers' (handshakes, a cold start), against which every later answer of the
 * class looks fast, and an endpoint that happened to serve the first ones looks slow.
 */
const WARM_SAMPLES = 32;
/** Answers of a class past which its reference moves by 1/this per answer (a count-based average). */
const REFERENCE_SPAN = 64;
/** The most classes followed; a client that sends more (paths of its own making) gets no signal from the others. */
const MAX_CLASSES = 256;
/**
 * The longest mean latency (ms) of a class whose GETs are copied to measure a lagging endpoint
 * (`copies`): a LIST that takes a second or more is a heavy one (thousands of objects), and a copy of
 * it is that much more work for an apiserver, read on at most a second past its caller's answer
 * (`dispatcher/Explore.ts`'s `COPY_AFTER_MS`), so likely aborted and wasted on a slow one.
 */
const MAX_COPIED_MS = 1_000;

interface Reference {
  /** Mean latency of the class's answers, over every endpoint (ms). */
  ms: number;
  count: number;
}

/**
 * Puts the latencies of the short requests that are no GET of one object (LISTs, writes, discovery,
 * see `requestClass`) on one scale: each answer's latency over its class's mean latency across the
 * endpoints, times the mean over every class (so that the result is in ms, as `reweigh`'s
 * comparisons and noise margin expect). A LIST of a thousand pods and a discovery GET then weigh
 * alike in an endpoint's `relative` estimate, and an endpoint that serves its requests, of whatever
 * class, 5× slower than the others has an estimate 5× theirs. The means are averages over the
 * endpoints as they are picked: an endpoint's share moves them only as much as every endpoint's
 * estimate alike, and the weights compare estimates by ratio.
 */
export class ClassCosts {
  readonly #classes = new Map<string, Reference>();
  /** Mean of every class's reference, weighted by their answers: the common scale (ms). */
  #scale = NaN;
  #count = 0;

  /** Whether a GET of class `key` may be copied to measure a lagging endpoint: its answers are learnt from (warm), and light (`MAX_COPIED_MS`). */
  copies(key: string): boolean {
    const ref = this.#classes.get(key);
    return ref !== undefined && ref.count >= WARM_SAMPLES && ref.ms <= MAX_COPIED_MS;
  }

  /**
   * `ms` of an answer of class `key`, rescaled; NaN while the class is cold, or not followed.
   * `censored` (no measure of serving time, see `LatencyEstimate.end`): rescaled, not learnt from.
   */
  rescale(key: string, ms: number, censored: boolean): number {
    let ref = this.#classes.get(key);
    if (censored) return ref !== undefined && ref.count >= WARM_SAMPLES ? (ms / ref.ms) * this.#scale : NaN;
    if (ref === undefined) {
      if (this.#classes.size >= MAX_CLASSES) return NaN;
      ref = { ms, count: 0 };
      this.#classes.set(key, ref);
    }
    ref.count++;
    ref.ms += (ms - ref.ms) / Math.min(ref.count, REFERENCE_SPAN);
    this.#count++;
    this.#scale = this.#count === 1 ? ms : this.#scale + (ms - this.#scale) / Math.min(this.#count, REFERENCE_SPAN);
    if (ref.count < WARM_SAMPLES || !(ref.ms > 0)) return NaN;
    return (ms / ref.ms) * this.#scale;
  }
}

