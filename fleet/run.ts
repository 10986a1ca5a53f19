import { defaultWorkload } from './client/Workload.ts';
import { scenarioResult, type ScenarioResult } from './report.ts';
import { scenarios } from './scenarios.ts';
import { defaultApiserver } from './server/Apiserver.ts';
import { defaultDns } from './server/DnsServer.ts';
import { defaultLifecycle } from './sim/Cluster.ts';
import { runStrategy, type RunOptions, type StrategyRun } from './sim/Fleet.ts';
import { defaultStrategies, strategies } from './sim/strategies.ts';
import { dnsCacheDefaults } from '../src/dns/DnsCache.ts';

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
}

export function runOptions(args: FleetArgs): RunOptions {
  return {
    clients: args.clients,
    apiservers: args.apiservers,
    seed: args.seed,
    minutes: args.minutes,
    startSpreadMs: 10_000,
    workload: defaultWorkload,
    apiserver: defaultApiserver,
    lifecycle: defaultLifecycle,
    dns: { ...defaultDns, ...(args.dnsTtl !== undefined ? { ttl: args.dnsTtl } : {}) },
    minTtlMs: args.minTtlMs ?? dnsCacheDefaults.minTtl,
  };
}

/** Runs one scenario under each strategy in turn (each in its own world, same seed). */
export async function runScenario(args: FleetArgs): Promise<{ result: ScenarioResult; runs: StrategyRun[] }> {
  const scenario = scenarios[args.scenario];
  if (!scenario) throw new Error(`unknown scenario ${args.scenario}; one of ${Object.keys(scenarios).join(', ')}`);
  const options = runOptions(args);
  const ids = args.strategies ?? scenario.strategies ?? defaultStrategies;
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const runs: StrategyRun[] = [];
  for (const id of ids) {
    const strategy = strategies[id];
    if (!strategy) throw new Error(`unknown strategy ${id}`);
    runs.push(await runStrategy(scenario, strategy, options));
  }
  const used = process.cpuUsage(cpu);
  return { result: scenarioResult(scenario, options, runs, (performance.now() - wall) / 1000, (used.user + used.system) / 1e6), runs };
}
