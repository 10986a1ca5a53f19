/**
 * How long, and how much of, a rejected response's body is read when the caller will not get it
 * (a 429 or 5xx whose retry went, one that lost a race): for what it says (a shutdown, a lagging
 * watch cache) and to keep the connection; then it is dropped. The same time bounds the read of a
 * write's 503 that may be the shutdown's (`BalancedRequest.inspects`), after which the caller gets it
 * as it is. A body that trickles must hold neither a retry nor retry budget (issue 26).
 */
export const REJECTION_READ_MS = 1000;
export const REJECTION_READ_BYTES = 64 * 1024;

/** Whether a response of this `Content-Length` (if it says) can be held within `limit` bytes. */
export function fitsHold(contentLength: string | string[] | undefined, limit: number): boolean {
  if (limit <= 0) return false;
  const value = Array.isArray(contentLength) ? contentLength[0] : contentLength;
  if (value === undefined) return true;
  const length = Number(value);
  return !(length > limit);
}
