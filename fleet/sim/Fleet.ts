import { dnsCacheDefaults, DnsCache } from '../../src/dns/DnsCache.ts';
import type { ApiClient } from '../../src/resolver/ApiClient.ts';
import { DnsResolver } from '../../src/resolver/DnsResolver.ts';
import { EndpointSliceResolver } from '../../src/resolver/EndpointSliceResolver.ts';
import { srvLookup } from '../../src/resolver/dnsLookups.ts';
import type { Resolver } from '../../src/resolver/Resolver.ts';
import { StaticResolver } from '../../src/resolver/StaticResolver.ts';
import { L4Balancer, L4Client } from '../client/L4Client.ts';
import type { Transport } from '../client/Transport.ts';
import { Workload, type WorkloadConfig } from '../client/Workload.ts';
import { KubeClient } from '../kube/KubeClient.ts';
import { SimApiClient } from '../kube/SimApiClient.ts';
import { SimDnsClient } from '../kube/SimDnsClient.ts';
import type { ApiserverConfig } from '../server/Apiserver.ts';
import { DnsServer, SRV_NAME, type DnsServerConfig } from '../server/DnsServer.ts';
import { defaultSlices, EndpointSlices } from '../server/EndpointSlices.ts';
import { Cluster, type LifecycleConfig } from './Cluster.ts';
import { Meter } from './Meter.ts';
import { seeded, withSeededMathRandom } from './random.ts';
import { Scheduler } from './Scheduler.ts';
import type { Strategy } from './strategies.ts';

export interface RunOptions {
  clients: number;
  apiservers: number;
  seed: number;
  minutes: number;
  /** Clients start spread over this many ms (a fleet does not boot in one millisecond). */
  startSpreadMs: number;
  workload: WorkloadConfig;
  apiserver: ApiserverConfig;
  lifecycle: LifecycleConfig;
  dns: DnsServerConfig;
  /** `dns.minTtl` of every kube-balancer client, ms. */
  minTtlMs: number;
  /** `probe.intervalMs` of every kube-balancer client. */
  probeIntervalMs: number;
}

/** What a scenario can do to the world while it runs. */
export interface World {
  readonly clock: Scheduler;
  readonly cluster: Cluster;
  readonly dns: DnsServer;
  readonly options: RunOptions;
  /** A moment worth a line on the charts. */
  mark(label: string): void;
  /** The disruption is over (the last apiserver is back): time to settle is counted from now. */
  settled(): void;
}

export interface Scenario {
  id: string;
  title: string;
  /** Apiservers beyond `--apiservers` that the scenario adds while it runs. */
  extraServers?: number;
  /** Adjusts the options (e.g. a DNS TTL) before the run. */
  configure?(options: RunOptions): RunOptions;
  /** The strategies compared; default: the four of issue 15. */
  strategies?: readonly string[];
  script(world: World): void;
}

export interface StrategyRun {
  strategy: Strategy;
  meter: Meter;
  marks: Array<{ second: number; label: string }>;
  /** Second from which settling is measured, or undefined when the scenario has none. */
  settleFrom: number | undefined;
  /** Retries of the transports (kube-balancer's on another endpoint; Go's GOAWAY replays). */
  retries: number;
  events: number;
  cpuSeconds: number;
  wallSeconds: number;
  heapMb: number;
}

/** Runs one scenario with one strategy: its own apiservers, DNS and clients, on its own virtual clock. */
export async function runStrategy(scenario: Scenario, strategy: Strategy, base: RunOptions): Promise<StrategyRun> {
  const options = scenario.configure ? scenario.configure(base) : base;
  // This thread's CPU time only: strategies may run side by side in worker threads.
  const cpu = process.threadCpuUsage();
  const wall = performance.now();
  const run = await withSeededMathRandom(options.seed, () => simulate(scenario, strategy, options));
  const used = process.threadCpuUsage(cpu);
  return { ...run, cpuSeconds: (used.user + used.system) / 1e6, wallSeconds: (performance.now() - wall) / 1000, heapMb: process.memoryUsage().heapUsed / 2 ** 20 };
}

