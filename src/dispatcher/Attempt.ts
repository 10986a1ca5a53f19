import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { Endpoint } from '../balancer/Endpoint.ts';
import type { ClockTimer } from '../clock.ts';
import { classifyError } from '../health/classifyError.ts';
import { keepRejectionBody, REJECTION_BODY_BYTES } from '../health/rejections.ts';
import type { AttemptOutcome, FailureKind } from '../health/outcome.ts';
import { BodyTimer, type Reader } from './BodyTimer.ts';
import { fitsHold, HOLD_MS, REJECTION_READ_BYTES, REJECTION_READ_MS } from './HoldBack.ts';
import type { RequestHost } from './RequestHost.ts';
import { failedToConnect } from './retrySafety.ts';

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;
type Headers = Parameters<NonNullable<Handler['onResponseStart']>>[2];

/**
 * What an attempt reports to, and reads of, the request it belongs to (a `BalancedRequest`), which
 * is also the one controller the caller's handler sees (a `ProxyController`).
 */
export interface AttemptOwner extends Controller, Reader {
  readonly host: RequestHost;
  readonly downstream: Handler;
  readonly longRunning: boolean;
  readonly watch: boolean;
  readonly eviction: boolean;
  /** Its latency feeds the endpoint's load estimate (see `isPointRead`). */
  readonly timed: boolean;
  /** Any other short request's class, whose latency feeds the endpoint's `relative` estimate. */
  readonly loadClass: string | undefined;
  /** Milliseconds the response body may stay silent; 0: none (see BodyTimer). */
  readonly bodyTimeout: number;
  readonly finished: boolean;
  attemptStarted(attempt: Attempt, controller: Controller, context: unknown): void;
  /** Its response headers came, at clock time `now`; false when it lost a race all the same (it is then only read for its verdict). */
  responded(attempt: Attempt, now: number, statusCode: number): boolean;
  /** True when its rejection is held back: the request went to another endpoint, now. */
  holdBack(attempt: Attempt, statusCode: number): boolean;
  inspects(statusCode: number, headers: Headers): boolean;
  inspected(attempt: Attempt, statusCode: number, headers: Headers, body: string): boolean;
  commit(): void;
  /** Whether its response may be held until complete (a short GET/HEAD whose body can be sent again). */
  readonly holdable: boolean;
  /** Its held response is complete: the caller gets it from `attempt.passHead`/`passBody`, now or soon. */
  completedHeld(attempt: Attempt, trailers: Headers): void;
  watchStarted(attempt: Attempt, contentType: string | string[] | undefined): void;
  attemptSettled(attempt: Attempt): void;
  forward(chunk: Buffer): void;
  attemptFailed(attempt: Attempt, error: Error, kind: FailureKind): void;
  /** A held-back rejection was read to its end, or cut: see `whole`. */
  rejectionRead(attempt: Attempt): void;
  upgradeClosed(): void;
  completed(trailers: Headers): void;
}

/** An attempt's headers until it has a response: one object shared by all, read and never written. */
const NO_HEADERS: Headers = Object.freeze({});

/**
 * One attempt on one endpoint: forwards to the caller unless its response is held back for a retry.
 * It is its own body timer (the list entry `BodyTimers` keeps while its body runs) and holds a short
 * response itself until complete: one object per attempt instead of three.
 */
export class Attempt extends BodyTimer implements Handler {
  readonly endpoint: Endpoint;
  readonly #request: AttemptOwner;
  /** Retry attempts hold a unit of the retry budget until they end, or until a rejection's headers come. */
  #holdsBudget: boolean;
  #controller: Controller | undefined;
  #moved = false;
  /** Whether undici handed the request to a connection (it writes it right after): see `notSent`. */
  started = false;
  /**
   * Clock time it was sent, read once: the hedge delay and a timed request's latency (load-aware
   * picking) are both measured from it. And whether its response headers came.
   */
  sentAt = 0;
  answered = false;
  /** A rejection whose retry went (or that lost a race): its body is read for the verdict alone, within a bound. */
  #heldBack = false;
  /** Ends the read of a held-back rejection's body, or of an inspected one (see `REJECTION_READ_MS`). */
  #readBound: ClockTimer | undefined;
  /**
   * Whether the response is being held until complete (a short GET or HEAD, up to `maxHeldResponse`
   * bytes): while it is the caller has seen nothing, so a connection that breaks before the end can
   * still be retried on another endpoint; once released, it is the caller's. Its chunks are kept as
   * undici hands them over (each a view of a buffer read for it alone, an HTTP/1.1 socket read or
   * an HTTP/2 DATA frame, never rewritten): holding costs no copy. Most are one chunk.
   */
  #holding = false;
  #heldFirst: Buffer | undefined;
  #heldRest: Buffer[] | undefined;
  #heldBytes = 0;
  #statusMessage: string | undefined;
  /** A response read whole before the request decides whether it goes elsewhere (`BalancedRequest.inspects`). */
  #inspected: Inspected | undefined;
  #statusCode = 0;
  #headers: Headers = NO_HEADERS;
  #body = '';
  #rejectionBytes = 0;
  /**
   * A rejection (429, 5xx) read to its end with all of its body kept: it can still be the caller's
   * answer when the retries it led to fail (`BalancedRequest`'s fallback). Undefined while it is read.
   */
  whole: boolean | undefined;
  #settled = false;

