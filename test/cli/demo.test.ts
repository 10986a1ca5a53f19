// The demo as a user runs it, in a short mode: a child process against its own embedded DNS server
// and simulated apiservers, through the crash and the drain, to the summary and the chart.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { DemoSummary } from '../../src/cli/demo/summary.ts';
import { runCli } from '../helpers/cli.ts';
import { findAll, parseXml } from '../helpers/xml.ts';

test('kube-balancer demo --duration 6s --json: every apiserver used by kube-balancer, one by the single connection, no failure, a valid chart', async (t) => {
  t.timeout(180_000);
  const dir = await mkdtemp(join(tmpdir(), 'kube-balancer-demo-test-'));
  try {
    const chartPath = join(dir, 'chart.svg');
    const started = Date.now();
    const result = await runCli(['demo', '--duration', '6s', '--json', '--chart', chartPath], { timeoutMs: 150_000 });
    t.is(result.code, 0, result.stderr);
    t.log(`the demo took ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const summary = JSON.parse(result.stdout) as DemoSummary;
    t.is(summary.apiservers.length, 3);
    t.deepEqual(summary.apiservers.map((a) => a.name), ['apiserver-1', 'apiserver-2', 'apiserver-3']);
    t.true(summary.durationMs >= 5900 && summary.durationMs <= 6500, String(summary.durationMs));
    t.deepEqual(summary.phases.map((p) => p.title), ['all apiservers up', 'crash apiserver-2', 'apiserver-2 back', 'drain apiserver-3 (graceful shutdown)', 'apiserver-3 back']);

    const balanced = summary.clients.kubeBalancer;
    const single = summary.clients.oneConnection;
    t.is(balanced.apiserversUsed, 3, JSON.stringify(balanced.perApiserver));
    t.true(balanced.perApiserver.every((p) => p.requests > 0));
    t.is(single.apiserversUsed, 1, JSON.stringify(single.perApiserver));
    t.deepEqual(single.perApiserver.map((p) => p.requests > 0), [true, false, false], 'the single connection stays on apiserver-1');
    t.is(balanced.failed, 0, balanced.errors.join('; '));
    t.is(single.failed, 0, single.errors.join('; '));
    t.true(balanced.calls > 50 && single.calls > 50, 'both clients ran the workload');
    t.is(Math.round(balanced.perApiserver.reduce((a, p) => a + p.share, 0) * 100), 100);
    t.truthy(balanced.balancer);
    t.true(balanced.balancer!.ejections >= 1, 'the crash ejected apiserver-2');
    t.true(balanced.balancer!.requests >= balanced.calls, "the balancer's stats() count every call");
    t.true((balanced.balancer!.dnsQueries.success ?? 0) >= 1, 'the endpoints came from the embedded DNS server');
    t.is(single.balancer, null);
    t.is(summary.chart, chartPath);

    // The live view went to stderr, as plain lines (stderr is not a terminal).
    t.regex(result.stderr, /^\[ +0\.0 s\] phase 1\/5: all apiservers up$/m);
    t.regex(result.stderr, /phase 2\/5: crash apiserver-2$/m);
    t.regex(result.stderr, /req\/s {2}kube-balancer: apiserver-1 \d+, apiserver-2 \d+, apiserver-3 \d+ \| one connection: apiserver-1 \d+/);

    const svg = parseXml(await readFile(chartPath, 'utf8'));
    t.is(svg.name, 'svg');
    t.is(svg.attributes.xmlns, 'http://www.w3.org/2000/svg');
    const panels = findAll(svg, 'g').filter((g) => g.attributes.class === 'panel');
    t.deepEqual(panels.map((p) => p.attributes['data-client']!.split(':')[0]), ['kube-balancer', 'one connection']);
    for (const panel of panels) {
      const series = findAll(panel, 'polyline');
      t.deepEqual(series.map((s) => s.attributes['data-apiserver']), ['apiserver-1', 'apiserver-2', 'apiserver-3'], 'one series per apiserver');
      for (const s of series) {
        const points = s.attributes.points!.split(' ').map((p) => p.split(',').map(Number));
        t.true(points.length >= 6);
        t.true(points.every((p) => p.length === 2 && p.every(Number.isFinite)));
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