async function simulate(scenario: Scenario, strategy: Strategy, options: RunOptions): Promise<Omit<StrategyRun, 'cpuSeconds' | 'wallSeconds' | 'heapMb'>> {
  const clock = new Scheduler();
  const seconds = Math.round(options.minutes * 60);
  const totalServers = options.apiservers + (scenario.extraServers ?? 0);
  const meter = new Meter(seconds, totalServers, () => clock.now());
  const serverConfig: ApiserverConfig = { ...options.apiserver, goawayChance: strategy.goawayChance ?? 0 };
  const cluster = new Cluster(clock, seeded(options.seed, 1), meter, () => serverConfig, options.lifecycle);
  for (let i = 0; i < options.apiservers; i++) cluster.add(true);
  const dns = new DnsServer(options.dns, clock, cluster.servers);
  dns.onQuery = () => meter.dnsQuery();
  cluster.onAdded((server) => dns.watch(server));
  const balancer = new L4Balancer(cluster.servers, clock, seeded(options.seed, 2));
  // Only where a strategy reads it: its bookmarks and events are events of their own.
  let slices: EndpointSlices | undefined;
  if (strategy.discovery === 'endpointslice') {
    const created = new EndpointSlices(defaultSlices, clock, seeded(options.seed, 4), cluster.servers);
    cluster.onAdded((server) => created.watch(server));
    slices = created;
  }
  const marks: StrategyRun['marks'] = [];
  let settleFrom: number | undefined;
  const world: World = {
    clock,
    cluster,
    dns,
    options,
    mark: (label) => marks.push({ second: clock.now() / 1000, label }),
    settled: () => {
      settleFrom = Math.ceil(clock.now() / 1000);
      marks.push({ second: clock.now() / 1000, label: 'settle from here' });
    },
  };

  const transports: Transport[] = [];
  const startRandom = seeded(options.seed, 3);
  for (let c = 0; c < options.clients; c++) {
    clock.setTimeout(() => {
      const transport = strategy.kind === 'l4' ? new L4Client(balancer, clock) : kubeClient({ clock, cluster, dns, balancer, slices }, strategy, options, c);
      if (transport instanceof KubeClient) {
        transport.onSet = discoveryMeter(cluster, meter, clock);
        transport.onDrain = drainMeter(cluster, meter, clock);
      }
      transports.push(transport);
      new Workload(clock, seeded(options.seed, c, 2), meter, options.workload, transport).start();
    }, startRandom() * options.startSpreadMs);
  }
  const sample = (second: number): void => {
    cluster.servers.forEach((server, i) => meter.sample(second, i, server.watchCount, server.ready, server.discoveryWatchCount));
    if (second + 1 < seconds) clock.at((second + 2) * 1000, () => sample(second + 1));
  };
  clock.at(1000, () => sample(0));
  scenario.script(world);
  await clock.run(seconds * 1000);
  let retries = 0;
  for (const transport of transports) {
    retries += transport.retries;
    transport.close();
  }
  return { strategy, meter, marks, settleFrom, retries, events: clock.events };
}

/** Records, per client, when an apiserver that became ready during the run first appears in its set. */
function discoveryMeter(cluster: Cluster, meter: Meter, clock: Scheduler): (addresses: readonly { address: string }[]) => void {
  const known = new Set<string>();
  return (addresses) => {
    for (const { address } of addresses) {
      if (known.has(address)) continue;
      known.add(address);
      const server = cluster.byAddress.get(address);
      if (!server || server.readySince <= 0) continue;
      let times = meter.discovery.get(server.index);
      if (!times) meter.discovery.set(server.index, (times = []));
      times.push(clock.now() - server.readySince);
    }
  };
}

/** Records, per client, how long after an apiserver's SIGTERM the client stopped sending it new requests (drain or ejection). */
function drainMeter(cluster: Cluster, meter: Meter, clock: Scheduler): (address: string) => void {
  const seen = new Map<string, number>();
  return (address) => {
    const server = cluster.byAddress.get(address);
    if (!server || !Number.isFinite(server.terminatedAt) || seen.get(address) === server.terminatedAt) return;
    // Only while this shutdown is under way (SIGTERM until the replacement is ready).
    if (server.state === 'ready' || server.state === 'starting') return;
    seen.set(address, server.terminatedAt);
    meter.drainSeen.push(clock.now() - server.terminatedAt);
  };
}

const DNS_CACHE_ENTRIES = 16;

/** What a kube-balancer client's resolver reads: DNS, or the EndpointSlice through the bootstrap server (an L4 balancer). */
interface Discovery {
  clock: Scheduler;
  cluster: Cluster;
  dns: DnsServer;
  balancer: L4Balancer;
  slices: EndpointSlices | undefined;
}

function kubeClient({ clock, cluster, dns, balancer, slices }: Discovery, strategy: Strategy, options: RunOptions, c: number): KubeClient {
  const random = seeded(options.seed, c, 1);
  let resolver: Resolver;
  if (slices) {
    // The library's ApiClient, as far as the resolver uses it (`get`, `close`), on a connection of its own.
    const api = new SimApiClient(new L4Client(balancer, clock), slices, clock) as unknown as ApiClient;
    resolver = new EndpointSliceResolver('default', 'kubernetes', api, clock, random);
  } else if (strategy.discovery === 'static') {
    resolver = new StaticResolver(cluster.servers.map((s) => ({ address: s.address, port: 6443 })));
  } else {
    const cacheOptions = { ...dnsCacheDefaults, minTtl: options.minTtlMs };
    // Room for the one SRV answer (glue included) a client's rounds use: the library's 8,192-entry
    // default is sized for any SRV set, and preallocating it for every client was a tenth of a run.
    const cache = new DnsCache(new SimDnsClient(dns, clock), clock, cacheOptions, random, DNS_CACHE_ENTRIES);
    resolver = new DnsResolver(srvLookup(SRV_NAME), { clock, cache, maxStale: cacheOptions.maxStale, target: `dns+srv:///${SRV_NAME}` });
  }
  return new KubeClient(clock, random, cluster.byAddress, resolver, { policy: strategy.policy ?? 'round-robin', probeIntervalMs: options.probeIntervalMs });
}