  constructor(request: AttemptOwner, endpoint: Endpoint, holdsBudget: boolean) {
    super();
    this.#request = request;
    this.endpoint = endpoint;
    this.#holdsBudget = holdsBudget;
  }

  onRequestStart(controller: Controller, context: unknown): void {
    this.#controller = controller;
    if (this.#moved) return controller.abort(superseded());
    this.started = true;
    this.#request.attemptStarted(this, controller, context);
  }

  get controller(): Controller | undefined {
    return this.#controller;
  }

  /** The caller's side of the response, whose pause stops the body timer (see BodyTimer). */
  get reader(): Reader {
    return this.#request;
  }

  /** Another attempt of the request answered first (or it ended): this one ends with no verdict. */
  supersede(): void {
    if (this.#settled) return;
    this.moved();
    this.abort(superseded());
  }

  /** The watch is being moved: it ends without a verdict on the endpoint's health. */
  moved(): void {
    this.#moved = true;
    this.stop();
    this.#unbound();
    this.#settle({ type: 'aborted' });
  }

  abort(reason: Error): void {
    this.#controller?.abort(reason);
  }

  onRequestUpgrade(_controller: Controller, statusCode: number, headers: Headers, socket: Duplex): void {
    const request = this.#request;
    request.responded(this, request.host.clock.now(), statusCode);
    this.#statusCode = statusCode;
    request.commit();
    // An upgraded socket (exec, attach, port-forward) is a stream until it closes.
    socket.once('close', () => {
      this.#settle({ type: 'response', statusCode, headers, body: '', eviction: false });
      request.upgradeClosed();
    });
    request.downstream.onRequestUpgrade?.(request, statusCode, headers, socket);
  }

  onResponseStart(_controller: Controller, statusCode: number, headers: Headers, statusMessage?: string): void {
    const request = this.#request;
    if (request.finished || this.#moved) return;
    if (statusCode >= 200) {
      // One clock read for the endpoint's progress clock, the hedge's sample and the body timer's start: the same moment.
      const now = (this.endpoint.lastAnswerAt = request.host.clock.now());
      const won = request.responded(this, now, statusCode);
      this.#statusCode = statusCode;
      this.#headers = headers;
      this.#statusMessage = statusMessage;
      if (request.bodyTimeout > 0) request.host.bodyTimers.start(this, request.bodyTimeout, now);
      // A rejection that lost a race to an attempt still waiting: read for its verdict, then dropped.
      if (!won) return this.#holdBack();
      // Only a 429 or a 5xx is ever held back for a retry, which goes now: its status says it may,
      // and a body that trickles must not hold it (issue 26), nor the retry budget it took.
      if (statusCode >= 429) this.#releaseBudget();
      if (statusCode >= 429 && request.holdBack(this, statusCode)) return this.#holdBack();
      if (request.inspects(statusCode, headers)) {
        this.#inspected = { statusCode, headers, statusMessage, chunks: [], bytes: 0 };
        return this.#bound();
      }
      if (request.holdable && fitsHold(headers['content-length'], request.host.maxHeldResponse)) {
        this.#holding = true;
        return this.#bound(HOLD_MS);
      }
      request.commit();
      if (request.watch && statusCode < 300) request.watchStarted(this, headers['content-type']);
    }
    request.downstream.onResponseStart?.(request, statusCode, headers, statusMessage);
  }

  onResponseData(_controller: Controller, chunk: Buffer): void {
    // Every piece of every body (a watch's events too) moves the endpoint's progress clock.
    this.touch((this.endpoint.lastAnswerAt = this.#request.host.clock.now()));
    // Kept to read what a rejection says (a shutdown, a lagging watch cache), whether or not it is retried.
    if (this.#statusCode >= 429) {
      this.#body = keepRejectionBody(this.#body, this.#statusCode, chunk);
      this.#rejectionBytes += chunk.length;
    }
    if (this.#moved) return;
    if (this.#heldBack) {
      if ((this.#heldBytes += chunk.length) > REJECTION_READ_BYTES) this.abort(readEnough());
      return;
    }
    if (this.#holding) {
      if (this.#heldFirst === undefined) this.#heldFirst = chunk;
      else (this.#heldRest ??= []).push(chunk);
      this.#heldBytes += chunk.length;
      if (this.#heldBytes <= this.#request.host.maxHeldResponse) return;
      // Too large to hold: it streams from here on, and is no longer retried.
      return this.#releaseHeld();
    }
    const inspected = this.#inspected;
    if (inspected) {
      inspected.chunks.push(Buffer.from(chunk));
      inspected.bytes += chunk.length;
      // Larger than any rejection: it is an answer, and streams on to the caller from here.
      if (inspected.bytes > REJECTION_BODY_BYTES) this.#release();
      return;
    }
    if (!this.#request.finished) this.#request.forward(chunk);
  }

  onResponseEnd(_controller: Controller, trailers: Headers): void {
    const request = this.#request;
    this.stop();
    this.#unbound();
    if (this.#moved) return;
    this.#settle(this.#responseOutcome());
    if (this.#statusCode >= 429) this.whole = this.#rejectionBytes <= REJECTION_BODY_BYTES;
    // Its retry went at its headers, or it lost a race: it was read for its verdict alone.
    if (this.#heldBack) return request.rejectionRead(this);
    // A shutdown's 503: the request went elsewhere.
    if (this.#inspected && request.inspected(this, this.#statusCode, this.#headers, this.#body)) return;
    if (this.#holding) {
      this.#holding = false;
      return request.completedHeld(this, trailers);
    }
    if (this.#inspected) this.#release();
    if (request.finished) return;
    request.completed(trailers);
  }

  onResponseError(_controller: Controller | null, error: Error): void {
    this.stop();
    this.#unbound();
    if (this.#moved) return;
    // An inspected response that broke is an attempt that failed: what it said was not all said.
    this.#inspected = undefined;
    // The held-back response broke while being read (or was read long enough); it was rejected anyway.
    if (this.#heldBack) {
      this.whole = false;
      this.#settle(this.#responseOutcome());
      return this.#request.rejectionRead(this);
    }
    // A response still held broke before its end: the caller saw none of it, so it may be retried.
    this.#holding = false;
    this.#heldFirst = this.#heldRest = undefined;
    const kind = this.#request.aborted ? 'aborted' : classifyError(error);
    // Started, then put back in undici's queue unsent, then its new connection failed: nothing ran.
    if (this.started && failedToConnect(error)) this.started = false;
    this.#settle(kind === 'aborted' ? { type: 'aborted' } : { type: 'error', kind, error });
    this.#request.attemptFailed(this, error, kind);
  }

  onBodySent(chunk: Buffer): void {
    this.#request.downstream.onBodySent?.(chunk);
  }

  onRequestSent(): void {
    this.#request.downstream.onRequestSent?.();
  }

  onResponseStarted(): void {
    this.#request.downstream.onResponseStarted?.();
  }

  /** Hands a held response's head to `downstream`. */
  passHead(downstream: Handler, controller: Controller): void {
    downstream.onResponseStart?.(controller, this.#statusCode, this.#headers, this.#statusMessage);
  }

  /** Hands every held chunk to `downstream` (unless it aborts meanwhile), and lets go of them. */
  passBody(downstream: Handler, controller: Controller): void {
    const first = this.#heldFirst;
    const rest = this.#heldRest;
    this.#heldFirst = this.#heldRest = undefined;
    if (first === undefined || controller.aborted) return;
    downstream.onResponseData?.(controller, first);
    if (rest === undefined) return;
    for (const chunk of rest) {
      if (controller.aborted) return;
      downstream.onResponseData?.(controller, chunk);
    }
  }

  /** Hands this rejection, read `whole`, to `downstream` as the answer: head, body, end. */
  answer(downstream: Handler, controller: Controller): void {
    this.passHead(downstream, controller);
    if (this.#body && !controller.aborted) downstream.onResponseData?.(controller, Buffer.from(this.#body, 'latin1'));
    if (!controller.aborted) downstream.onResponseEnd?.(controller, {});
  }

  /** Whether a held response has body chunks still to pass on. */
  get holdsBody(): boolean {
    return this.#heldFirst !== undefined;
  }

  /** Hands a held response over as it is (head, then what was held); its rest streams on and it is no longer retried. */
  #releaseHeld(): void {
    this.#holding = false;
    this.#unbound();
    const request = this.#request;
    request.commit();
    if (request.finished) return;
    this.passHead(request.downstream, request);
    this.passBody(request.downstream, request);
  }

  /** Passes an inspected response on to the caller as it came: its start, then what was read of its body. */
  #release(): void {
    const inspected = this.#inspected!;
    const request = this.#request;
    this.#inspected = undefined;
    this.#unbound();
    request.commit();
    if (request.finished) return;
    request.downstream.onResponseStart?.(request, inspected.statusCode, inspected.headers, inspected.statusMessage);
    for (const chunk of inspected.chunks) if (!request.finished) request.forward(chunk);
  }

  /**
   * Its response is not the caller's: its body is read for the verdict (what the rejection says)
   * within a bound. Its unit of retry budget goes back now: the apiserver has answered, and a
   * trickling body held the unit for the whole read, so storms refused the retries that followed.
   */
  #holdBack(): void {
    this.#releaseBudget();
    this.#heldBack = true;
    this.#heldBytes = 0;
    this.#bound();
  }

  /**
   * A rejection's body is read for what it says, or an inspected one to decide, within
   * `REJECTION_READ_MS`: then a held-back one ends with what was read, and an inspected one is
   * dropped if the request goes elsewhere after all, else the caller's as it is (its rest streams
   * on). A held response is held within `HOLD_MS`, then it is the caller's as it is too. One clock
   * timer (the balancer's, so tests can fake it) per response.
   */
  #bound(ms = REJECTION_READ_MS): void {
    this.#readBound = this.#request.host.clock.setTimeout(() => {
      this.#readBound = undefined;
      if (this.#inspected) this.#inspectedLongEnough();
      else if (this.#heldBack) this.abort(readEnough());
      else if (this.#holding) this.#releaseHeld();
    }, ms);
  }

  /** Read as long as it may be: it goes to the caller now, or, if the request went elsewhere after all, it is dropped as a held-back one. */
  #inspectedLongEnough(): void {
    if (!this.#request.inspected(this, this.#statusCode, this.#headers, this.#body)) return this.#release();
    this.#inspected = undefined;
    this.#heldBack = true;
    this.abort(readEnough());
  }

  #unbound(): void {
    if (this.#readBound === undefined) return;
    this.#request.host.clock.clearTimeout(this.#readBound);
    this.#readBound = undefined;
  }

  #releaseBudget(): void {
    if (!this.#holdsBudget) return;
    this.#holdsBudget = false;
    this.#request.host.budget.release();
  }

  #responseOutcome(): AttemptOutcome {
    return { type: 'response', statusCode: this.#statusCode, headers: this.#headers, body: this.#body, eviction: this.#request.eviction };
  }

  #settle(outcome: AttemptOutcome): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#releaseBudget();
    const request = this.#request;
    const loadClass = request.loadClass;
    request.host.attemptEnded(this.endpoint, request.longRunning, outcome, request.timed || loadClass !== undefined ? this.sentAt : NaN, loadClass);
    this.#request.attemptSettled(this);
  }
}

/**
 * The reason a losing attempt is aborted with. Informational (undici's `UND_ERR_INFO`): undici's
 * client fails every request still queued on it with an abort's reason when it counts none running
 * (`onError` in undici's dispatcher/client.js), and no other request is to fail for this one.
 */
function superseded(): Error {
  return Object.assign(new Error('kube-balancer: another attempt answered first'), { code: 'UND_ERR_INFO' });
}

/** A held-back rejection's body was read long enough; informational, like `superseded`. */
function readEnough(): Error {
  return Object.assign(new Error("kube-balancer: a rejected response's body was read long enough"), { code: 'UND_ERR_INFO' });
}

interface Inspected {
  statusCode: number;
  headers: Headers;
  statusMessage: string | undefined;
  chunks: Buffer[];
  bytes: number;
}
