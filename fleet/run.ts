import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { defaultWorkload } from './client/Workload.ts';
import { scenarioResult, summarize, type ScenarioResult, type ScenarioTimings, type StrategyOutcome, type WorkerPhase } from './report.ts';
import { scenarios } from './scenarios.ts';
import { defaultApiserver } from './server/Apiserver.ts';
import { defaultDns } from './server/DnsServer.ts';
import { defaultLifecycle } from './sim/Cluster.ts';
import { runStrategy, type RunOptions } from './sim/Fleet.ts';
import type { ChartRun } from './svg.ts';
import { defaultStrategies, strategies } from './sim/strategies.ts';
import { dnsCacheDefaults } from '../src/dns/DnsCache.ts';
import { defaultOptions } from '../src/options/BalancerOptions.ts';

export interface FleetArgs {
  scenario: string;
  clients: number;
  apiservers: number;
  seed: number;
  minutes: number;
  /** Only these strategies (default: the scenario's). */
  strategies?: readonly string[];
  /** kube-balancer's `dns.minTtl`, ms (default: the library's). */
  minTtlMs?: number;
  /** The SRV record's TTL, s. */
  dnsTtl?: number;
  /** kube-apiserver's `--shutdown-delay-duration`, s (default 0: NotAcceptingNewRequest once the hooks are done). */
  shutdownDelaySeconds?: number;
  /** kube-balancer's `probe.intervalMs` (default: the library's). */
  probeIntervalMs?: number;
  /** Strategies run at once, each in a worker thread; 1: one after another, in this thread. */
  parallel?: number;
}

export function cpuSeconds(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1e6;
}

/** Milliseconds since the epoch, comparable between threads (each has its own `performance.timeOrigin`). */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

function runOptions(args: FleetArgs): RunOptions {
  return {
    clients: args.clients,
    apiservers: args.apiservers,
    seed: args.seed,
    minutes: args.minutes,
    startSpreadMs: 10_000,
    workload: defaultWorkload,
    // NotAcceptingNewRequest fires once both the delay has passed and the pre-shutdown hooks are done.
    apiserver: { ...defaultApiserver, hooksMs: Math.max(defaultApiserver.hooksMs, (args.shutdownDelaySeconds ?? 0) * 1000) },
    lifecycle: defaultLifecycle,
    dns: { ...defaultDns, ...(args.dnsTtl !== undefined ? { ttl: args.dnsTtl } : {}) },
    minTtlMs: args.minTtlMs ?? dnsCacheDefaults.minTtl,
    probeIntervalMs: args.probeIntervalMs ?? defaultOptions.probe.intervalMs,
  };
}

/**
 * Runs one scenario under each strategy (each in its own world, same seed), `parallel` at a time in
 * worker threads (default: as many as there are cores).
 */
export async function runScenario(args: FleetArgs): Promise<{ result: ScenarioResult; charts: ChartRun[]; timings: ScenarioTimings }> {
  const scenario = scenarios[args.scenario];
  if (!scenario) throw new Error(`unknown scenario ${args.scenario}; one of ${Object.keys(scenarios).join(', ')}`);
  const options = runOptions(args);
  const ids = args.strategies ?? scenario.strategies ?? defaultStrategies;
  for (const id of ids) if (!strategies[id]) throw new Error(`unknown strategy ${id}; one of ${Object.keys(strategies).join(', ')}`);
  const cpu = process.cpuUsage();
  const mainCpu = process.threadCpuUsage();
  const began = epochMs();
  const parallel = Math.max(1, Math.min(args.parallel ?? availableParallelism(), ids.length));
  const outcomes = new Array<StrategyOutcome>(ids.length);
  // Longest first, by what each costs (5,000 clients × 10 minutes: the default policy ~77 s of CPU,
  // round robin ~66 s, an L4 run ~5 s): on two cores the default runs alone on one while round robin
  // and then both L4 runs fill the other, so both end together (round robin before the default left
  // the default plus an L4 run on one core, ~5 s longer). The results keep the scenario's order.
  const cost = (id: string): number => {
    const strategy = strategies[id]!;
    return strategy.kind === 'l4' ? 0 : strategy.policy === 'round-robin' ? 1 : 2;
  };
  const order = ids.map((_, i) => i).sort((a, b) => cost(ids[b]!) - cost(ids[a]!));
  let next = 0;
  let workerCpu = 0;
  const phases: WorkerPhase[] = [];
  const lane = async (): Promise<void> => {
    while (next < ids.length) {
      const i = order[next++]!;
      const id = ids[i]!;
      if (parallel === 1) {
        const run = await runStrategy(scenario, strategies[id]!, options);
        const { seconds, servers, requests, watches, ready, dns } = run.meter;
        outcomes[i] = { id, result: summarize(run), chart: { label: run.strategy.label, marks: run.marks, series: { seconds, servers, requests, watches, ready, dns } } };
      } else {
        const spawned = epochMs();
        const outcome = await inWorker(args.scenario, id, options);
        const received = epochMs();
        const t = outcome.timings!;
        const at = (ms: number): number => (ms - began) / 1000;
        phases.push({ id, spawned: at(spawned), started: at(t.startedAt), posted: at(t.postedAt), received: at(received), loadCpuSeconds: t.loadCpuSeconds, runCpuSeconds: outcome.result.cpuSeconds, threadCpuSeconds: t.threadCpuSeconds });
        delete outcome.timings;
        outcomes[i] = outcome;
        workerCpu += outcome.result.cpuSeconds;
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, lane));
  const processCpu = cpuSeconds(process.cpuUsage(cpu));
  const wallSeconds = (epochMs() - began) / 1000;
  const timings: ScenarioTimings = { wallSeconds, processCpuSeconds: processCpu, mainThreadCpuSeconds: cpuSeconds(process.threadCpuUsage(mainCpu)), workers: phases };
  return { result: scenarioResult(scenario, options, outcomes, wallSeconds, parallel === 1 ? processCpu : workerCpu), charts: outcomes.map((o) => o.chart), timings };
}

const YOUNG_GENERATION_MB = 192;

function inWorker(scenario: string, strategy: string, options: RunOptions): Promise<StrategyOutcome> {
  return new Promise((resolve, reject) => {
    // A young generation of ~64 MB semi-spaces (as `npm run fleet` gives the main thread): a probe's
    // or request's objects live a few simulated seconds, longer than V8's default nursery holds them
    // with thousands of clients, and promoting them all was a fifth of a run's CPU.
    const worker = new Worker(new URL('./worker.ts', import.meta.url), { workerData: { scenario, strategy, options }, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
    worker.once('message', (outcome: StrategyOutcome) => resolve(outcome));
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the worker for ${strategy} exited with ${code}`));
    });
  });
}
