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

/** The response a body timer guards. */
export interface Abortable {
  abort(reason: Error): void;
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
 * One clock timer per response, re-armed only when it falls due early: a chunk costs a `now()`.
 * Like undici's, the timer does not count while the caller has paused the body (the server cannot
 * send then) and starts afresh when it resumes.
 */
export class BodyTimer {
  readonly #clock: Clock;
  readonly #ms: number;
  readonly #reader: Reader;
  /** What is aborted when the body has been silent too long (an attempt: no closure per response). */
  readonly #response: Abortable;
  #last: number;
  #timer: ClockTimer | undefined;

  constructor(clock: Clock, ms: number, reader: Reader, response: Abortable) {
    this.#clock = clock;
    this.#ms = ms;
    this.#reader = reader;
    this.#response = response;
    this.#last = clock.now();
    this.#timer = clock.setTimeout(this.#check, ms);
    reader.bodyTimer = this;
  }

  /** Body data arrived (or the caller resumed reading). */
  touch(): void {
    this.#last = this.#clock.now();
  }

  stop(): void {
    if (this.#timer === undefined) return;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#reader.bodyTimer === this) this.#reader.bodyTimer = undefined;
  }

  readonly #check = (): void => {
    const idle = this.#clock.now() - this.#last;
    if (this.#reader.paused || idle < this.#ms) {
      this.#timer = this.#clock.setTimeout(this.#check, this.#reader.paused ? this.#ms : this.#ms - idle);
      return;
    }
    this.#timer = undefined;
    if (this.#reader.bodyTimer === this) this.#reader.bodyTimer = undefined;
    this.#response.abort(new errors.BodyTimeoutError(`no response body data for ${this.#ms} ms`));
  };
}
