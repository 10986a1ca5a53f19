import type { Dispatcher } from 'undici';
import type { Endpoint } from '../balancer/Endpoint.ts';
import type { ClockTimer } from '../clock.ts';
import { classifyError } from '../health/classifyError.ts';
import type { AttemptOutcome } from '../health/outcome.ts';
import { keepRejectionBody } from '../health/rejections.ts';
import type { Route } from '../net/tls.ts';
import { BodyTimer, type Reader } from './BodyTimer.ts';
import type { DescribedRequest, RequestHost } from './RequestHost.ts';

type DispatchOptions = Dispatcher.DispatchOptions;
type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;
type Headers = Parameters<NonNullable<Handler['onResponseStart']>>[2];

/** A short GET that is about to be sent, as `explore` needs it. */
export interface Explorable extends DescribedRequest {
  /** A GET of one object (its latency feeds `Endpoint.latency`); else a LIST or discovery GET of `loadClass`. */
  readonly timed: boolean;
  readonly loadClass: string | undefined;
  /** Milliseconds its response body may stay silent (the copy's too). */
  readonly bodyTimeout: number;
  /** The copy made for it, which the caller's abort ends too, and the end of the caller's request bounds. */
  copy: CopyHandle | undefined;
}

/** What a request holds of the copy made for it. */
export interface CopyHandle {
  /** The caller aborted: the copy ends now. */
  cancel(): void;
  /** The caller's request is over (answered, or failed): the copy may read on for `COPY_AFTER_MS`, no longer. */
  callerDone(): void;
}

/**
 * How long a copy may still run once its caller's request is over (chaos finding 3, issue 26). A
 * copy is a measurement, so it reads on past the caller's answer, which usually comes first (the
 * copy measures a slow endpoint); but an apiserver waits for its in-flight requests before it exits,
 * and a copy on one that stopped answering (up to the 300-s body and headers timeouts) held its
 * drain, and a rolling restart, for seconds after the caller was done. An answer that comes more
 * than a second after the caller's is at least a second slower than another endpoint's: the copy is
 * then aborted, and its time ends as a censored sample (it only raises the estimate), as a caller's
 * abort does.
 */
export const COPY_AFTER_MS = 1000;

/**
 * Duplicates the exploration, not the weights. A `lagging` endpoint (its latest answers took 2.5
 * times the fastest one's or more) keeps a trickle of picks, which is how the balancer learns that
 * it is fast again; a caller whose request is that trickle waits for the slow answer, and at light
 * load those few requests were the 99th percentile (0.6–0.8 % of requests, 20/20/100 ms). With
 * hedging on, such a pick of a short GET (of one object, a LIST, discovery) is sent there as a copy
 * whose answer only feeds the estimate and health, and the caller's own request goes to the
 * picker's next other endpoint (a hedge sent at once, paid like one: an earned hedge above a
 * reserve, a unit of the retry budget while it runs). For its picks the lagging endpoint gets
 * exactly the requests and answers it would have had, so the load factors follow the same samples
 * as without copies, and a recovered endpoint's fast answer lowers its estimate as before.
 *
 * Why a copy and not a race whose loser is aborted: an aborted loser's time is censored (it may
 * only raise the estimate), so a slow endpoint that keeps losing gives no sample at all, its
 * estimate ages, its factor climbs back to 1 within ~8 s, and a third of the picks go there.
 *
 * The same copy also re-measures a lagging endpoint that is not picked: one that has given no
 * sample for a while (`balancer/load/remeasure.ts`; at the weights' floor it is picked next to
 * never, and waited seconds for its estimate to age), by a GET of the kind the weights follow. Then
 * the caller's request keeps its pick; these copies are load the endpoint would not have had, half
 * a second to a few seconds apart.
 *
 * A LIST is copied only if its class is light (`ClassCosts.copies`: under a second on average), and
 * a write never: it cannot be sent twice. Before LISTs and discovery GETs were copied, a client that
 * sent only those had a caller's request measure a lagging endpoint, ever more rarely, and wait the
 * slow answer: 3–6 of 1,100 LISTs at 110 a second (20/20/100 ms), the light-load p99's rank.
 *
 * Called for every short, replayable GET that measures load, with its `picked` endpoint. Returns
 * the endpoint for the caller's request: `picked` when no copy is made (no lagging endpoint picked
 * or due, hedging off, the reserve reached, no other endpoint, no retry budget).
 */
export function explore(host: RequestHost, picked: Endpoint, route: Route, opts: DispatchOptions, request: Explorable): Endpoint {
  const endpoint = host.toMeasure?.(picked, request.timed, request.loadClass);
  if (!endpoint) return picked;
  const hedging = host.hedging;
  if (!hedging?.mayExplore()) return picked;
  const other = endpoint === picked ? host.pick(false, false, new Set([endpoint])) : picked;
  if (!other || !host.budget.tryAcquire()) return picked;
  hedging.explored();
  host.retrying(endpoint, other, 'hedge', 1, request);
  const copy = new ExploreCopy(host, endpoint, request);
  request.copy = copy;
  copy.send(route, opts, request);
  return other;
}

