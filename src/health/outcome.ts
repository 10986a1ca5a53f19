import type { Dispatcher } from 'undici';

type Headers = Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>[2];

/**
 * What a transport error says about the endpoint and about the request:
 * - `connect`: no connection was made (refused, unreachable, connect timeout): the endpoint is down
 *   and nothing was sent.
 * - `tls`: the handshake failed (certificate, protocol): nothing was sent.
 * - `refused`: the server refused the stream before processing it (HTTP/2 GOAWAY past its last
 *   stream id, REFUSED_STREAM) once undici's own single replay was spent: nothing ran.
 * - `reset`: an established connection or stream broke: the request may have been written.
 * - `unresponsive`: undici reset an HTTP/2 connection whose PING went unanswered (a black hole):
 *   like `reset` for the request, but the endpoint is plainly not answering.
 * - `timeout`: no response headers within the request timeout.
 * - `aborted`: the caller gave up; says nothing about the endpoint.
 * - `other`: anything else (bad options, protocol errors from the caller's side): never retried.
 */
export type FailureKind = 'connect' | 'tls' | 'refused' | 'reset' | 'unresponsive' | 'timeout' | 'aborted' | 'other';

/** How one attempt on one endpoint ended, as health sees it. */
export type AttemptOutcome =
  | { type: 'response'; statusCode: number; headers: Headers; body: string; eviction: boolean }
  | { type: 'error'; kind: FailureKind; error: Error }
  | { type: 'aborted' };

/**
 * Why a request was tried again on another endpoint (a failure kind, or the status that allowed
 * it); `moved`: health took its endpoint out while it waited there, unsent.
 */
export type RetryReason = 'connect' | 'tls' | 'refused' | 'reset' | 'unresponsive' | 'timeout' | 'throttled' | 'shutdown' | '5xx' | 'hedge' | 'moved';

/** An answer the apiserver computed: its time measures how loaded the apiserver is (a 429 or 5xx does not). */
export function measuresServing(outcome: AttemptOutcome): boolean {
  return outcome.type === 'response' && outcome.statusCode < 500 && outcome.statusCode !== 429;
}
