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

/** Failures that prove the apiserver never ran the request. */
export function notSent(kind: FailureKind | RetryReason, started: boolean): boolean {
  return kind === 'connect' || kind === 'tls' || kind === 'refused' || (kind === 'reset' && !started);
}
