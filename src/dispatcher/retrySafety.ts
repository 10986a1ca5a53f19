import diagnostics_channel from 'node:diagnostics_channel';
import { outForRefusals, type Endpoint } from '../balancer/Endpoint.ts';
import type { FailureKind, RetryReason } from '../health/outcome.ts';

// The design's retry-safety table; the rules that depend on the request and the failure alone are
// here, and `BalancedRequest` applies them per attempt. A retry is allowed after:
// - nothing sent (the attempt never handed the request to a connection, whatever the errno; a
//   stream an HTTP/2 GOAWAY or REFUSED_STREAM says was not processed; one undici put back in its
//   queue and then failed with its connector's error): any method;
// - 429 from API Priority and Fairness or a shutting-down apiserver, and the default shutdown's 503
//   "apiserver is shutting down" (`isShutdown503`, told by its body, read for at most 1 s first when
//   the method may not be repeated): any method (the apiserver rejected the request before running
//   it) — except the Eviction API, whose 429 is an answer; a throttled request only to an endpoint
//   that is not resting or draining itself, unless its 429 came from a draining one (a shutdown's);
// - reset after the request was written, 5xx, request timeout: GET and HEAD only; for a short GET
//   or HEAD that includes a connection broken mid-response, as its response is held back until
//   complete (up to `maxHeldResponse` bytes).

/** GET and HEAD may run twice: after a reset once written, a 5xx or a request timeout they are retried. */
export function isIdempotent(method: string): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'get' || method === 'head';
}

const EVICTION = /\/pods\/[^/?]+\/eviction(?:\?|$)/;

/** The Eviction API: its 429 is an answer (a PodDisruptionBudget says no), not a throttle to retry. */
export function isEviction(method: string, path: string): boolean {
  return (method === 'POST' || method === 'post') && EVICTION.test(path);
}

/**
 * Whether the apiserver provably never ran the request: the attempt's own transport state says no
 * byte of it was handed to a connection (`started`: undici's `onRequestStart`, called right before
 * it writes the request), or HTTP/2 said the stream was not processed (GOAWAY, REFUSED_STREAM). An
 * errno never proves it: `read ETIMEDOUT` on an established connection (keepalive failed) comes
 * after the request was written, and it ran.
 */
export function notSent(kind: FailureKind | RetryReason, started: boolean): boolean {
  return !started || kind === 'refused';
}

/** The errors undici's connector failed connection attempts with (held weakly: they go with their requests). */
const connectErrors = new WeakSet<object>();
let watchingConnects = false;

/**
 * Starts collecting the errors undici's connector fails with, from its `undici:client:connectError`
 * channel; once per process. Called by the first balancer made, not at import, so that undici's own
 * `NODE_DEBUG=undici` logging, which subscribes only when nothing else has, keeps working.
 */
export function watchConnectFailures(): void {
  if (watchingConnects) return;
  watchingConnects = true;
  diagnostics_channel.subscribe('undici:client:connectError', (message) => {
    const error = (message as { error?: unknown }).error;
    if (typeof error === 'object' && error !== null) connectErrors.add(error);
  });
}

/**
 * Whether a request failed with the error of a connection that never opened. undici fails only the
 * requests waiting in its queue with it, not one on a connection: so even one it had started was put
 * back unsent (a stream an HTTP/2 GOAWAY or REFUSED_STREAM left unprocessed, a GOAWAY'd session that
 * would not open it), and nothing of it ran. The error's identity says so, not its errno.
 */
export function failedToConnect(error: unknown): boolean {
  return typeof error === 'object' && error !== null && connectErrors.has(error);
}

/**
 * Whether a throttled request may go to `endpoint`: not when it is resting (throttled or ejected) or
 * draining, which panic mode still offers. When every endpoint is throttled the 429 is the answer,
 * with its Retry-After: back-pressure for the caller, not a round of retries on servers that are
 * shedding load. Except one out for refused connections (the picker's reserve, `outForRefusals`):
 * if it refuses again the 429 is still the answer (the request's fallback).
 */
function takesThrottledRetry(endpoint: Endpoint): boolean {
  return outForRefusals(endpoint) || (endpoint.state !== 'ejected' && endpoint.state !== 'draining');
}

/**
 * Where a throttled request's retry goes: `first` (the picker's choice), or when that one takes none
 * (panic mode, with under half the endpoints ready, offers draining and resting ones too), the next
 * the picker offers that does. Refusing the retry there sent the 429 to the caller while another
 * endpoint was ready (docs/chaos.md, after the fixes: a rolling restart met by APF 429s).
 */
export function throttledRetryTarget(first: Endpoint | undefined, tried: ReadonlySet<Endpoint>, pick: (skip: ReadonlySet<Endpoint>) => Endpoint | undefined): Endpoint | undefined {
  let endpoint = first;
  let skip: Set<Endpoint> | undefined;
  while (endpoint && !takesThrottledRetry(endpoint)) {
    (skip ??= new Set(tried)).add(endpoint);
    endpoint = pick(skip);
  }
  return endpoint;
}
