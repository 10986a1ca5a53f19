import { errors } from 'undici';
import type { Clock, ClockTimer } from '../clock.ts';

/** What requests had before we kept the body timeout ourselves: undici's default `bodyTimeout`. */
export const DEFAULT_BODY_TIMEOUT = 300_000;

/** The caller's side of a response: the timer waits while the caller holds the body back. */
export interface Reader {
  readonly paused: boolean;
  /** The running timer, told when the caller resumes reading. */
  bodyTimer: BodyTimer | undefined;
}

/**
 * undici's `bodyTimeout` (the longest silence between two pieces of a response body), kept here:
 * undici is given `bodyTimeout: 0`.
 *
 * Why: over HTTP/2, undici 8.13 arms a stream's body timer in its 'response' handler, which Node
 * runs on the next tick. When the whole response arrived in one read, nghttp2 has closed the stream
 * by then and Node has already cleared the stream's timer; the one undici sets afterwards is never
 * cleared (`Http2Stream#_destroy` leaves it), so the stream and its request stay reachable until it
 * fires, 300 s later. With three endpoints that was 2-4 % of all requests, 5.6 MB per 100,000
 * (`bench/repro/h2-stream-timer-leak.mjs` shows it with plain undici Pools).
 *
 * One clock timer serves every response of a balancer: running body timers sit in a list (in and
 * out in O(1), no native timer per response, which cost a few µs of CPU per request), swept when
 * the earliest is due; a sweep re-arms for the earliest still running. A chunk costs a `now()`.
 * Like undici's, the timer does not count while the caller has paused the body (the server cannot
 * send then) and starts afresh when it resumes: a response fails exactly `ms` after its last chunk
 * (or the resume) while it is not paused.
 */
export class BodyTimers {
  readonly clock: Clock;
  /** Running timers, oldest first. */
  #head: BodyTimer | undefined;
  #tail: BodyTimer | undefined;
  #timer: ClockTimer | undefined;
  /** When the clock timer fires; Infinity when none is set. */
  #timerAt = Infinity;
  #closed = false;

  constructor(clock: Clock) {
    this.clock = clock;
  }

  /**
   * Starts the wait of a response that began at clock time `now`: `timer` (the response itself) is
   * aborted after `ms` of silence.
   */
  start(timer: BodyTimer, ms: number, now: number): void {
    timer.timers = this;
    timer.ms = ms;
    timer.last = now;
    timer.linked = true;
    const tail = this.#tail;
    timer.prev = tail;
    if (tail) tail.next = timer;
    else this.#head = timer;
    this.#tail = timer;
    timer.reader.bodyTimer = timer;
    // Mostly later than the timer already set (the same `ms`, started later): nothing to do.
    if (now + ms < this.#timerAt) this.#arm(now + ms, now);
  }

  /**
   * The balancer closes, gracefully: its pools let the requests in flight finish, so their bodies
   * stay timed (a silent one would otherwise hold the close forever) and responses that begin now
   * are timed too. The clock timer goes with the last of them, so nothing is left armed.
   */
  close(): void {
    this.#closed = true;
    if (!this.#head) this.#disarm();
  }

  /**
   * Takes `timer` out of the list. The clock timer stays while the balancer is open (when it fires
   * it finds less to do); once it is closed, the last one out clears it.
   */
  unlink(timer: BodyTimer): void {
    if (!timer.linked) return;
    timer.linked = false;
    const { prev, next } = timer;
    if (prev) prev.next = next;
    else this.#head = next;
    if (next) next.prev = prev;
    else this.#tail = prev;
    timer.prev = timer.next = undefined;
    if (this.#closed && !this.#head) this.#disarm();
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  #arm(at: number, now: number): void {
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = this.clock.setTimeout(this.#sweep, at - now);
  }

  readonly #sweep = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.clock.now();
    let due: BodyTimer[] | undefined;
    let next = Infinity;
    for (let t = this.#head; t; t = t.next) {
      // Paused: looked at again `ms` from now; a resume starts its wait afresh meanwhile.
      const at = t.reader.paused ? now + t.ms : t.last + t.ms;
      if (at <= now) (due ??= []).push(t);
      else if (at < next) next = at;
    }
    if (due) for (const t of due) t.expire();
    if (next !== Infinity && this.#head && next < this.#timerAt) this.#arm(next, now);
  };
}

/**
 * One response's body timeout, while it runs (see `BodyTimers`): the response (an attempt) is its
 * own list entry, so a timed response costs no object of its own.
 */
export abstract class BodyTimer {
  /** The caller's side, whose pause stops the wait. */
  abstract readonly reader: Reader;
  ms = 0;
  /** Clock time of the last chunk, the resume, or the start. */
  last = 0;
  prev: BodyTimer | undefined = undefined;
  next: BodyTimer | undefined = undefined;
  linked = false;
  timers: BodyTimers | undefined = undefined;

  /** Silent too long: the response fails with this error. */
  abstract abort(reason: Error): void;

  /** Body data arrived (or the caller resumed reading), at clock time `now` if the caller read it already. */
  touch(now?: number): void {
    if (this.linked) this.last = now ?? this.timers!.clock.now();
  }

  stop(): void {
    if (!this.linked) return;
    this.timers!.unlink(this);
    if (this.reader.bodyTimer === this) this.reader.bodyTimer = undefined;
  }

  /** Silent for `ms`: the response fails with undici's error. */
  expire(): void {
    this.stop();
    this.abort(new errors.BodyTimeoutError(`no response body data for ${this.ms} ms`));
  }
}
