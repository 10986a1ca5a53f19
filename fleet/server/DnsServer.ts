import type { DnsAnswer } from '../../src/dns/DnsClient.ts';
import { canonical } from '../../src/dns/names.ts';
import type { QueryType, SrvData } from '../../src/dns/wire.ts';
import type { Scheduler } from '../sim/Scheduler.ts';
import type { Apiserver } from './Apiserver.ts';

export const SRV_NAME = '_https._tcp.kubernetes-headless.default.svc.cluster.local.';

export interface DnsServerConfig {
  /** TTL of the SRV answer (and its glue), s. CoreDNS's kubernetes plugin defaults to 5. */
  ttl: number;
  /**
   * From an apiserver's `/readyz` change until the SRV answer shows it: the kubelet's readiness
   * probe (kubeadm: every 1 s, 3 failures) and the EndpointSlice reaching CoreDNS.
   */
  publishDelayMs: number;
}

export const defaultDns: DnsServerConfig = { ttl: 5, publishDelayMs: 3_000 };

/**
 * The cluster DNS serving `kubernetes-headless` as CoreDNS would: one SRV record per ready
 * apiserver, with glue, equal weights (CoreDNS gives each 100/n). It counts every query that
 * reaches it, answered or not, and can be made silent (an outage: queries time out).
 */
export class DnsServer {
  readonly config: DnsServerConfig;
  readonly #clock: Scheduler;
  readonly #servers: readonly Apiserver[];
  #published: Apiserver[] = [];
  #answer: DnsAnswer | undefined;
  down = false;
  /** Queries per simulated second. */
  onQuery: (() => void) | undefined;

  constructor(config: DnsServerConfig, clock: Scheduler, servers: readonly Apiserver[]) {
    this.config = config;
    this.#clock = clock;
    this.#servers = servers;
    this.#published = servers.filter((s) => s.ready);
    for (const server of servers) this.watch(server);
  }

  /** Follows a server's readiness (for servers added later too). */
  watch(server: Apiserver): void {
    server.onReadiness(() => this.#clock.setTimeout(() => this.#republish(), this.config.publishDelayMs));
  }

  /**
   * Asks one query; `undefined` when the server does not answer (an outage). The answer is what the
   * wire would carry, already decoded as DnsClient would decode it.
   */
  query(name: string, type: QueryType): DnsAnswer | undefined {
    this.onQuery?.();
    if (this.down) return undefined;
    if (type !== 'SRV' || canonical(name) !== canonical(SRV_NAME)) return { name: canonical(name), type, kind: 'NXDOMAIN', addresses: [], srv: [], glue: new Map(), ttl: this.config.ttl, transport: 'udp' };
    return (this.#answer ??= this.#build());
  }

  #republish(): void {
    this.#published = this.#servers.filter((s) => s.ready);
    this.#answer = undefined;
  }

  #build(): DnsAnswer {
    const n = this.#published.length;
    const srv: SrvData[] = [];
    const glue = new Map<string, readonly string[]>();
    for (const server of this.#published) {
      const target = `${server.address.replaceAll('.', '-')}.kubernetes-headless.default.svc.cluster.local`;
      srv.push({ priority: 0, weight: Math.floor(100 / n), port: 6443, target });
      glue.set(canonical(target), [server.address]);
    }
    if (n === 0) return { name: canonical(SRV_NAME), type: 'SRV', kind: 'NODATA', addresses: [], srv: [], glue: new Map(), ttl: this.config.ttl, transport: 'udp' };
    return { name: canonical(SRV_NAME), type: 'SRV', kind: 'records', addresses: [], srv, glue, ttl: this.config.ttl, transport: 'udp' };
  }
}