/**
 * The copy: its answer is read to the end (a reset would cost an HTTP/1.1 connection) and dropped,
 * unless that end is more than `COPY_AFTER_MS` after its caller's request's. It is its own body
 * timer, and its own never-paused reader.
 */
class ExploreCopy extends BodyTimer implements Handler, Reader, CopyHandle {
  readonly paused = false;
  bodyTimer: BodyTimer | undefined = undefined;
  readonly #host: RequestHost;
  readonly #endpoint: Endpoint;
  readonly #bodyTimeout: number;
  /** Its request's class, if not a GET of one object: its answer is a sample of that class. */
  readonly #loadClass: string | undefined;
  #controller: Controller | undefined;
  #cancelled = false;
  /** Ends it `COPY_AFTER_MS` after its caller's request (`callerDone`). */
  #bound: ClockTimer | undefined;
  #sentAt = NaN;
  #statusCode = 0;
  #headers: Headers = {};
  /** What a rejection says (a shutdown's 503), for the verdict on the endpoint's health. */
  #body = '';
  #settled = false;

  constructor(host: RequestHost, endpoint: Endpoint, request: Explorable) {
    super();
    this.#host = host;
    this.#endpoint = endpoint;
    this.#bodyTimeout = request.bodyTimeout;
    this.#loadClass = request.loadClass;
  }

  get reader(): Reader {
    return this;
  }

  send(route: Route, opts: DispatchOptions, request: DescribedRequest): void {
    const host = this.#host;
    this.#sentAt = host.clock.now();
    // Started as an attempt of the request (it is measured): the endpoint's in-flight count and estimate see it.
    host.attemptStarted(this.#endpoint, false, request, 1, this.#sentAt);
    try {
      host.send(this.#endpoint, route, opts, this);
    } catch (error) {
      this.onResponseError(null, error as Error);
    }
  }

  onRequestStart(controller: Controller): void {
    this.#controller = controller;
    if (this.#cancelled) controller.abort(cancelled());
  }

  /**
   * The caller aborted (or, with `reason`, the copy outlived its caller's request by
   * `COPY_AFTER_MS`): the copy goes too, with no verdict on the endpoint. A copy is load sent on
   * the caller's behalf; it must not outlive the caller's interest, holding a unit of retry budget
   * and a connection on an endpoint already slow.
   */
  cancel(reason = cancelled()): void {
    if (this.#settled) return;
    this.#cancelled = true;
    this.stop();
    this.#settle({ type: 'aborted' });
    this.#controller?.abort(reason);
  }

  callerDone(): void {
    if (this.#settled || this.#bound !== undefined) return;
    this.#bound = this.#host.clock.setTimeout(() => {
      this.#bound = undefined;
      this.cancel(outlived());
    }, COPY_AFTER_MS);
  }

  onResponseStart(_controller: Controller, statusCode: number, headers: Headers): void {
    if (statusCode < 200 || this.#cancelled) return;
    this.#statusCode = statusCode;
    this.#headers = headers;
    const host = this.#host;
    const now = host.clock.now();
    host.hedging?.heard(this.#endpoint, now);
    if (this.#bodyTimeout > 0) host.bodyTimers.start(this, this.#bodyTimeout, now);
  }

  onResponseData(_controller: Controller, chunk: Buffer): void {
    this.touch((this.#endpoint.lastAnswerAt = this.#host.clock.now()));
    this.#body = keepRejectionBody(this.#body, this.#statusCode, chunk);
  }

  onResponseEnd(): void {
    this.stop();
    this.#settle({ type: 'response', statusCode: this.#statusCode, headers: this.#headers, body: this.#body, eviction: false });
  }

  onResponseError(_controller: Controller | null, error: Error): void {
    this.stop();
    const kind = classifyError(error);
    this.#settle(kind === 'aborted' ? { type: 'aborted' } : { type: 'error', kind, error });
  }

  /** Its body was silent for the body timeout. */
  abort(reason: Error): void {
    this.#controller?.abort(reason);
  }

  #settle(outcome: AttemptOutcome): void {
    if (this.#settled) return;
    this.#settled = true;
    const host = this.#host;
    if (this.#bound !== undefined) host.clock.clearTimeout(this.#bound);
    this.#bound = undefined;
    host.budget.release();
    host.attemptEnded(this.#endpoint, false, outcome, this.#sentAt, this.#loadClass);
  }
}

/** Informational (undici's `UND_ERR_INFO`), as an attempt's `superseded`: no other request is to fail for it. */
function cancelled(): Error {
  return Object.assign(new Error("kube-balancer: the caller aborted the request this copy explored for"), { code: 'UND_ERR_INFO' });
}

/** Informational too: the copy ran `COPY_AFTER_MS` past its caller's request. */
function outlived(): Error {
  return Object.assign(new Error("kube-balancer: this copy ran a second past the request it explored for"), { code: 'UND_ERR_INFO' });
}
