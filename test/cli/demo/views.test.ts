// The demo's two live views and its text summary, fed by hand.
import { PassThrough } from 'node:stream';
import type { WriteStream } from 'node:tty';
import test from 'ava';
import { LineView } from '../../../src/cli/demo/LineView.ts';
import type { Snapshot } from '../../../src/cli/demo/snapshot.ts';
import { summaryText, type DemoSummary } from '../../../src/cli/demo/summary.ts';
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

test('summary text: shares per apiserver for both clients, failures, and the balancer account', (t) => {
  const client = (label: string, requests: number[]): DemoSummary['clients']['kubeBalancer'] => ({
    label,
    via: `${label} via`,
    requests: requests.reduce((a, b) => a + b, 0),
    perApiserver: requests.map((n, i) => ({ name: `apiserver-${i + 1}`, address: `127.0.0.${i + 2}:6443`, requests: n, share: n / requests.reduce((a, b) => a + b, 0) })),
    apiserversUsed: requests.filter(Boolean).length,
    calls: 290,
    failed: 0,
    informerRestarts: 1,
    errors: [],
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
        ...client('kube-balancer', [150, 150]),
        balancer: { requests: 300, failed: 1, ejections: 2, ejectionsByReason: { connect: 2 }, drains: 1, restores: 1, retries: 4, retriesByReason: { connect: 3, throttled: 1 }, retriesRefused: 0, dnsQueries: { success: 2 } },
      },
      oneConnection: client('one connection', [300, 0]),
    },
    chart: '/tmp/chart.svg',
  };
  const text = summaryText(summary);
  t.regex(text, /^summary after 6\.0 s:/m);
  t.regex(text, /^kube-balancer\s+150 \(50%\)\s+150 \(50%\)\s+300\s+290\s+0\s+1$/m);
  t.regex(text, /^one connection\s+300 \(100%\)\s+0 \(0%\)\s+300\s+290\s+0\s+1$/m);
  t.regex(text, /^kube-balancer's stats\(\): 300 requests, 1 ended in an error \(watches cut by the crash are among them\);$/m);
  t.regex(text, /^ {2}2 ejections \(connect 2\), 1 drain, 1 restore; 4 retries on another apiserver \(connect 3, throttled 1\)$/m);
  t.regex(text, /^chart: \/tmp\/chart\.svg$/m);
});
