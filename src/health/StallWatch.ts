import type { Endpoint } from '../balancer/Endpoint.ts';
import { STALL_MS, stallMs } from '../balancer/load/LoadWeights.ts';
import { PatientTimer, type Clock } from '../clock.ts';

/**
 * The longest wait (ms) between two looks while timed requests are in flight: the shortest stall
 * there is (`STALL_MS`, a silence of 2× a ~0 ms estimate + 250 ms). A look also comes when a
 * silence it saw would turn into a stall, so a black hole is suspected as soon as its silence is
 * one (~300 ms after its last answer for a 20-ms estimate), and its probe (1 s timeout by default)
 * ejects it ~1.3 s after.
 */
export const STALL_WATCH_MS = STALL_MS;
/**
 * The stall of an endpoint that has no latency estimate yet (it never answered a timed request):
 * its first requests also wait for a connection and a TLS handshake, so it is given longer.
 */
const UNKNOWN_STALL_MS = 1_000;
/** The shortest wait between two looks (ms), however close a stall is. */
const MIN_LOOK_MS = 50;

/**
 * Tells a black hole that nothing else would tell in time. The load weights see a silence (timed
 * requests in flight, none finishing for 2× the endpoint's latency estimate + 250 ms, see
 * `LoadWeights`) only when an answer arrives, and hedging (when on) only from its own sweeps: with
 * `hedge: false` and a closed-loop client whose every worker waits on the black hole, no answer
 * comes and only the next scheduled probe (0–2 s away) plus its timeout found it (1.5–3.2 s). The
 * watch looks every `STALL_WATCH_MS` while timed requests are in flight, and has an endpoint that
 * stalled probed at once (`suspect`: `Prober.probeNow`, its usual request and timeout, one probe
 * at a time): a black hole's probe times out and ejects it as `unreachable`, which fails what
 * waits there so that it is retried elsewhere.
 *
 * A merely slow endpoint costs a /readyz that passes, no request: a suspected endpoint keeps its
 * picks. (Under `'weighted-round-robin'` its silence already weighs it down at the next answer
 * from another endpoint; with every worker stuck there, no pick is made that keeping it out would
 * spare.) It is suspected again only once its silence has doubled, so an apiserver that answers
 * /readyz while its GETs hang is not probed every 250 ms.
 *
 * One timer per balancer, not per request or endpoint (`npm run fleet` runs thousands of clients
 * and every timer there is CPU): armed by the first timed request that starts while it is not, it
 * re-arms only while one is in flight, so an idle client runs none (see `ended`). A request costs
 * a counter up and down and a check of whether the timer is set. Watches, LISTs and other
 * requests that are not timed never count.
 */
export class StallWatch {
  readonly #endpoints: () => Iterable<Endpoint>;
  readonly #suspect: (endpoint: Endpoint) => boolean;
  /** The silence (its start, and how long it was) each suspected endpoint had when last suspected. */
  readonly #suspected = new WeakMap<Endpoint, { since: number; silent: number }>();
  readonly #timer: PatientTimer;
  /** Timed requests in flight, all endpoints together (a look recounts them from the endpoints). */
  #inFlight = 0;
  /** When the last spell of timed requests in flight ended (−Infinity: none yet). */
  #idleAt = -Infinity;
  /** Whether the spell under way began more than a period after the last one ended. */
  #sparse = false;
  #closed = false;

  /** `suspect`: probes the endpoint now; false when it could not (one under way, or not probed). */
  constructor(clock: Clock, endpoints: () => Iterable<Endpoint>, suspect: (endpoint: Endpoint) => boolean) {
    this.#endpoints = endpoints;
    this.#suspect = suspect;
    // Late by half a period or more, a look waits for what our own stall left unread, so that our
    // stall is no endpoint's.
    this.#timer = new PatientTimer(clock, (now) => this.#look(now), () => STALL_WATCH_MS / 2);
  }

  /** A timed request started at clock time `now` (with `EndpointSet.timedStart`): the watch is armed if it is not. */
  started(now: number): void {
    if (this.#inFlight++ === 0) this.#sparse = now - this.#idleAt > STALL_WATCH_MS;
    if (!this.#timer.armed && !this.#closed) this.#timer.arm(STALL_WATCH_MS, now);
  }

  /**
   * A timed request ended at clock time `now`. When it was the last in flight of a spell that came
   * alone (a period or more after the one before), the timer is cleared: a client that sends a GET
   * every few seconds would otherwise run one look per GET that finds nothing to do (`npm run
   * fleet`: 11 % more events). Spells closer together leave it to its next look, which stops it if
   * all is quiet: a steady client costs at most four looks a second, never a timer per request.
   */
  ended(now: number): void {
    if (this.#inFlight === 0 || --this.#inFlight > 0) return;
    this.#idleAt = now;
    if (this.#sparse) this.#timer.clear();
  }

  /** Whether the timer is set (for tests). */
  get armed(): boolean {
    return this.#timer.armed;
  }

  close(): void {
    this.#closed = true;
    this.#timer.clear();
  }

  #look(now: number): void {
    let inFlight = 0;
    /** Until the first silence would become a stall if nothing is answered meanwhile (ms). */
    let next = STALL_WATCH_MS;
    for (const endpoint of this.#endpoints()) {
      const estimate = endpoint.latency;
      if (estimate.inFlight === 0) continue;
      inFlight += estimate.inFlight;
      // A probation request (`probing`) that stalls is looked at too: a verdict no longer resets the
      // connections, so the one it went out on may be the same silent one.
      if ((endpoint.state !== 'ready' && endpoint.state !== 'probing') || endpoint.removed) continue;
      // Silent: its timed requests stalled and nothing else came from it meanwhile (the progress
      // clock: a watch's events, a LIST's body, any answer), so one busy with other work is not suspected.
      const silent = Math.min(estimate.silentFor(now), now - endpoint.lastAnswerAt);
      const value = estimate.value;
      // A probation request gets a first request's time, not the estimate, which the requests stuck
      // there before its ejection inflated (their waits end it as censored samples).
      const stall = value === value && endpoint.state === 'ready' ? stallMs(value) : UNKNOWN_STALL_MS;
      if (silent <= stall) {
        if (stall - silent < next) next = stall - silent;
        continue;
      }
      const since = now - silent;
      const before = this.#suspected.get(endpoint);
      // The same silence, not yet twice as long as when it was last suspected: its probe said enough.
      if (before !== undefined && before.since === since && silent < 2 * before.silent) {
        if (2 * before.silent - silent < next) next = 2 * before.silent - silent;
        continue;
      }
      if (this.#suspect(endpoint)) this.#suspected.set(endpoint, { since, silent });
    }
    // The endpoints' counts are the truth (one that left the set takes its requests with it).
    this.#inFlight = inFlight;
    this.#sparse = false;
    // The next look comes when a silence would turn into a stall (just after, so that it has), or
    // a period from now, whichever is sooner, but not sooner than `MIN_LOOK_MS`: a stall is seen
    // when it begins rather than up to a period later, and a steady client still looks at most
    // every few hundred ms (its silences are short, so its stalls are a period or more away).
    if (inFlight > 0 && !this.#closed) this.#timer.arm(Math.max(MIN_LOOK_MS, next + 1), now);
    else this.#idleAt = now;
  }
}
