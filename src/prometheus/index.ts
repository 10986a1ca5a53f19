// `kube-balancer/prometheus`: the only module that loads prom-client, so the main entry point works
// without it (it is an optional peer dependency).
import { Counter, Gauge, type Registry } from 'prom-client';
import type { EndpointState } from '../balancer/Endpoint.ts';
import type { BalancerStats } from '../observability/stats.ts';

export interface MetricsOptions {
  /** Prefix of every metric name; give each balancer its own to register several on one registry. Default `kube_balancer_`. */
  prefix?: string;
}

/** Reads one metric's series off a snapshot. */
type Read<L extends string> = (stats: BalancerStats, set: (labels: Record<L, string>, value: number) => void) => void;

// `satisfies`: a state added to the union is a compile error here until it gets its series.
const states = Object.keys({ ready: 0, ejected: 0, draining: 0, probing: 0 } satisfies Record<EndpointState, 0>) as EndpointState[];

/**
 * Registers the balancer's metrics on a prom-client registry. Every value is read from
 * `balancer.stats()` when the registry is scraped (one snapshot per scrape), so requests pay
 * nothing for metrics. Counters are the balancer's own monotonic totals; per-endpoint series end
 * when the resolver drops the endpoint. Returns a function that removes them from the registry.
 */
export function registerMetrics(balancer: { stats(): BalancerStats }, registry: Registry, options: MetricsOptions = {}): () => void {
  const prefix = options.prefix ?? 'kube_balancer_';
  let snapshot: BalancerStats | undefined;
  // The registry collects every metric in one synchronous pass: they share one snapshot.
  const stats = (): BalancerStats => {
    if (!snapshot) {
      snapshot = balancer.stats();
      queueMicrotask(() => (snapshot = undefined));
    }
    return snapshot;
  };
  const registers = [registry];
  const names: string[] = [];
  // After reset(), one increment sets a series to the value: the only way to set a counter, and as good as set() for a gauge.
  const metric = <L extends string>(Kind: typeof Counter<L> | typeof Gauge<L>, name: string, help: string, labelNames: readonly L[], read: Read<L>): void => {
    names.push(prefix + name);
    new Kind({
      name: prefix + name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        read(stats(), (labels, value) => this.inc(labels, value));
      },
    });
  };

  // Help texts say what an operator reads off the series; README "Prometheus" has the same list.
  metric(Counter, 'requests_total', 'Attempts sent to each apiserver endpoint that ended, by HTTP status class, error (no response) or aborted.', ['endpoint', 'status_class'], (s, set) => {
    for (const e of s.endpoints) for (const [statusClass, n] of Object.entries(e.responses)) set({ endpoint: e.key, status_class: statusClass }, n);
  });
  metric(Gauge, 'requests_in_flight', 'Attempts under way at each endpoint.', ['endpoint'], (s, set) => {
    for (const e of s.endpoints) set({ endpoint: e.key }, e.inFlight);
  });
  metric(Gauge, 'open_streams', 'Open long-running requests (watches, follow logs, exec/attach/port-forward) at each endpoint.', ['endpoint'], (s, set) => {
    for (const e of s.endpoints) set({ endpoint: e.key }, e.streams);
  });
  metric(Gauge, 'endpoint_state', 'Health state of each endpoint: 1 for its current state, 0 for the others.', ['endpoint', 'state'], (s, set) => {
    for (const e of s.endpoints) for (const state of states) set({ endpoint: e.key, state }, e.state === state ? 1 : 0);
  });
  metric(Gauge, 'endpoint_weight_factor', "Health's multiplier on each endpoint's weight (below 1 after 429s from API Priority and Fairness).", ['endpoint'], (s, set) => {
    for (const e of s.endpoints) set({ endpoint: e.key }, e.weightFactor);
  });
  metric(Counter, 'ejections_total', 'Endpoint ejections, by reason.', ['reason'], (s, set) => {
    for (const [reason, n] of Object.entries(s.totals.ejections)) set({ reason }, n);
  });
  metric(Counter, 'retries_total', 'Requests retried on another endpoint, by what failed.', ['reason'], (s, set) => {
    for (const [reason, n] of Object.entries(s.totals.retries)) set({ reason }, n);
  });
  metric(Counter, 'retries_refused_total', 'Retries the retry budget refused.', [], (s, set) => set({}, s.budget.refused));
  metric(Counter, 'failed_requests_total', 'Caller requests that ended in an error (caller aborts not counted).', [], (s, set) => set({}, s.totals.failed));
  metric(Gauge, 'panic', '1 while too few endpoints are ready and requests go to every endpoint (panic mode).', [], (s, set) => set({}, s.picker.panic ? 1 : 0));
  metric(Counter, 'resolver_errors_total', 'Endpoint resolution failures (the previous endpoints stayed in use).', [], (s, set) => set({}, s.resolver.errors));
  metric(Counter, 'dns_queries_total', 'DNS queries sent, by result: success, or the failure (nxdomain, nodata, servfail, timeout…).', ['result'], (s, set) => {
    for (const [result, n] of Object.entries(s.resolver.dnsQueries)) set({ result }, n);
  });
  return () => {
    for (const name of names) registry.removeSingleMetric(name);
  };
}
