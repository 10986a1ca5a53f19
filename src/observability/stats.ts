import type { EjectReason, EndpointInfo } from '../balancer/Endpoint.ts';
import type { Policy } from '../balancer/Picker.ts';
import type { RetryReason } from '../health/outcome.ts';

/** What `balancer.stats()` returns: plain data, safe to `JSON.stringify`, never live. */
export interface BalancerStats {
  /** Every endpoint the resolver lists now. An endpoint that leaves takes its counters with it; `totals` keep counting. */
  endpoints: EndpointInfo[];
  totals: {
    /** Caller requests the balancer took (not attempts: a retried request counts once). */
    requests: number;
    /** Caller requests not finished yet. */
    inFlight: number;
    /** Caller requests that ended in an error (not counting the caller's own aborts). */
    failed: number;
    /** Retries on another endpoint, by why the previous attempt failed. */
    retries: Record<RetryReason, number>;
    /** Ejections, by reason. */
    ejections: Record<EjectReason, number>;
  };
  budget: {
    /** Retries under way now. */
    retriesInFlight: number;
    /** Retries the budget refused since the start: the failed attempt's answer or error reached the caller. */
    refused: number;
    /** Retries that successes of the last 10 s have paid for, beyond the in-flight allowance. */
    credit: number;
  };
  picker: {
    policy: Policy;
    /** Too few endpoints are ready: requests go to every endpoint that is not removed. */
    panic: boolean;
  };
  resolver: {
    /**
     * The target: its URI; for a chain, its URIs separated by spaces (`custom` for a resolver
     * object in it); `list` for an array of endpoints, `custom` for a resolver object.
     */
    target: string;
    /** Endpoint sets received (the first included). */
    updates: number;
    /** When the last set arrived (epoch ms), `null` before the first. */
    lastUpdateAt: number | null;
    /** Resolution failures reported (the previous set stayed in use each time). */
    errors: number;
    lastError: { message: string; code?: string; at: number } | null;
    warnings: number;
    lastWarning: { message: string; at: number } | null;
    /** DNS queries sent, by result: `success` or a failure such as `nxdomain`, `servfail`, `timeout`. */
    dnsQueries: Record<string, number>;
  };
}

// Every reason of the unions, so counting one never starts from undefined (NaN); `satisfies` makes a
// reason added there a compile error here until it is added.
const noRetries = { connect: 0, tls: 0, refused: 0, reset: 0, unresponsive: 0, timeout: 0, throttled: 0, shutdown: 0, '5xx': 0, hedge: 0, moved: 0 } satisfies Record<RetryReason, 0>;
const noEjections = { connect: 0, tls: 0, failures: 0, throttled: 0, unreachable: 0, probe: 0 } satisfies Record<EjectReason, 0>;

/** A custom resolver could report any string as a query result; a metric label must stay a small set. */
const MAX_DNS_RESULTS = 32;

/**
 * The balancer's monotonic counters that outlive endpoints. Updated with plain increments (the
 * per-request ones by `BalancedRequest`), read by `stats()`.
 */
export class Totals {
  requests = 0;
  failed = 0;
  readonly retries: Record<RetryReason, number> = { ...noRetries };
  readonly ejections: Record<EjectReason, number> = { ...noEjections };
  readonly resolver: Omit<BalancerStats['resolver'], 'dnsQueries'>;
  /** A Map, not an object: a resolver's result strings are not trusted to be harmless keys (`__proto__`). */
  readonly #dnsQueries = new Map<string, number>();

  constructor(target: string) {
    this.resolver = { target, updates: 0, lastUpdateAt: null, errors: 0, lastError: null, warnings: 0, lastWarning: null };
  }

  resolverUpdate(): void {
    this.resolver.updates++;
    this.resolver.lastUpdateAt = Date.now();
  }

  resolverError(error: Error): void {
    const code = (error as { code?: unknown }).code;
    this.resolver.errors++;
    this.resolver.lastError = { message: error.message, ...(typeof code === 'string' ? { code } : {}), at: Date.now() };
  }

  resolverWarning(message: string): void {
    this.resolver.warnings++;
    this.resolver.lastWarning = { message, at: Date.now() };
  }

  dnsQuery(result: string): void {
    const queries = this.#dnsQueries;
    let key = String(result).toLowerCase();
    if (!queries.has(key) && queries.size >= MAX_DNS_RESULTS) key = 'other';
    queries.set(key, (queries.get(key) ?? 0) + 1);
  }

  snapshot(): { totals: Omit<BalancerStats['totals'], 'inFlight'>; resolver: BalancerStats['resolver'] } {
    const r = this.resolver;
    return {
      totals: { requests: this.requests, failed: this.failed, retries: { ...this.retries }, ejections: { ...this.ejections } },
      resolver: {
        ...r,
        lastError: r.lastError && { ...r.lastError },
        lastWarning: r.lastWarning && { ...r.lastWarning },
        dnsQueries: Object.fromEntries(this.#dnsQueries),
      },
    };
  }
}
