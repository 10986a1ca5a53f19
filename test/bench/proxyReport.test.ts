// The proxy bench's verdicts (bench/proxy.ts targetRows) and its BENCHMARKS.md section
// (bench/reportProxy.ts): a pinned proxy reads ∞, not a ratio; a ratio over a figure at or below zero
// reads '–'; each target is judged on kube-balancer proxy's figure.
import test from 'ava';
import { KUBE_BALANCER, KUBECTL, targetRows, type ProxyRun, type ProxySummary } from '../../bench/proxy.ts';
import { proxySection } from '../../bench/reportProxy.ts';

const kubectl: ProxySummary = { client: KUBECTL, spread: null, failedRolling: 200, failedCrash: 2, p50: 2, p99: 40, addedP50: 0.5, addedP99: -3, cpuUs: 800 };
const balancer: ProxySummary = { client: KUBE_BALANCER, spread: 1.05, failedRolling: 0, failedCrash: 1, p50: 2.5, p99: 41, addedP50: 1, addedP99: 0.8, cpuUs: 900 };

test('targets: pinned spread is ∞, a ratio over a non-positive figure is –, each target judged', (t) => {
  const rows: Record<string, Record<string, string>> = Object.fromEntries(targetRows([kubectl, balancer]).map((r) => [r.figure ?? '', r]));
  t.like(rows['spread (max ÷ min share)'], { [KUBECTL]: '∞ (pinned)', [KUBE_BALANCER]: '1.05', 'kube-balancer ÷ kubectl': '–', met: 'yes' });
  t.like(rows['failed, rolling restart'], { met: 'yes', 'kube-balancer ÷ kubectl': '0' });
  t.like(rows['failed, crash'], { met: 'no' });
  t.like(rows['added p50 ms'], { met: '–' });
  t.like(rows['added p99 ms'], { [KUBECTL]: '-3', 'kube-balancer ÷ kubectl': '–', met: 'yes' });
  t.like(rows['proxy CPU µs/req'], { 'kube-balancer ÷ kubectl': '1.125', met: 'no' });
});

test('the BENCHMARKS.md section: nothing without runs; with runs, one cell per run', (t) => {
  t.deepEqual(proxySection([]), []);
  const run: ProxyRun = {
    startedAt: '2026-12-05T00:00:00.000Z',
    machine: { cpu: 'test', cores: 2, node: 'v22', loadavg: [1, 1, 1] },
    settings: { rate: 200, ms: 6000, rounds: 2, warmMs: 1000, crashMs: 6000, deadlineMs: 5000, kubectl: 'v1.32.4', upstream: 'haproxy' },
    direct: { p50: 1, p99: 2 },
    idleCpuMsPerS: { [KUBECTL]: 0, [KUBE_BALANCER]: 10 },
    summary: [kubectl, balancer],
    rows: [{ phase: 'crash', round: 0, client: KUBECTL, requests: 10, failed: 2, statuses: { 200: 8, 0: 1, 500: 1 }, p50: 1, p99: 2, max: 3, proxyCpuUs: 800, proxyWaitMsPerS: 5, seen: [0, 9, 0], share: [0, 1, 0], crashed: 1 }],
  };
  const text = proxySection([run, run]).join('\n');
  t.regex(text, /\| failed, crash \| 0 \| 2 \/ 2 \| 1 \/ 1 \| 0.5 \/ 0.5 \| no \/ no \|/);
  t.regex(text, /\| crash \| kubectl proxy \| 10 \/ 10 \| 2 \/ 2 \| none×1 200×8 500×1 \/ none×1 200×8 500×1 \|/);
});
