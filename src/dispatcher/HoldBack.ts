/**
 * How long, and how much of, a rejected response's body is read when the caller will not get it
 * (a 429 or 5xx whose retry went, one that lost a race): for what it says (a shutdown, a lagging
 * watch cache) and to keep the connection; then it is dropped. The same time bounds the read of a
 * write's 503 that may be the shutdown's (`BalancedRequest.inspects`), after which the caller gets it
 * as it is. A body that trickles must hold neither a retry nor retry budget (issue 26).
 */
export const REJECTION_READ_MS = 1000;
export const REJECTION_READ_BYTES = 64 * 1024;

/**
 * How long a short response is held until complete (`maxHeldResponse`) before the caller gets it as
 * it is, headers and what was held, the rest streaming on and no longer retried: a body that trickles
 * or never ends must not keep even the status from the caller, which one connection would give it.
 * One second, as long as a rejection's read (`REJECTION_READ_MS`): a whole short answer takes far
 * less on a healthy apiserver, and a retry is worth less to the caller than its status by then.
 */
export const HOLD_MS = 1000;

/** Whether a response of this `Content-Length` (if it says) can be held within `limit` bytes. */
export function fitsHold(contentLength: string | string[] | undefined, limit: number): boolean {
  if (limit <= 0) return false;
  const value = Array.isArray(contentLength) ? contentLength[0] : contentLength;
  if (value === undefined) return true;
  const length = Number(value);
  return !(length > limit);
}

type Trailers = Record<string, string | string[] | undefined>;

/** What takes the rest of a held response: its request (`BalancedRequest.endHeld`). */
export interface HeldReceiver<A> {
  endHeld(attempt: A, trailers: Trailers): void;
}

/**
 * The body and end of a held response whose head the caller just got. While other short requests
 * are in flight (`busy`) they follow from a `setImmediate`, as they would arrive from an undici
 * Pool: the caller is reading its body by then, so the chunk goes straight to its stream instead
 * of being buffered (and, it seems, the requests the callers send next go out together, once the
 * event loop has read all that came in). Measured in one process against the synchronous hand-over
 * (bench/dispatch.ts's set-up, 150 interleaved rounds): 7-9 % less client CPU per request at
 * concurrency 64. A lone request would pay an event-loop turn for that (3-5 % more at concurrency
 * 1), and given everything at once its body was buffered by the caller's stream and read back
 * (two more `endReadable` ticks and an `emitReadable`): its body follows from a microtask's
 * `nextTick`, after the caller's continuation (which starts reading) and the stream's `resume`
 * tick, so the chunk flows as a Pool's does — 2-3 % less client CPU at concurrency 1.
 */
export function handOverHeld<A>(request: HeldReceiver<A>, attempt: A, trailers: Trailers, busy: boolean): void {
  if (busy) setImmediate(endHeld, request, attempt, trailers);
  // A promise's reaction, not queueMicrotask: that makes an AsyncResource, a bound function and
  // an async scope per call, for the same place in the microtask queue.
  else void RESOLVED.then(() => process.nextTick(endHeld, request, attempt, trailers));
}

const RESOLVED = Promise.resolve();

function endHeld<A>(request: HeldReceiver<A>, attempt: A, trailers: Trailers): void {
  request.endHeld(attempt, trailers);
}
