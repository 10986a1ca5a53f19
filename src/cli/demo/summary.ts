import { table } from '../table.ts';
import type { ClientKey } from './DemoCluster.ts';
import { CLIENT_KEYS, seconds } from './snapshot.ts';
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
  /** kube-balancer's health decisions and retries; `null` for the client without it. */
  balancer: BalancerCounts | null;
}

export interface BalancerCounts {
  ejections: number;
  drains: number;
  restores: number;
  retries: number;
  /** Retries by reason (`connect`, `reset`, `shutdown`, …). */
  retriesByReason: Record<string, number>;
}

export interface ClientFigures {
  label: string;
  via: string;
  totals: number[];
  workload: WorkloadStats;
  balancer: BalancerCounts | null;
}

export function summarize(
  base: Omit<DemoSummary, 'clients' | 'chart'>,
  figures: Record<ClientKey, ClientFigures>,
  chart: string | null,
): DemoSummary {
  const clients = Object.fromEntries(
    CLIENT_KEYS.map((key) => {
      const f = figures[key];
      const requests = f.totals.reduce((a, b) => a + b, 0);
      const perApiserver = base.apiservers.map((a, i) => ({
        ...a,
        requests: f.totals[i] ?? 0,
        share: requests ? Math.round(((f.totals[i] ?? 0) / requests) * 1000) / 1000 : 0,
      }));
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
        balancer: f.balancer,
      };
      return [key, summary];
    }),
  ) as Record<ClientKey, ClientSummary>;
  return { ...base, clients, chart };
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
  for (const k of CLIENT_KEYS) lines.push(`${s.clients[k].label}: ${s.clients[k].via}`);
  const b = s.clients.kubeBalancer.balancer;
  if (b) {
    const reasons = Object.entries(b.retriesByReason)
      .map(([reason, n]) => `${reason} ${n}`)
      .join(', ');
    lines.push(
      `kube-balancer: ${b.ejections} ejection${b.ejections === 1 ? '' : 's'}, ${b.drains} drain${b.drains === 1 ? '' : 's'}, ${b.restores} restore${b.restores === 1 ? '' : 's'}, ` +
        `${b.retries} request${b.retries === 1 ? '' : 's'} retried on another apiserver${reasons ? ` (${reasons})` : ''}`,
    );
  }
  for (const k of CLIENT_KEYS) for (const e of s.clients[k].errors) lines.push(`${s.clients[k].label} error: ${e}`);
  if (s.chart) lines.push(`chart: ${s.chart}`);
  return lines.join('\n');
}
