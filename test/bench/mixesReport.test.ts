// BENCHMARKS.md's request-mixes section (bench/reportMixes.ts): nothing without runs; each round's
// light-load p99, and the A/A Pool's, is divided by the Pool's of the same round, not of another.
import test from 'ava';
import type { Row } from '../../bench/compare.ts';
import { mixesSection, type MixesRun } from '../../bench/reportMixes.ts';

const row = (scenario: string, client: string, throughput: number, p99: number): Row => ({ scenario, client, requests: 1, failed: 0, throughput, p50: 1, p99, max: p99, cpuUs: 1, proxyCpuUs: null, share: [1], warmup: [0] });

test('nothing without runs; per round, saturated throughputs and the light p99 over the Pool\'s of that round', (t) => {
  t.deepEqual(mixesSection([]), []);
  const run: MixesRun = {
    startedAt: '2026-12-06T00:00:00.000Z',
    machine: { cpu: 'test', cores: 2, node: 'v22', loadavg: [1, 1, 1] },
    rounds: 2,
    rows: [
      row('slow-lists', 'kube-balancer', 0.99, 500),
      row('slow-lists', 'haproxy http roundrobin', 0.35, 900),
      row('slow-lists-light', 'kube-balancer', 22, 22),
      row('slow-lists-light', 'undici Pool (one server)', 20, 20),
      row('slow-lists-light', 'undici Pool again (A/A)', 21, 21),
      row('slow-lists', 'kube-balancer', 0.97, 500),
      row('slow-lists-light', 'kube-balancer', 30, 30),
      row('slow-lists-light', 'undici Pool (one server)', 24, 24),
    ],
  };
  const text = mixesSection([run]).join('\n');
  t.regex(text, /\| 1·1 \| LISTs only \| 0.99 \| – \| – \| 0.35 \| 22 \| 20 \| 1.1 \| 1.05 \|/);
  t.regex(text, /\| 1·2 \| LISTs only \| 0.97 \| – \| – \| – \| 30 \| 24 \| 1.25 \| – \|/);
  t.regex(text, /- LISTs only: run 1 1.18 \(1.10–1.25, 2 rounds\); A\/A run 1 1.05 \(1.05–1.05, 1 round\)/);
  // Each run is one build: a second run is summed up apart, not pooled with the first.
  const second = { ...run, rows: run.rows.map((r) => (r.client === 'kube-balancer' && r.scenario === 'slow-lists-light' ? { ...r, p99: 20 } : r)) };
  t.regex(mixesSection([run, second]).join('\n'), /- LISTs only: run 1 1.18 \(1.10–1.25, 2 rounds\), run 2 0.92 \(0.83–1.00, 2 rounds\);/);
});
