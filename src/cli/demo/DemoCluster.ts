import { ApiserverCluster, type ApiserverInstance } from '../../../fixtures/apiserver/index.ts';
import { generatePki } from '../../../fixtures/certs/index.ts';
import { DnsTestServer } from '../../../fixtures/dns/DnsTestServer.ts';
import { IN_CLUSTER_SRV_NAME } from '../../kube/defaultTarget.ts';
import { L4Proxy } from './L4Proxy.ts';

/** The name in the kubeconfig, and the one every apiserver certificate is verified against. */
export const SERVER_NAME = 'kubernetes.default.svc';

/** Who is who at the apiservers: each client authenticates with its own token, so the servers can tell their requests apart. */
export const USERS = { kubeBalancer: 'demo-kube-balancer', oneConnection: 'demo-one-connection' } as const;
export type ClientKey = keyof typeof USERS;
const TOKENS: Record<ClientKey, string> = { kubeBalancer: 'demo-token-kube-balancer', oneConnection: 'demo-token-one-connection' };

export interface Apiserver {
  /** `apiserver-1`, … */
  name: string;
  /** `127.0.0.2:port`. */
  address: string;
  instance: ApiserverInstance;
}

/**
 * What `npm run demo` runs against: simulated kube-apiservers on 127.0.0.2… sharing one port and one
 * store, a DNS server that lists them under the headless Service's SRV name with A glue, and an L4
 * load balancer in front of them.
 */
export class DemoCluster {
  readonly dns: DnsTestServer;
  readonly cluster: ApiserverCluster;
  readonly apiservers: Apiserver[];
  /** The CA the apiservers' certificates chain to: made for this run, like every key of the demo. */
  readonly ca: string;
  /** The L4 load balancer: round robin per connection over the apiservers. */
  readonly l4: L4Proxy<Apiserver>;

  private constructor(dns: DnsTestServer, cluster: ApiserverCluster, apiservers: Apiserver[], l4: L4Proxy<Apiserver>) {
    this.dns = dns;
    this.cluster = cluster;
    this.ca = cluster.pki.ca;
    this.apiservers = apiservers;
    this.l4 = l4;
  }

  static async start(servers: number): Promise<DemoCluster> {
    const hosts = Array.from({ length: servers }, (_, i) => `127.0.0.${i + 2}`);
    // The package ships no key: the demo's CA and certificates are made now and live only in memory.
    const pki = await generatePki();
    const dns = await DnsTestServer.start();
    let cluster: ApiserverCluster;
    try {
      cluster = await ApiserverCluster.start({ hosts, pki, tokens: Object.fromEntries(Object.entries(TOKENS).map(([k, token]) => [token, USERS[k as ClientKey]])) });
    } catch (error) {
      await dns.close();
      throw error;
    }
    const weight = Math.floor(100 / servers); // CoreDNS's weights for a headless Service
    for (const [i, instance] of cluster.instances.entries()) {
      const target = `apiserver-${i + 1}.kubernetes-headless.default.svc.cluster.local.`;
      dns.add(
        { name: IN_CLUSTER_SRV_NAME, type: 'SRV', ttl: 5, data: { priority: 0, weight, port: instance.port, target } },
        { name: target, type: 'A', ttl: 5, data: instance.host },
      );
    }
    const apiservers = cluster.instances.map((instance, i) => ({ name: `apiserver-${i + 1}`, address: instance.authority, instance }));
    try {
      return new DemoCluster(dns, cluster, apiservers, await L4Proxy.start(apiservers));
    } catch (error) {
      await Promise.all([cluster.close(), dns.close()]);
      throw error;
    }
  }

  /** `dns+srv:///_https._tcp.kubernetes-headless.default.svc.cluster.local.` */
  get target(): string {
    return `dns+srv:///${IN_CLUSTER_SRV_NAME}`;
  }

  /** The kubeconfig's server: a name only the balancer's target and the clients' TLS settings give meaning to. */
  get server(): string {
    return `https://${SERVER_NAME}:${this.cluster.port}`;
  }

  /** The DNS server, as `dns.servers` takes it. */
  get dnsServer(): string {
    return this.dns.address;
  }

  /** A kubeconfig (YAML) for one client: the cluster's CA, `server`, and that client's token. */
  kubeconfig(client: ClientKey): string {
    return this.cluster.kubeconfig({ server: this.server, token: TOKENS[client] });
  }

  async close(): Promise<void> {
    await Promise.all([this.l4.close(), this.cluster.close(), this.dns.close()]);
  }
}
