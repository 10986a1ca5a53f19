// The demo's two live views and its text summary, fed by hand.
import { PassThrough } from 'node:stream';
import type { WriteStream } from 'node:tty';
import test from 'ava';
import { LineView } from '../../../src/cli/demo/LineView.ts';
import type { Snapshot } from '../../../src/cli/demo/snapshot.ts';
import { ratioText, summarize, summaryText, type DemoSummary } from '../../../src/cli/demo/summary.ts';
import { TerminalView } from '../../../src/cli/demo/TerminalView.ts';

const phases = [
  { title: 'all apiservers up', atMs: 0 },
  { title: 'crash apiserver-2', atMs: 2000, disrupts: 'apiserver-2' },
];

function snapshot(elapsedMs: number, phase: number, events: Snapshot['events'] = []): Snapshot {
  const load = (rate: number, state: string, watches = 1) => ({ rate, inFlight: 2, watches, state });
  return {
    elapsedMs,
    durationMs: 10_000,
    phase,
    phases,
    labels: { kubeBalancer: 'kube-balancer', oneConnection: 'one connection' },
    rows: [
      { name: 'apiserver-1', address: '127.0.0.2:6443', server: 'running', clients: { kubeBalancer: load(25, 'ready'), oneConnection: load(50, 'pinned', 3) } },
      { name: 'apiserver-2', address: '127.0.0.3:6443', server: 'crashed', clients: { kubeBalancer: load(0, 'ejected', 0), oneConnection: load(0, '-', 0) } },
    ],
    events,
    retries: 3,
  };
}

function fakeTerminal(columns: number): WriteStream & { output: string } {
  const out = { output: '', columns, isTTY: true, hasColors: () => false, write: (chunk: string) => ((out.output += chunk), true) };
  return out as unknown as WriteStream & { output: string };
}

const strip = (text: string): string => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, ''); // eslint-disable-line no-control-regex

test('terminal view: a frame with the phase, a progress bar, a row per apiserver; redrawn in place', (t) => {
  const term = fakeTerminal(130);
  const view = new TerminalView(term);
  view.update(snapshot(2500, 1, [{ atMs: 2100, text: 'kube-balancer ejected apiserver-2 (connect) for 1.0 s' }]));
  const first = strip(term.output).split('\n');
  t.is(first[0], 'kube-balancer demo  phase 2/2: crash apiserver-2');
  t.regex(first[1]!, /^\[█{8}░+\] 2\.5 s \/ 10\.0 s$/);
  t.regex(first[4]!, /^apiserver\s+server\s+state\s+req\/s\s+in-flight\s+watches\s+state\s+req\/s\s+in-flight\s+watches$/);
  t.regex(first[5]!, /^apiserver-1\s+running\s+ready\s+25\.0 █+\S*\s+2\s+1\s+pinned\s+50\.0 █{10}\s+2\s+3$/);
  t.regex(first[6]!, /^apiserver-2\s+crashed\s+ejected\s+0\.0\s+2\s+0\s+-\s+0\.0\s+2\s+0$/);
  t.true(first.includes('kube-balancer retried 3 requests on another apiserver'));
  t.true(first.includes('  2.1 s  kube-balancer ejected apiserver-2 (connect) for 1.0 s'));
  const lines = first.length - 1;

  term.output = '';
  view.update(snapshot(3000, 1));
  t.true(term.output.startsWith(`\x1b[${lines}F`), 'the second frame starts by moving up over the first');
  view.close();
  t.true(term.output.endsWith('\x1b[?25h'), 'the cursor comes back');
});

test('terminal view: no line wider than the terminal, so nothing wraps', (t) => {
  const term = fakeTerminal(60);
  new TerminalView(term).update(snapshot(2500, 1));
  for (const line of strip(term.output).split('\n')) t.true(line.length < 60, line);
});

test('line view: phases and events as they come, rates every interval', (t) => {
  const out = new PassThrough();
  let text = '';
  out.setEncoding('utf8').on('data', (d: string) => (text += d));
  const view = new LineView(out, 2000);
  view.update(snapshot(0, 0));
  view.update(snapshot(500, 0));
  view.update(snapshot(2100, 1, [{ atMs: 2050, text: 'kube-balancer ejected apiserver-2 (connect) for 1.0 s' }]));
  t.deepEqual(text.trimEnd().split('\n'), [
    '[  0.0 s] phase 1/2: all apiservers up',
    '[  0.0 s] req/s  kube-balancer: apiserver-1 25, apiserver-2 0 | one connection: apiserver-1 50, apiserver-2 0  (kube-balancer retried 3 elsewhere)',
    '[  2.0 s] phase 2/2: crash apiserver-2',
    '[  2.0 s] kube-balancer ejected apiserver-2 (connect) for 1.0 s',
    '[  2.1 s] req/s  kube-balancer: apiserver-1 25, apiserver-2 0 | one connection: apiserver-1 50, apiserver-2 0',
  ]);
});

