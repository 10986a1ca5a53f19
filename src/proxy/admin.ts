import type { BalancerStats } from '../observability/stats.ts';

/** What the proxy counts of its own, beside the balancer's stats. */
export interface ProxyCounters {
  /** Requests received, upgrades and refused ones included. */
  requests: number;
  /** Upgrades carried to an apiserver (exec, attach, port-forward). */
  upgrades: number;
  /** Requests refused by the guard (Host, Origin, cross-site, CONNECT, path and method rules). */
  refused: number;
  /** Requests answered 503 or 502 because no apiserver could serve them. */
  unavailable: number;
}

/**
 * The proxy's own endpoints under `/.kube-balancer/`: `healthz` (200 while some apiserver endpoint is
 * ready, else 503) and `metrics` (Prometheus text, written here so that the proxy needs no prom-client).
 */
export function adminAnswer(name: string, stats: BalancerStats, counters: ProxyCounters): { status: number; type: string; body: string } {
  if (name === 'healthz') {
    const ready = stats.endpoints.filter((e) => e.state === 'ready').length;
    return ready > 0
      ? { status: 200, type: 'text/plain', body: `ok: ${ready} of ${stats.endpoints.length} apiservers ready\n` }
      : { status: 503, type: 'text/plain', body: `no apiserver ready (${stats.endpoints.length} known)\n` };
  }
  if (name === 'metrics') return { status: 200, type: 'text/plain; version=0.0.4', body: metrics(stats, counters) };
  return { status: 404, type: 'text/plain', body: 'the proxy serves /.kube-balancer/healthz and /.kube-balancer/metrics\n' };
}

function metrics(stats: BalancerStats, counters: ProxyCounters): string {
  const lines: string[] = [];
  const family = (name: string, type: 'counter' | 'gauge', help: string, series: Array<[string, number]>): void => {
    lines.push(`# HELP kube_balancer_proxy_${name} ${help}`, `# TYPE kube_balancer_proxy_${name} ${type}`);
    for (const [labels, value] of series) lines.push(`kube_balancer_proxy_${name}${labels} ${value}`);
  };
  family('requests_total', 'counter', 'Requests the proxy received (upgrades and refused ones included).', [['', counters.requests]]);
  family('upgrades_total', 'counter', 'Upgrades (exec, attach, port-forward) carried to an apiserver.', [['', counters.upgrades]]);
  family('refused_total', 'counter', 'Requests refused by the Host, Origin, cross-site, CONNECT, path and method rules.', [['', counters.refused]]);
  family('unavailable_total', 'counter', 'Requests answered 503 or 502 because no apiserver could serve them.', [['', counters.unavailable]]);
  const label = (key: string): string => `{endpoint="${key.replace(/["\\\n]/g, '_')}"}`;
  family('endpoint_requests_total', 'counter', 'Attempts sent to each apiserver endpoint.', stats.endpoints.map((e) => [label(e.key), e.requests]));
  family('endpoint_ready', 'gauge', 'Whether each apiserver endpoint takes new requests (1) or not (0).', stats.endpoints.map((e) => [label(e.key), e.state === 'ready' ? 1 : 0]));
  family('endpoint_open_streams', 'gauge', 'Open long-running requests at each endpoint.', stats.endpoints.map((e) => [label(e.key), e.streams]));
  return `${lines.join('\n')}\n`;
}
