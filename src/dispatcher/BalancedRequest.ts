import type { Dispatcher } from 'undici';
import type { Endpoint } from '../balancer/Endpoint.ts';
import { isPointRead } from '../balancer/load/isPointRead.ts';
import { requestClass } from '../balancer/load/requestClass.ts';
import { allEndpointsFailed } from '../errors.ts';
import type { FailureKind, RetryReason } from '../health/outcome.ts';
import { isShutdown429, isShutdown503, mayBeShutdown429, mayBeShutdown503 } from '../health/rejections.ts';
import type { ChannelRequest } from '../observability/channels.ts';
import { Attempt, type AttemptOwner } from './Attempt.ts';
import { bufferBody, isReplayable } from './body.ts';
import { DEFAULT_BODY_TIMEOUT } from './BodyTimer.ts';
import { explore, type CopyHandle } from './Explore.ts';
import { handOverHeld } from './HoldBack.ts';
import { framerFor } from './framing/framerFor.ts';
import type { WatchFramer } from './framing/WatchFramer.ts';
import type { Hedgeable } from './Hedge.ts';
import { ProxyController } from './ProxyController.ts';
import type { Route } from '../net/tls.ts';
import type { MovableWatch } from './WatchRebalancer.ts';
import type { DescribedRequest, RequestHost } from './RequestHost.ts';
import { isEviction, isIdempotent, notSent, throttledRetryTarget } from './retrySafety.ts';

type DispatchOptions = Dispatcher.DispatchOptions;
type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;
type Headers = Parameters<NonNullable<Handler['onResponseStart']>>[2];

/**
 * One caller request across its attempts. A retry goes to another endpoint, never the same one
 * twice, and only where the retry-safety table allows (`retrySafety.ts`).
 * A response that reached the caller is never retried, so a watch is never resumed mid-stream.
 *
 * A watch's events are passed on whole (JSON lines, protobuf frames), so that when its connection
 * breaks or it is moved the caller sees it end as at an apiserver's timeout, the one outcome every
 * informer re-watches from (client-node's stops for good on any error but 410). A watch of any
 * other content type passes through unchanged, is never moved, and a break reaches the caller.
 */
export class BalancedRequest extends ProxyController implements MovableWatch, DescribedRequest, Hedgeable, AttemptOwner {
  readonly host: RequestHost;
  readonly downstream: Handler;
  readonly longRunning: boolean;
  /** A watch (`watch=true` or a `/watch/` path): its stream can end cleanly at an event boundary. */
  readonly watch: boolean;
  readonly eviction: boolean;
  /** Milliseconds a response body may stay silent; 0 for none. */
  readonly bodyTimeout: number;
  /** A short GET of one object: its latency measures the endpoint's load (see `isPointRead`). */
  readonly timed: boolean;
  /** Any other short request's class (`requestClass`): its latency, against its class's elsewhere, measures load too. */
  readonly loadClass: string | undefined;
  readonly #opts: DispatchOptions;
  readonly #route: Route;
  readonly #idempotent: boolean;
  /** A short GET whose latency the weights may follow (`timed`, or a LIST or discovery GET of a `loadClass`): it may measure a lagging endpoint by a copy. */
  readonly #measuring: boolean;
  #replayable = true;
  #attempts = 0;
  /** Attempts that failed their TLS handshake: they do not count against `maxAttempts`. */
  #handshakeFailures = 0;
  /** Endpoints a retry must avoid; made only when there is a retry to consider. */
  #tried: Set<Endpoint> | undefined;
  #causes: Array<{ endpoint: string; error: Error }> | undefined;
  #started = false;
  #committed = false;
  /** The latest attempt sent, and while a hedge races it, the attempt it races. */
  #attempt: Attempt | undefined;
  #rival: Attempt | undefined;
  /** The latest rejection (429, 5xx) whose retry went: the answer if all after it fail (`#fallBack`). */
  #fallback: Attempt | undefined;
  #failure: Error | undefined;
  /** The last retry weighed found every endpoint tried or out: its rejection is read, then tried again (`inspected`). */
  #nowhere = false;
  /** The attempt whose watch response is being passed on event by event, once there is one. */
  #watching: Attempt | undefined;
  #framer: WatchFramer | undefined;
  finished = false;
  // Hedging's (see Hedgeable): set here so that every request has the same shape.
  hedgeSince = 0;
  hedgePrev: Hedgeable | undefined = undefined;
  hedgeNext: Hedgeable | undefined = undefined;
  hedgeQueued = false;
  /** The exploration copy made for it, if one was (Explore.ts). */
  copy: CopyHandle | undefined = undefined;

