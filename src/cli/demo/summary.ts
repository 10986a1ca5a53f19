import { table } from '../table.ts';
import type { ClientKey } from './DemoCluster.ts';
import { CLIENT_KEYS } from './snapshot.ts';
import { seconds } from './seconds.ts';
import type { WorkloadStats } from './Workload.ts';

/** What `kube-balancer demo --json` prints. */
export interface DemoSummary {
  durationMs: number;
  target: string;
  dnsServer: string;
  apiservers: Array<{ name: string; address: string }>;
  phases: Array<{ title: string; atMs: number }>;
  clients: Record<ClientKey, ClientSummary>;
  /** Path of the SVG chart, or `null` with `--no-chart`. */
  chart: string | null;
}

export interface ClientSummary {
  label: string;
  via: string;
  /** Requests the apiservers received from this client (informers' lists and watches included). */
  requests: number;
  perApiserver: Array<{ name: string; address: string; requests: number; share: number }>;
  /** How many apiservers received any of its requests. */
  apiserversUsed: number;
  /** API calls the workload made, and how many of them failed (the application saw an error). */
  calls: number;
  failed: number;
  informerRestarts: number;
  errors: string[];
  /** Where its requests went once every apiserver was back (the phase "after the restarts", to the end). */
  after: AfterRestarts;
  /** kube-balancer's health decisions and retries; `null` for the client without it. */
  balancer: BalancerCounts | null;
}

/** The spread a client is left with after the rolling restart and the crash. */
export interface AfterRestarts {
  /** From when, in milliseconds from the start. */
  fromMs: number;
  requests: number;
  perApiserver: Array<{ name: string; requests: number; share: number }>;
  /** Requests at the busiest apiserver over those at the least busy one, to 2 decimals; `null` (∞) when one got none. */
  maxMinRatio: number | null;
}

/** kube-balancer's own account, from `balancer.stats()`, plus drains and restores counted from its events. */
export interface BalancerCounts {
  /** Requests the balancer took from client-node (a retried one counts once), and those that failed. */
  requests: number;
  failed: number;
  ejections: number;
  ejectionsByReason: Record<string, number>;
  drains: number;
  restores: number;
  retries: number;
  /** Retries by why the previous attempt failed (`connect`, `reset`, `throttled`, …). */
  retriesByReason: Record<string, number>;
  /** Retries the retry budget refused. */
  retriesRefused: number;
  /** DNS queries by result (`success`, `nxdomain`, `timeout`, …). */
  dnsQueries: Record<string, number>;
}

export interface ClientFigures {
  label: string;
  via: string;
  totals: number[];
  /** The same from the phase "after the restarts" on. */
  totalsAfter: number[];
  workload: WorkloadStats;
  balancer: BalancerCounts | null;
}

/** The summary, its chart still to be written (`chart: null`). */
export function summarize(base: Omit<DemoSummary, 'clients' | 'chart'>, figures: Record<ClientKey, ClientFigures>, afterMs: number): DemoSummary {
  const clients = Object.fromEntries(
    CLIENT_KEYS.map((key) => {
      const f = figures[key];
      const requests = sum(f.totals);
      const perApiserver = base.apiservers.map((a, i) => ({ ...a, requests: f.totals[i] ?? 0, share: share(f.totals[i] ?? 0, requests) }));
      const after = sum(f.totalsAfter);
      const counts = base.apiservers.map((_, i) => f.totalsAfter[i] ?? 0);
      const least = Math.min(...counts);
      const summary: ClientSummary = {
        label: f.label,
        via: f.via,
        requests,
        perApiserver,
        apiserversUsed: perApiserver.filter((p) => p.requests > 0).length,
        calls: f.workload.calls,
        failed: f.workload.failed,
        informerRestarts: f.workload.informerRestarts,
        errors: f.workload.errors,
        after: {
          fromMs: Math.round(afterMs),
          requests: after,
          perApiserver: base.apiservers.map((a, i) => ({ name: a.name, requests: counts[i]!, share: share(counts[i]!, after) })),
          maxMinRatio: least > 0 ? Math.round((Math.max(...counts) / least) * 100) / 100 : null,
        },
        balancer: f.balancer,
      };
      return [key, summary];
    }),
  ) as Record<ClientKey, ClientSummary>;
  return { ...base, clients, chart: null };
}

/** `1.07`, or `∞` when an apiserver got nothing. */
export function ratioText(ratio: number | null): string {
  return ratio === null ? '∞' : ratio.toFixed(2);
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function share(part: number, whole: number): number {
  return whole ? Math.round((part / whole) * 1000) / 1000 : 0;
}

/** The summary as the end of the demo's text output. */
export function summaryText(s: DemoSummary): string {
  const header = ['', ...s.apiservers.map((a) => a.name), 'requests', 'calls', 'failed', 'informer restarts'];
  const rows = CLIENT_KEYS.map((k) => {
    const c = s.clients[k];
    return [
      c.label,
      ...c.perApiserver.map((p) => `${p.requests} (${Math.round(p.share * 100)}%)`),
      String(c.requests),
      String(c.calls),
      String(c.failed),
      String(c.informerRestarts),
    ];
  });
  const lines = [
    '',
    `summary after ${seconds(s.durationMs)}: the same workload through both clients; requests as the apiservers counted them`,
    '',
    table(header, rows, header.map((_, i) => i > 0)),
    '',
  ];
  const afterHeader = ['', ...s.apiservers.map((a) => a.name), 'max/min'];
  const afterRows = CLIENT_KEYS.map((k) => {
    const a = s.clients[k].after;
    return [s.clients[k].label, ...a.perApiserver.map((p) => `${p.requests} (${Math.round(p.share * 100)}%)`), ratioText(a.maxMinRatio)];
  });
  lines.push(
    `after the restarts (from ${seconds(s.clients.kubeBalancer.after.fromMs)} to the end, every apiserver up): requests per apiserver`,
    '',
    table(afterHeader, afterRows, afterHeader.map((_, i) => i > 0)),
    '',
  );
  for (const k of CLIENT_KEYS) lines.push(`${s.clients[k].label}: ${s.clients[k].via}`);
  const b = s.clients.kubeBalancer.balancer;
  if (b) {
    const reasons = (counts: Record<string, number>): string => {
      const list = Object.entries(counts).map(([reason, n]) => `${reason} ${n}`);
      return list.length ? ` (${list.join(', ')})` : '';
    };
    const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
    lines.push(
      `kube-balancer's stats(): ${plural(b.requests, 'request')}, ${b.failed} ended in an error${b.failed ? ' (watches cut by the crash are among them)' : ''};`,
      `  ${plural(b.ejections, 'ejection')}${reasons(b.ejectionsByReason)}, ${plural(b.drains, 'drain')}, ${plural(b.restores, 'restore')}; ` +
        `${b.retries} ${b.retries === 1 ? 'retry' : 'retries'} on another apiserver${reasons(b.retriesByReason)}`,
    );
  }
  for (const k of CLIENT_KEYS) for (const e of s.clients[k].errors) lines.push(`${s.clients[k].label} error: ${e}`);
  if (s.chart) lines.push(`chart: ${s.chart}`);
  return lines.join('\n');
}