test('summary text: shares per apiserver for both clients, failures, the spread after the restarts, and the balancer account', (t) => {
  const client = (label: string, requests: number[], after: number[]): DemoSummary['clients']['kubeBalancer'] => ({
    label,
    via: `${label} via`,
    requests: requests.reduce((a, b) => a + b, 0),
    perApiserver: requests.map((n, i) => ({ name: `apiserver-${i + 1}`, address: `127.0.0.${i + 2}:6443`, requests: n, share: n / requests.reduce((a, b) => a + b, 0) })),
    apiserversUsed: requests.filter(Boolean).length,
    calls: 290,
    failed: 0,
    informerRestarts: 1,
    errors: [],
    after: {
      fromMs: 4500,
      requests: after.reduce((a, b) => a + b, 0),
      perApiserver: after.map((n, i) => ({ name: `apiserver-${i + 1}`, requests: n, share: n / after.reduce((a, b) => a + b, 0) })),
      maxMinRatio: Math.min(...after) ? Math.round((Math.max(...after) / Math.min(...after)) * 100) / 100 : null,
    },
    balancer: null,
  });
  const summary: DemoSummary = {
    durationMs: 6000,
    target: 'dns+srv:///x.',
    dnsServer: '127.0.0.1:53',
    apiservers: [{ name: 'apiserver-1', address: '127.0.0.2:6443' }, { name: 'apiserver-2', address: '127.0.0.3:6443' }],
    phases,
    clients: {
      kubeBalancer: {
        ...client('kube-balancer', [150, 150], [40, 38]),
        balancer: { requests: 300, failed: 1, ejections: 2, ejectionsByReason: { connect: 2 }, drains: 1, restores: 1, retries: 4, retriesByReason: { connect: 3, throttled: 1 }, retriesRefused: 0, dnsQueries: { success: 2 } },
      },
      oneConnection: { ...client('one connection', [200, 100], [0, 80]), failed: 17 },
    },
    chart: '/tmp/chart.svg',
  };
  const text = summaryText(summary);
  t.regex(text, /^summary after 6\.0 s:/m);
  t.regex(text, /^kube-balancer\s+150 \(50%\)\s+150 \(50%\)\s+300\s+290\s+0\s+1$/m);
  t.regex(text, /^one connection\s+200 \(67%\)\s+100 \(33%\)\s+300\s+290\s+17\s+1$/m);
  // Where the requests went once every apiserver was back, and how uneven that is.
  t.regex(text, /^after the restarts \(from 4\.5 s to the end, every apiserver up\): requests per apiserver$/m);
  t.regex(text, /^\s+apiserver-1\s+apiserver-2\s+max\/min$/m);
  t.regex(text, /^kube-balancer\s+40 \(51%\)\s+38 \(49%\)\s+1\.05$/m);
  t.regex(text, /^one connection\s+0 \(0%\)\s+80 \(100%\)\s+∞$/m);
  t.regex(text, /^kube-balancer's stats\(\): 300 requests, 1 ended in an error \(watches cut by the crash are among them\);$/m);
  t.regex(text, /^ {2}2 ejections \(connect 2\), 1 drain, 1 restore; 4 retries on another apiserver \(connect 3, throttled 1\)$/m);
  t.regex(text, /^chart: \/tmp\/chart\.svg$/m);
});

test('summarize: shares after the restarts from the later totals; max/min over the apiservers, null (∞) when one got none', (t) => {
  const base = {
    durationMs: 10_000,
    target: 'dns+srv:///x.',
    dnsServer: '127.0.0.1:53',
    apiservers: [1, 2, 3].map((i) => ({ name: `apiserver-${i}`, address: `127.0.0.${i + 1}:6443` })),
    phases,
  };
  const workload = { calls: 100, failed: 0, informerRestarts: 0, errors: [] };
  const summary = summarize(
    base,
    {
      kubeBalancer: { label: 'kube-balancer', via: 'v', totals: [100, 90, 110], totalsAfter: [30, 25, 40], workload, balancer: null },
      oneConnection: { label: 'one connection', via: 'v', totals: [120, 180, 0], totalsAfter: [0, 95, 0], workload: { ...workload, failed: 12 }, balancer: null },
    },
    7500.4,
  );
  t.is(summary.chart, null);
  t.deepEqual(summary.clients.kubeBalancer.after, {
    fromMs: 7500,
    requests: 95,
    perApiserver: [
      { name: 'apiserver-1', requests: 30, share: 0.316 },
      { name: 'apiserver-2', requests: 25, share: 0.263 },
      { name: 'apiserver-3', requests: 40, share: 0.421 },
    ],
    maxMinRatio: 1.6,
  });
  t.is(summary.clients.oneConnection.after.maxMinRatio, null);
  t.deepEqual(summary.clients.oneConnection.after.perApiserver.map((p) => p.share), [0, 1, 0]);
  t.is(summary.clients.oneConnection.failed, 12);
  t.is(summary.clients.oneConnection.apiserversUsed, 2);
  t.is(ratioText(1.6), '1.60');
  t.is(ratioText(null), '∞');
});
