// ADAPTER — delete once `arch-landed` is merged: the arch refactor (issue 11) moves the outcome
// judge out of the Balancer's private `#judge` into src/health/, and the simulation should call
// that instead. Until then this is a copy of `Balancer.#judge` (src/dispatcher/Balancer.ts) minus
// what cannot happen in virtual time: the event-loop lag check (a simulated process never stalls)
// and connect timeouts (simulated connections are refused or made, never left hanging).
import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import type { AttemptOutcome } from '../../src/dispatcher/BalancedRequest.ts';
import type { RetryBudget } from '../../src/dispatcher/RetryBudget.ts';
import type { HealthTracker } from '../../src/health/HealthTracker.ts';
import { retryAfterMs } from '../../src/health/retryAfter.ts';
import type { Resolver } from '../../src/resolver/Resolver.ts';

export function judge(endpoint: Endpoint, outcome: AttemptOutcome, health: HealthTracker, budget: RetryBudget, resolver: Resolver, now: number): void {
  if (outcome.type === 'aborted') return health.releaseProbation(endpoint);
  if (outcome.type === 'error') {
    if (outcome.kind === 'other' || outcome.kind === 'refused') return health.releaseProbation(endpoint);
    endpoint.failures++;
    if (outcome.kind === 'connect' || outcome.kind === 'tls') {
      health.connectFailure(endpoint, outcome.kind);
      resolver.refresh?.();
    } else {
      health.serverError(endpoint);
    }
    return;
  }
  const { statusCode, headers } = outcome;
  endpoint.lastAnswerAt = now;
  if (statusCode >= 500) {
    endpoint.failures++;
    health.serverError(endpoint);
  } else if (statusCode === 429 && !outcome.eviction) {
    // Virtual time is not wall time: a Retry-After in delta-seconds does not read the date.
    const wait = retryAfterMs(headers['retry-after'], 0);
    if (isShutdownResponse(headers, outcome.body)) health.shuttingDown(endpoint, wait);
    else health.throttled(endpoint, wait);
  } else {
    budget.earn(now);
    health.success(endpoint);
  }
}

/** Copy of Balancer.ts's `isShutdownResponse`. */
function isShutdownResponse(headers: Record<string, string | string[] | undefined>, body: string): boolean {
  if (String(headers.connection ?? '').toLowerCase().includes('close')) return true;
  return body.includes('shutting down');
}