  /** `opts`: this request's own copy, already addressed (Host, servername, timeouts), sent as is by every attempt (a Pool dials its own origin). */
  constructor(host: RequestHost, route: Route, opts: DispatchOptions, downstream: Handler, longRunning: boolean, watch = false) {
    super();
    this.host = host;
    this.downstream = downstream;
    this.longRunning = longRunning;
    this.watch = watch;
    this.#route = route;
    const method = opts.method;
    this.#idempotent = isIdempotent(method);
    this.eviction = isEviction(method, opts.path);
    // Attempts keep the body timeout, not undici: its HTTP/2 body timer can outlive the stream (BodyTimer).
    this.bodyTimeout = opts.bodyTimeout ?? (longRunning ? 0 : DEFAULT_BODY_TIMEOUT);
    opts.bodyTimeout = 0;
    this.timed = !longRunning && isPointRead(method, opts.path);
    this.loadClass = longRunning || this.timed || !host.loadAware ? undefined : requestClass(method, opts.path);
    this.#measuring = this.timed || (this.loadClass !== undefined && this.#idempotent);
    this.#opts = opts;
    host.budget.requests++;
    if (!longRunning) host.budget.shortRequests++;
    host.totals.requests++;
  }

  start(): void {
    if (isReplayable(this.#opts.body) || this.#opts.upgrade) return this.#first();
    // One-shot bodies (fetch always sends one) are read into memory so a retry can send them again.
    bufferBody(this.#opts.body, this.host.maxReplayBytes).then(
      ({ body, replayable }) => {
        (this.#opts as { body: unknown }).body = body;
        this.#replayable = replayable;
        if (!this.finished) this.#first();
      },
      (error: Error) => this.#fail(error, false),
    );
  }

  #first(): void {
    const probationOk = this.#probationOk();
    let endpoint = this.host.pick(this.longRunning, probationOk, undefined);
    if (!endpoint) return this.#fail(this.host.noEndpoints(), false);
    // A lagging endpoint, picked or due a re-measure, is measured by a copy of a short GET; the caller's request goes elsewhere (Explore.ts).
    if (this.#measuring && this.#replayable) endpoint = explore(this.host, endpoint, this.#route, this.#opts, this);
    this.#send(endpoint, false);
    // `#mayHedgeLater`, with the condition already at hand: this is every request's path.
    if (probationOk && !this.finished) this.host.hedging?.wait(this, this.#attempt!.sentAt);
  }

  /** The attempt now in flight alone may be hedged once silent for the delay: a first one (`#first` inlines this), a retry, or the one
   * left when its rival was out (a hedge refused by a crashed apiserver left the GET on a black hole). `hedge`'s limit and the budget bound them. */
  #mayHedgeLater(): void {
    if (this.#probationOk() && !this.finished) this.host.hedging?.wait(this, this.#attempt!.sentAt);
  }

  /** No response after the hedge delay: the same request goes to a second endpoint too, if the retry budget allows. */
  hedge(): void {
    const first = this.#attempt;
    if (!first || first.answered || this.#rival || this.#committed || this.finished || this.aborted) return;
    if (this.#attempts >= this.host.maxAttempts || (first.started && !this.#replayable)) return;
    const hedging = this.host.hedging!;
    const verdict = hedging.mayHedge(first.endpoint, first.sentAt, this.timed);
    // Its endpoint answered less than the delay ago: not silent yet, so wait from that answer.
    if (typeof verdict === 'number') return hedging.wait(this, verdict);
    const tried = (this.#tried ??= new Set());
    tried.add(first.endpoint);
    const endpoint = verdict ? this.host.pick(false, false, tried) : undefined;
    // None earned, nowhere else to go, or no retry budget: ask again after another delay.
    if (!endpoint || !this.host.budget.tryAcquire()) return hedging.wait(this, hedging.now());
    hedging.sent(first.endpoint);
    this.#rival = first;
    this.host.retrying(first.endpoint, endpoint, 'hedge', this.#attempts + 1, this);
    this.#send(endpoint, true);
  }

  /**
   * An attempt's response headers came. It wins a race with a hedge: the other is aborted, with no
   * verdict (a hint of silence when the hedge won). Not a rejection (429, 5xx) while the other still
   * waits: that one goes on alone and the rejected one is only read for its verdict (false). Letting
   * the rejection win aborted slow but healthy attempts, leaving the retry nowhere to go (the demo).
   */
  responded(attempt: Attempt, now: number, statusCode: number): boolean {
    attempt.answered = true;
    this.host.waiting?.delete(attempt);
    const hedging = this.host.hedging;
    if (!hedging || this.longRunning) return true;
    hedging.cancel(this);
    hedging.answered(attempt.endpoint, now - attempt.sentAt, now);
    const rival = this.#rival;
    if (!rival) return true;
    if (this.#rejection(statusCode)) {
      this.#raceGoesOnWithout(attempt, rival);
      return false;
    }
    const loser = rival === attempt ? this.#attempt! : rival;
    this.#rival = undefined;
    this.#attempt = attempt;
    if (loser === rival) hedging.lost(loser.endpoint);
    loser.supersede();
    if (attempt.controller) this.target = attempt.controller;
    return true;
  }

  /** One of two racing attempts is out (it failed, or was rejected): the other carries on alone. */
  #raceGoesOnWithout(out: Attempt, rival: Attempt): void {
    (this.#tried ??= new Set()).add(out.endpoint);
    this.#rival = undefined;
    const other = rival === out ? this.#attempt! : rival;
    this.#attempt = other;
    if (other.controller) this.target = other.controller;
    if (!other.answered) this.#mayHedgeLater();
  }

  #probationOk(): boolean {
    return this.#idempotent && !this.longRunning;
  }

  #send(endpoint: Endpoint, retry: boolean): void {
    this.#attempts++;
    const attempt = new Attempt(this, endpoint, retry);
    this.#attempt = attempt;
    if (this.#idempotent) this.host.waiting?.add(attempt, this);
    // One clock read, only for a request whose time is measured (its latency, or a hedge's delay).
    if (this.timed || this.loadClass !== undefined || this.host.hedging) attempt.sentAt = this.host.clock.now();
    this.host.attemptStarted(endpoint, this.longRunning, this, this.#attempts, attempt.sentAt);
    try {
      this.host.send(endpoint, this.#route, this.#opts, attempt);
    } catch (error) {
      attempt.onResponseError(null, error as Error);
    }
  }

  /** Whether a failed or rejected attempt may be retried; if so, the retry goes now to another endpoint, with a unit
   * of retry budget (but after a failed handshake or a shutdown), before the rejection's body is read (issue 26). */
  #retry(attempt: Attempt, reason: RetryReason): boolean {
    if (this.aborted || this.finished) return false;
    // A failed handshake sent nothing and ejected its endpoint (never picked again): it costs neither
    // an attempt nor budget, so 30 wrong-name endpoints cannot fail a request while 3 good ones exist.
    if (reason !== 'tls' && this.#attempts - this.#handshakeFailures >= this.host.maxAttempts) return false;
    if (reason === 'tls') this.#handshakeFailures++;
    const nothingSent = notSent(reason, attempt.started);
    const rejectedBeforeRunning = (reason === 'throttled' && !this.eviction) || reason === 'shutdown';
    if (!nothingSent && !rejectedBeforeRunning && !this.#idempotent) return false;
    if (attempt.started && !this.#replayable) return false;
    const tried = (this.#tried ??= new Set()); // every attempt before this one came here too: each endpoint tried
    tried.add(attempt.endpoint);
    let endpoint = this.host.pick(this.longRunning, this.#probationOk(), tried);
    // A draining endpoint's rejection is its shutdown's too (an HTTP/2 429's body tells only later): no overload, no storm, so no budget, and resting endpoints may take it.
    const shutdown = reason === 'shutdown' || attempt.endpoint.state === 'draining';
    if (reason === 'throttled' && !shutdown) endpoint = throttledRetryTarget(endpoint, tried, (skip) => this.host.pick(this.longRunning, false, skip));
    const budgeted = reason !== 'tls' && !shutdown;
    this.#nowhere = !endpoint;
    if (!endpoint || (budgeted && !this.host.budget.tryAcquire())) return false;
    this.detach();
    if (reason === 'throttled' || reason === '5xx' || reason === 'shutdown') this.#fallback = attempt;
    this.host.retrying(attempt.endpoint, endpoint, reason, this.#attempts + 1, this);
    this.#send(endpoint, budgeted);
    this.#mayHedgeLater();
    return true;
  }

  /** The caller aborted: an exploration copy made for it is cancelled too. */
  override abort(reason: Error): void {
    this.copy?.cancel();
    super.abort(reason);
  }

  /** Its endpoint was taken out before it answered (`WaitingAttempts`): unsent, it moves for free; written (`sent`: silence), as a retry. */
  moveWaiting(attempt: Attempt, sent: boolean): boolean {
    if (attempt !== this.#attempt || attempt.answered || this.#rival || this.#committed || this.finished || this.aborted) return false;
    const written = attempt.started;
    if (written && (!sent || !this.#replayable || this.#attempts >= this.host.maxAttempts)) return false;
    const tried = (this.#tried ??= new Set());
    tried.add(attempt.endpoint);
    const endpoint = this.host.pick(this.longRunning, this.#probationOk(), tried);
    if (!endpoint || (written && !this.host.budget.tryAcquire())) return false;
    attempt.supersede(); // no verdict; unsent, it is aborted before a byte is written
    if (!written) this.#attempts--;
    this.host.retrying(attempt.endpoint, endpoint, 'moved', this.#attempts + 1, this);
    this.#send(endpoint, written);
    this.#mayHedgeLater();
    return true;
  }

  abortedBetweenAttempts(reason: Error): void {
    this.#fail(reason, false);
  }

  describe(): ChannelRequest {
    const origin = this.#opts.origin;
    return { method: this.#opts.method, path: this.#opts.path, origin: typeof origin === 'string' ? origin : String(origin?.origin) };
  }

  // ── called by attempts ───────────────────────────────────────────────────

  attemptStarted(_attempt: Attempt, controller: Controller, context: unknown): void {
    this.target = controller;
    if (this.#started) return;
    this.#started = true;
    this.downstream.onRequestStart?.(this, context);
  }

  /** True when the response is held back because the request went to another endpoint. */
  holdBack(attempt: Attempt, statusCode: number): boolean {
    const reason = this.#rejection(statusCode);
    return reason !== undefined && this.#retry(attempt, reason);
  }

  /** Why a response with `statusCode` is one to try elsewhere: a 429 (not an eviction's: that is its answer), a 5xx. */
  #rejection(statusCode: number): RetryReason | undefined {
    return statusCode === 429 && !this.eviction ? 'throttled' : statusCode >= 500 ? '5xx' : undefined;
  }

  /** The response kept is this attempt's: from now on it reaches the caller and is never retried. */
  commit(): void {
    this.#committed = true;
  }

  /** Whether a response may be held until complete (within `maxHeldResponse`): a short GET/HEAD whose body can be sent again. */
  get holdable(): boolean {
    return this.#idempotent && !this.longRunning && this.#replayable;
  }

  /** A held response came whole: the caller gets its head now, and its body and end after it (`handOverHeld`). */
  completedHeld(attempt: Attempt, trailers: Headers): void {
    this.#committed = true;
    if (this.finished) return;
    attempt.passHead(this.downstream, this);
    if (!attempt.holdsBody) return this.endHeld(attempt, trailers);
    handOverHeld(this, attempt, trailers, this.host.budget.shortRequests > 1);
  }

  /** The rest of a held response (see `handOverHeld`). */
  endHeld(attempt: Attempt, trailers: Headers): void {
    if (this.finished) return;
    attempt.passBody(this.downstream, this);
    this.#finish();
    this.downstream.onResponseEnd?.(this, trailers);
  }

  /** Whether a response not held back for a retry is read whole before the caller gets any of it: a rejection whose retry found nowhere
   * to go; one that may be a shutdown's (a 503 that may be the default one's, a 429 on HTTP/2), whose retry as a 5xx's or throttle's was refused. */
  inspects(statusCode: number, headers: Headers): boolean {
    if (statusCode < 429) return false; // every response comes here: one comparison for the answers
    if (this.#nowhere) return true;
    return statusCode === 429 ? !this.eviction && mayBeShutdown429(statusCode, headers) : mayBeShutdown503(statusCode, headers);
  }

  /** An inspected response was read whole, or as long as it may be: true when the request went elsewhere, false when it is the answer.
   * A retry that found nowhere to go at its headers is weighed again: an endpoint may be back by now (docs/chaos.md, schedule 484). */
  inspected(attempt: Attempt, statusCode: number, headers: Headers, body: string): boolean {
    const shutdown = statusCode === 429 ? isShutdown429(headers, body) : isShutdown503(statusCode, headers, body);
    const reason = shutdown ? 'shutdown' : this.#nowhere ? this.#rejection(statusCode) : undefined;
    return reason !== undefined && this.#retry(attempt, reason);
  }

  /** A committed 2xx response of a watch: from now on it ends at event boundaries only, if its type has them. */
  watchStarted(attempt: Attempt, contentType: string | string[] | undefined): void {
    this.#framer = framerFor(contentType);
    if (!this.#framer) return;
    this.#watching = attempt;
    this.host.watchOpened?.(attempt.endpoint, this);
  }

  attemptSettled(attempt: Attempt): void {
    this.host.waiting?.delete(attempt);
    if (this.#watching === attempt) this.host.watchClosed?.(attempt.endpoint, this);
  }

  /** Passes response data on; a watch's only up to its last complete event. */
  forward(chunk: Buffer): void {
    const framer = this.#framer;
    const data = framer ? framer.push(chunk) : chunk;
    if (data) this.downstream.onResponseData?.(this, data);
  }

  /** Ends the watch for the caller now, at the last event boundary, and drops its connection stream. */
  move(): void {
    const attempt = this.#watching;
    if (!attempt || this.finished) return;
    attempt.moved();
    this.#endAtBoundary();
    this.detach();
    attempt.abort(new Error('kube-balancer moved this watch to another endpoint'));
  }

  #endAtBoundary(): void {
    this.#framer = undefined;
    this.#finish();
    this.downstream.onResponseEnd?.(this, {});
  }

  attemptFailed(attempt: Attempt, error: Error, kind: FailureKind): void {
    if (this.finished) return;
    const rival = this.#rival;
    if (rival && kind !== 'aborted' && !this.aborted) {
      (this.#causes ??= []).push({ endpoint: attempt.endpoint.key, error });
      return this.#raceGoesOnWithout(attempt, rival);
    }
    // The connection under a watch broke: end it like a server would, so the caller re-watches.
    if (this.#watching === attempt && kind !== 'aborted' && !this.aborted) return this.#endAtBoundary();
    if (this.#committed || kind === 'aborted' || kind === 'other' || this.aborted) return this.#fail(error, false);
    (this.#causes ??= []).push({ endpoint: attempt.endpoint.key, error });
    if (this.#retry(attempt, kind)) return;
    const eligible = notSent(kind, attempt.started) || this.#idempotent;
    if (this.#fallback && eligible) return this.#fallBack(error);
    this.#fail(error, eligible);
  }

  /**
   * Every attempt after a rejection failed (a write's last sending nothing): the rejection, read whole, is the answer
   * one connection would have had (clients retry it); cut, the error is. Detached while read (`#failure`): an abort ends it.
   */
  #fallBack(error: Error): void {
    const fallback = this.#fallback!;
    if (fallback.whole === undefined) {
      this.#failure = error;
      return this.detach();
    }
    if (!fallback.whole) return this.#fail(error, true);
    this.#committed = true;
    this.#finish();
    fallback.answer(this.downstream, this);
  }

  rejectionRead(attempt: Attempt): void {
    if (attempt === this.#fallback && this.#failure && !this.finished) this.#fallBack(this.#failure);
  }

  /** An upgraded socket closed: the caller had it all along. */
  upgradeClosed(): void {
    this.#finish();
  }

  completed(trailers: Headers): void {
    // An apiserver ends a watch between events; whatever it sent is passed on unchanged.
    const tail = this.#framer?.rest();
    this.#framer = undefined;
    this.#finish();
    if (tail) this.downstream.onResponseData?.(this, tail);
    this.downstream.onResponseEnd?.(this, trailers);
  }

  /** Ends the request with an error; when retrying was allowed but failed everywhere, the error names each endpoint's cause. */
  #fail(error: Error, exhausted: boolean): void {
    if (this.finished) return;
    const reported = exhausted ? allEndpointsFailed(error, this.#causes ?? []) : error;
    this.#finish();
    if (!this.aborted) this.host.totals.failed++;
    this.downstream.onResponseError?.(this, reported);
  }

  #finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.host.hedging?.cancel(this);
    // The caller is done: a copy still measuring on its behalf may read on only briefly (Explore.ts).
    this.copy?.callerDone();
    if (this.#rival) {
      this.#rival.supersede();
      this.#attempt!.supersede();
      this.#rival = undefined;
    }
    this.host.budget.requests--;
    if (!this.longRunning) this.host.budget.shortRequests--;
  }
}
