import { duration, EXIT, interrupted, parse, positiveInteger, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { optional } from '../optional.ts';

const MAX_SERVERS = 9; // 127.0.0.2–127.0.0.10

export const demo: Command = {
  help: `usage: kube-balancer demo [--duration TIME] [--servers N] [--json] [--chart FILE | --no-chart]

Starts an embedded DNS server and simulated kube-apiservers on 127.0.0.2…, then runs the same
@kubernetes/client-node workload (lists, gets, creates, deletes, three informers) twice side by side:
through kube-balancer (target dns+srv:///_https._tcp.kubernetes-headless.default.svc.cluster.local.)
and over one HTTP/2 connection through an L4 load balancer (round robin per connection). Meanwhile
every apiserver restarts in turn in kube-apiserver's default shutdown mode (a rolling restart), then
the one-connection client's apiserver crashes and comes back. Shows each apiserver's requests/s,
in-flight requests, open watches and state live, then a summary: failed calls per client, and
where requests go once every apiserver is back.

options:
  --duration TIME    how long the workload runs: 30, 30s, 2m (default 30s, at least 5s)
  --servers N        simulated apiservers, 2–${MAX_SERVERS} (default 3)
  --json             print the summary as JSON on stdout (the live view goes to stderr)
  --chart FILE       where to write the SVG chart of requests/s per apiserver over time
                     (default kube-balancer-demo.svg in the current directory)
  --no-chart         write no chart
  -h, --help         this help

Needs @kubernetes/client-node, ws and jsrsasign (npm install @kubernetes/client-node ws jsrsasign).
Its CA, certificates and keys are made for each run and kept in memory.
Exit codes: 0 done, 1 the demo failed, 2 usage error, 130 interrupted (Ctrl-C; it still cleans up).`,

  async run(args) {
    const { values } = parse(args, {
      duration: { type: 'string', default: '30s' },
      servers: { type: 'string', default: '3' },
      json: { type: 'boolean', default: false },
      chart: { type: 'string' },
      'no-chart': { type: 'boolean', default: false },
    });
    const durationMs = duration('--duration', values.duration);
    if (durationMs < 5000) throw new UsageError(`--duration must be at least 5s, for the phases to play out; got "${values.duration}"`);
    const servers = positiveInteger('--servers', values.servers);
    if (servers < 2 || servers > MAX_SERVERS) throw new UsageError(`--servers must be 2–${MAX_SERVERS}, got ${servers}`);
    if (values['no-chart'] && values.chart !== undefined) throw new UsageError('--chart and --no-chart exclude each other');

    // Optional packages first, so a missing one is a clear message rather than a failed import deep down.
    const k8s = await optional(
      async () => (await import('ws'), await import('jsrsasign'), await import('@kubernetes/client-node')),
      ['@kubernetes/client-node', 'ws', 'jsrsasign'],
      'the demo',
    );
    const { runDemo } = await import('./runDemo.ts');
    const signal = interrupted();
    let stopped = false;
    void signal.promise.then(() => (stopped = true));
    try {
      await runDemo(k8s, {
        durationMs,
        servers,
        json: values.json,
        chart: values['no-chart'] ? undefined : (values.chart ?? 'kube-balancer-demo.svg'),
        interrupted: signal.promise,
      });
    } finally {
      signal.dispose();
    }
    return stopped ? EXIT.interrupted : EXIT.ok;
  },
};
