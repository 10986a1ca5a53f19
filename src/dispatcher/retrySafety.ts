import type { Endpoint } from '../balancer/Endpoint.ts';
import type { FailureKind, RetryReason } from '../health/outcome.ts';

// The rules of the design's retry-safety table that depend on the request and the failure alone;
// `BalancedRequest` applies them per attempt.

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

/**
 * Whether a throttled request may go to `endpoint`: not when it is resting (throttled or ejected) or
 * draining, which panic mode still offers. When every endpoint is throttled the 429 is the answer,
 * with its Retry-After: back-pressure for the caller, not a round of retries on servers that are
 * shedding load.
 */
export function takesThrottledRetry(endpoint: Endpoint): boolean {
  return endpoint.state !== 'ejected' && endpoint.state !== 'draining';
}
