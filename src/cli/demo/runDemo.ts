import { writeFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import type { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WriteStream } from 'node:tty';
import { BalancerAccount } from './BalancerAccount.ts';
import { chartSvg } from './chart.ts';
import { ClientSockets } from './ClientSockets.ts';
import { kubeBalancerClient, oneConnectionClient, type ClientLoad, type ClientNodeModule, type DemoClient } from './clients.ts';
import { DemoCluster, USERS, type ClientKey } from './DemoCluster.ts';
import { LineView } from './LineView.ts';
import { Meter } from './Meter.ts';
import { demoSlowStartMs, scenario } from './scenario.ts';
import { CLIENT_KEYS, type DemoEvent, type Snapshot, type View } from './snapshot.ts';
import { ratioText, summarize, summaryText, type ClientSummary, type DemoSummary } from './summary.ts';
import { TerminalView } from './TerminalView.ts';
import { Workload } from './Workload.ts';

export interface DemoOptions {
  durationMs: number;
  servers: number;
  /** Print the summary as JSON on stdout; the live view goes to stderr. */
  json: boolean;
  /** Where to write the SVG chart; `undefined`: no chart. */
  chart: string | undefined;
  /** Resolves when the user interrupts (Ctrl-C): the demo stops early and still cleans up. */
  interrupted?: Promise<unknown>;
}

const TICK_MS = 250;
const QPS = 50;
const WORKERS = 6;
/** How long stopping may take before the demo gives up waiting (every step is bounded). */
const STOP_MS = 5000;

/**
 * `kube-balancer demo`: the same client-node workload through kube-balancer and through one
 * connection behind an L4 load balancer, against simulated apiservers that restart one after the
 * other (kube-apiserver's default shutdown) and crash meanwhile, watched live.
 */
export async function runDemo(k8s: ClientNodeModule, options: DemoOptions): Promise<DemoSummary> {
  const screen = options.json ? process.stderr : process.stdout;
  const demo = await DemoCluster.start(options.servers);
  // Before the clients connect: the crash waits for their sockets to the crashed apiserver to close.
  const sockets = new ClientSockets();
  let clients: Record<ClientKey, DemoClient>;
  try {
    clients = { kubeBalancer: await kubeBalancerClient(k8s, demo, demoSlowStartMs(options.durationMs)), oneConnection: oneConnectionClient(k8s, demo, demo.l4) };
  } catch (error) {
    sockets.close();
    await demo.close();
    throw error;
  }
  const view: View = (screen as WriteStream).isTTY ? new TerminalView(screen) : new LineView(screen);
  const events: DemoEvent[] = [];
  // The clock starts with the workload, once the informers have synced: phase times count from there.
  let started = performance.now();
  const elapsed = (): number => Math.max(0, performance.now() - started);
  const account = new BalancerAccount(clients.kubeBalancer.balancer!, demo, (text) => events.push({ atMs: elapsed(), text }));
  const workloads = CLIENT_KEYS.map((k) => new Workload(k8s, clients[k], { namespace: USERS[k], qps: QPS, workers: WORKERS }));
  let meter = new Meter(demo.apiservers, Date.now());
  const phases = scenario(demo.apiservers, workloads, sockets, options.durationMs, () => demo.l4.busiest);
  // What the views get each tick: the parts that do not change are made once.
  const labels = { kubeBalancer: clients.kubeBalancer.label, oneConnection: clients.oneConnection.label };
  const snapshot = (phase: number, elapsedMs: number): Snapshot => ({
    elapsedMs,
    durationMs: options.durationMs,
    phase,
    phases,
    labels,
    rows: rows(demo, clients, meter),
    events,
    retries: account.retries,
  });
  const actions: Array<Promise<void>> = [];
  const failures: string[] = [];
  intro(screen, demo, clients, options);
  try {
    await clients.kubeBalancer.balancer!.ready();
    await Promise.all(workloads.map((w) => w.start()));
    started = performance.now();
    meter = new Meter(demo.apiservers, Date.now());
    let phase = 0;
    let stop = false;
    void options.interrupted?.then(() => (stop = true));
    while (!stop && elapsed() < options.durationMs) {
      while (phases[phase + 1] && phases[phase + 1]!.atMs <= elapsed()) {
        const next = phases[++phase]!;
        const action = next.run?.().catch((error: unknown) => {
          failures.push(`${next.title}: ${(error as Error).message}`);
        });
        if (action) actions.push(action);
      }
      meter.sample();
      view.update(snapshot(phase, elapsed()));
      await sleep(Math.min(TICK_MS, Math.max(1, options.durationMs - elapsed())));
    }
    const durationMs = Math.min(elapsed(), options.durationMs);
    meter.sample();
    view.update(snapshot(phase, durationMs));
    view.close();
    await bounded(Promise.all(workloads.map((w) => w.stop())), 'stopping the workload');
    await bounded(Promise.all(actions), 'the last phase');
    // Requests that were on their way when the run ended count too.
    meter.sample();
    if (failures.length) throw new Error(`the scenario failed: ${failures.join('; ')}`);

    const base = {
      durationMs: Math.round(durationMs),
      target: demo.target,
      dnsServer: demo.dnsServer,
      apiservers: demo.apiservers.map((a) => ({ name: a.name, address: a.address })),
      phases: phases.map((p) => ({ title: p.title, atMs: Math.round(p.atMs) })),
    };
    // Where requests go once every apiserver is back: the skew a rolling restart leaves behind.
    const afterMs = phases.find((p) => p.after)?.atMs ?? 0;
    const figures = Object.fromEntries(
      CLIENT_KEYS.map((k, i) => [
        k,
        {
          label: clients[k].label,
          via: clients[k].via,
          totals: meter.totals(k),
          totalsAfter: meter.totals(k, afterMs),
          workload: workloads[i]!.stats,
          balancer: k === 'kubeBalancer' ? account.counts() : null,
        },
      ]),
    ) as Parameters<typeof summarize>[1];
    const summary = summarize(base, figures, afterMs);
    if (options.chart !== undefined) {
      const stepMs = Math.max(500, Math.round(durationMs / 60 / 250) * 250);
      const svg = chartSvg({
        title: `kube-balancer demo: requests/s at each apiserver, ${demo.apiservers.length} apiservers`,
        durationMs,
        stepMs,
        apiservers: demo.apiservers.map((a) => a.name),
        panels: CLIENT_KEYS.map((k, i) => ({
          label: `${clients[k].label}: ${clients[k].short}`,
          note: panelNote(summary.clients[k]),
          series: meter.series(k, stepMs, durationMs),
          failuresAtMs: workloads[i]!.failedAt.map((at) => at - started),
        })),
        phases: phases.map((p) => ({ title: p.title, atMs: p.atMs, disrupts: p.disrupts })),
      });
      summary.chart = resolvePath(options.chart);
      await writeFile(summary.chart, svg);
    }
    if (options.json) console.log(JSON.stringify(summary, null, 2));
    else console.log(summaryText(summary));
    return summary;
  } finally {
    view.close();
    await bounded(Promise.all(CLIENT_KEYS.map((k) => clients[k].close())), 'closing the clients');
    await bounded(demo.close(), 'stopping the simulated cluster');
    sockets.close();
  }
}

/** What a panel of the chart says under its title: what the summary's figures say. */
function panelNote(c: ClientSummary): string {
  const shares = c.after.perApiserver.map((p) => `${Math.round(p.share * 100)}%`).join(' / ');
  return `${c.failed} failed call${c.failed === 1 ? '' : 's'}; after the restarts ${shares}, max/min ${ratioText(c.after.maxMinRatio)}`;
}

function intro(out: Writable, demo: DemoCluster, clients: Record<ClientKey, DemoClient>, options: DemoOptions): void {
  const lines = [
    `kube-balancer demo: ${demo.apiservers.length} simulated kube-apiservers (${demo.apiservers.map((a) => `${a.name} ${a.address}`).join(', ')}),`,
    `listed by the embedded DNS server ${demo.dnsServer} as ${demo.target}`,
    `workload per client: ${QPS} calls/s (list, get, create, delete ConfigMaps) from ${WORKERS} workers + 3 informers, for ${options.durationMs / 1000} s`,
    ...CLIENT_KEYS.map((k) => `  ${clients[k].label}: ${clients[k].via}`),
    '',
  ];
  out.write(lines.join('\n') + '\n');
}

/** A row per apiserver: its own state, and each client's requests/s and load there. */
function rows(demo: DemoCluster, clients: Record<ClientKey, DemoClient>, meter: Meter): Snapshot['rows'] {
  const now = Date.now();
  const rates = Object.fromEntries(CLIENT_KEYS.map((k) => [k, meter.rates(k, now)])) as Record<ClientKey, number[]>;
  const loads = Object.fromEntries(CLIENT_KEYS.map((k) => [k, clients[k].load(demo.apiservers)])) as Record<ClientKey, ClientLoad[]>;
  return demo.apiservers.map((a, i) => ({
    name: a.name,
    address: a.address,
    server: a.instance.state,
    clients: Object.fromEntries(CLIENT_KEYS.map((k) => [k, { ...loads[k][i]!, rate: rates[k][i] ?? 0 }])) as Snapshot['rows'][number]['clients'],
  }));
}

/** Waits for `work`, at most `STOP_MS`: a demo that hangs on its way out helps no one. */
async function bounded(work: Promise<unknown>, what: string): Promise<void> {
  const timeout = sleep(STOP_MS, 'timeout' as const, { ref: false });
  if ((await Promise.race([work.then(() => 'done' as const), timeout])) === 'timeout') process.emitWarning(`${what} took over ${STOP_MS / 1000} s`);
}
