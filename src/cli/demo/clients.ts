// The two clients the demo compares. Both are the unmodified @kubernetes/client-node with the same
// kubeconfig; only what carries its requests differs, so the comparison is about where they go.
import type * as ClientNode from '@kubernetes/client-node';
import type * as Undici from 'undici';
import { attachToKubeConfig, type Balancer } from '../../index.ts';
import { clientNodeUndici } from '../../kube/peers.ts';
import { endpointKey } from '../../net/endpointKey.ts';
import { SERVER_NAME, type Apiserver, type DemoCluster } from './DemoCluster.ts';
import type { L4Proxy } from './L4Proxy.ts';

export type ClientNodeModule = typeof ClientNode;

/** What one client has at one apiserver right now. */
export interface ClientLoad {
  /** Requests sent and not yet answered (watches excluded). */
  inFlight: number;
  /** Open watches. */
  watches: number;
  /** How the client sees the apiserver: kube-balancer's endpoint state, or whether the one connection goes there. */
  state: string;
}

export interface DemoClient {
  label: string;
  /** How its requests travel, for the output. */
  via: string;
  /** The same, in a few words, for the chart. */
  short: string;
  kubeConfig: ClientNode.KubeConfig;
  /** Informers watch through this, so open watches can be counted. */
  watch: ClientNode.Watch;
  /** What it has at each of `apiservers` right now, in their order. */
  load(apiservers: readonly Apiserver[]): ClientLoad[];
  /** kube-balancer only: the balancer under it. */
  balancer?: Balancer;
  close(): Promise<void>;
}

/**
 * A client-node `KubeConfig` whose requests (API calls, watches, informers) all go through
 * `dispatcher`: client-node asks `applySecurityAuthentication` for each request's credentials and
 * dispatcher, so this override is the documented hook.
 */
function kubeConfigThrough(k8s: ClientNodeModule, yaml: string, dispatcher: Undici.Dispatcher): ClientNode.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromString(yaml);
  const authenticate = kc.applySecurityAuthentication.bind(kc);
  kc.applySecurityAuthentication = async (context) => {
    await authenticate(context);
    context.setDispatcher(dispatcher);
  };
  return kc;
}

/**
 * client-node through kube-balancer, attached the documented way: endpoints from the SRV records of
 * the embedded DNS server, TLS and credentials from the kubeconfig. Its server is a name only the
 * balancer gives meaning to here, so it is kept out of the endpoint set (no last resort). The demo's
 * time is compressed, its slow start with it.
 */
export async function kubeBalancerClient(k8s: ClientNodeModule, demo: DemoCluster, slowStartMs: number): Promise<DemoClient> {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromString(demo.kubeconfig('kubeBalancer'));
  const attachment = await attachToKubeConfig(kubeConfig, { target: demo.target, dns: { servers: [demo.dnsServer] }, bootstrap: { lastResort: false }, slowStartMs });
  if (!attachment.attached || !attachment.balancer) throw new Error(`kube-balancer did not attach to the kubeconfig: ${attachment.reason ?? 'no reason given'}`);
  const balancer = attachment.balancer;
  return {
    label: 'kube-balancer',
    via: '@kubernetes/client-node with attachToKubeConfig: each request to the next apiserver the SRV records list',
    short: 'client-node through kube-balancer',
    kubeConfig,
    watch: new k8s.Watch(kubeConfig),
    balancer,
    load(apiservers) {
      // One snapshot of the balancer's endpoints for all the apiservers.
      const endpoints = new Map(balancer.endpoints().map((e) => [endpointKey(e), e]));
      return apiservers.map((apiserver) => {
        const e = endpoints.get(apiserver.address);
        if (!e) return { inFlight: 0, watches: 0, state: 'unknown' };
        return { inFlight: Math.max(0, e.inFlight - e.streams), watches: e.streams, state: e.state };
      });
    },
    close: () => attachment.detach(),
  };
}

/**
 * client-node over one HTTP/2 connection through an L4 load balancer (haproxy `mode tcp`, IPVS, a
 * cloud NLB), which picks an apiserver per connection, never per request: every request goes where
 * the connection went, until it ends; then the next connection goes to whichever apiserver the
 * load balancer picks then.
 */
export function oneConnectionClient(k8s: ClientNodeModule, demo: DemoCluster, proxy: L4Proxy): DemoClient {
  // The copy client-node's `fetch` runs on: a dispatcher from another copy loses response headers.
  const undici = clientNodeUndici();
  if (!undici) throw new Error('@kubernetes/client-node has no undici of its own to build the connection from');
  const client = new undici.Client(proxy.url, { allowH2: true, connect: { ca: demo.ca, servername: SERVER_NAME } });
  const kubeConfig = kubeConfigThrough(k8s, demo.kubeconfig('oneConnection'), client);
  const watch = countingWatch(k8s, kubeConfig);
  return {
    label: 'one connection',
    via: '@kubernetes/client-node over one HTTP/2 connection through an L4 load balancer (round robin per connection)',
    short: 'client-node over one connection, through an L4 load balancer',
    kubeConfig,
    watch,
    load(apiservers) {
      return apiservers.map((apiserver) => {
        if (proxy.connections(apiserver) === 0) return { inFlight: 0, watches: 0, state: '-' };
        const open = watch.open;
        return { inFlight: Math.max(0, client.stats.running - open), watches: open, state: 'pinned' };
      });
    },
    close: () => client.close(),
  };
}

/** A client-node `Watch` that knows how many of its watches are open. */
function countingWatch(k8s: ClientNodeModule, kc: ClientNode.KubeConfig): ClientNode.Watch & { open: number } {
  class CountingWatch extends k8s.Watch {
    open = 0;
    override async watch(path: string, query: Record<string, string | number | boolean | undefined>, callback: (phase: string, object: unknown, raw: unknown) => void, done: (error: unknown) => void): Promise<AbortController> {
      this.open++;
      let ended = false;
      return super.watch(path, query, callback, (error) => {
        if (!ended) this.open--;
        ended = true;
        done(error);
      });
    }
  }
  return new CountingWatch(kc);
}
