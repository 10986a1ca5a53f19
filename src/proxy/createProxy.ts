import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Balancer } from '../dispatcher/Balancer.ts';
import { BalancingAgent } from '../dispatcher/BalancingAgent.ts';
import { BalancerError } from '../errors.ts';
import { createKubeBalancer, type KubeBalancerOptions } from '../kube/createKubeBalancer.ts';
import type { KubeConfigLike } from '../kube/readKubeConfig.ts';
import type { BalancerStats } from '../observability/stats.ts';
import { adminAnswer, type ProxyCounters } from './admin.ts';
import { forward, type Upstream } from './forward.ts';
import { admit, isRefusal, type GuardRules } from './guard.ts';
import { isLoopback, listenOn } from './listen.ts';
import { sendStatus, sendStatusOnSocket } from './status.ts';
import { carryUpgrade } from './upgrade.ts';

export interface ProxyOptions {
  /** Balance the current context of this kubeconfig, with its credentials (token, token file, exec plugin, client certificate). */
  kubeConfig?: KubeConfigLike;
  /** Options of the balancer built for `kubeConfig` (`target`, policy, …). */
  balancerOptions?: KubeBalancerOptions;
  /** Instead of `kubeConfig`: a balancer of yours, its balanced `server` URL and the headers that authenticate (default none). */
  balancer?: Balancer;
  server?: string | URL;
  credentials?: () => Promise<Record<string, string>> | Record<string, string>;
  /** Address to listen on. Default `127.0.0.1`; anything not loopback needs `allowRemote`. */
  address?: string;
  /** TCP port; 0 picks a free one. Default 8001. */
  port?: number;
  /** Listen on this unix socket (mode 0600, in a directory of mode 0700) instead of TCP. */
  unixSocket?: string;
  /** Listen on a non-loopback `address`. Default false. */
  allowRemote?: boolean;
  /** The path the API is served under. Default `/`. */
  apiPrefix?: string;
  /**
   * Exact `host:port` values the `Host` header may carry, on top of the listener's own
   * (`127.0.0.1:PORT` and `localhost:PORT` on the default address). Not patterns: exactness is what stops DNS rebinding.
   */
  acceptHosts?: readonly string[];
  /** Paths refused with 403 (regular expressions on the decoded path after the API prefix). Default none. */
  rejectPaths?: ReadonlyArray<string | RegExp>;
  /** Methods refused with 403. Default none. */
  rejectMethods?: readonly string[];
}

export interface KubeProxy {
  /** `http://host:port` of a TCP listener; undefined on a unix socket. */
  readonly url: string | undefined;
  /** The port listened on (a free one was picked for 0); undefined on a unix socket. */
  readonly port: number | undefined;
  readonly balancer: Balancer;
  /** The proxy's own counters. */
  counters(): Readonly<ProxyCounters>;
  stats(): BalancerStats;
  /** Stops listening, ends every connection (streams included), and closes the balancer if the proxy built it. */
  close(): Promise<void>;
}

/**
 * A local HTTP/1.1 proxy to the Kubernetes API in front of a balancer: every request goes to the next
 * apiserver, with the kubeconfig's credentials added, as `kubectl proxy` does for one apiserver. Safe
 * by default: loopback only, an exact Host allow-list, cross-site requests (WebSockets included)
 * refused; see SECURITY.md "The proxy" and docs/proxy.md.
 */
export async function createProxy(options: ProxyOptions): Promise<KubeProxy> {
  const { upstream, balancer, owned } = await upstreamOf(options);
  const agent = new BalancingAgent(balancer);
  const counters: ProxyCounters = { requests: 0, upgrades: 0, refused: 0, unavailable: 0 };
  const rules: GuardRules = {
    acceptHosts: undefined,
    rejectPaths: (options.rejectPaths ?? []).map((p) => (typeof p === 'string' ? new RegExp(p) : p)),
    rejectMethods: new Set((options.rejectMethods ?? []).map((m) => m.toUpperCase())),
  };
  const apiPrefix = options.apiPrefix ?? '/';
  if (!apiPrefix.startsWith('/')) throw new BalancerError('ERR_INVALID_OPTION', `options.apiPrefix must start with "/"; got ${JSON.stringify(apiPrefix)}`);

  const server = createServer({ requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 90_000 }, (req, res) => {
    counters.requests++;
    const admitted = admit(req, rules, apiPrefix);
    if (isRefusal(admitted)) {
      counters.refused++;
      req.resume();
      return sendStatus(res, admitted.status, admitted.reason, admitted.message);
    }
    if (admitted.admin !== undefined) return admin(res, admitted.admin);
    forward(req, res, upstream, admitted.path, admitted.search).then(
      () => {
        if (res.statusCode === 503 || res.statusCode === 502) counters.unavailable++;
      },
      // The client broke off while its body was being read: nobody is left to answer.
      () => res.destroy(),
    );
  });
  server.timeout = 0;
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    counters.requests++;
    const admitted = admit(req, rules, apiPrefix);
    if (isRefusal(admitted)) {
      counters.refused++;
      return sendStatusOnSocket(socket, admitted.status, admitted.reason, admitted.message);
    }
    if (admitted.admin !== undefined) return sendStatusOnSocket(socket, 400, 'BadRequest', 'the admin endpoints take no upgrade');
    counters.upgrades++;
    carryUpgrade(req, socket, head, upstream, agent, admitted.path, admitted.search);
  });
  // CONNECT would make this an open forward proxy: refused whatever the target.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    counters.requests++;
    counters.refused++;
    sendStatusOnSocket(socket, 405, 'MethodNotAllowed', 'CONNECT is refused: this is an API proxy, not a forward proxy');
  });
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  const admin = (res: ServerResponse, name: string): void => {
    const answer = adminAnswer(name, balancer.stats(), counters);
    res.writeHead(answer.status, { 'content-type': answer.type, 'cache-control': 'no-store' }).end(answer.body);
  };

  const on = options.unixSocket !== undefined ? { unixSocket: options.unixSocket } : { address: options.address ?? '127.0.0.1', port: options.port ?? 8001, allowRemote: options.allowRemote ?? false };
  try {
    await listenOn(server, on);
  } catch (error) {
    if (owned) await balancer.close();
    throw error;
  }
  let url: string | undefined;
  let port: number | undefined;
  if (!('unixSocket' in on)) {
    port = (server.address() as AddressInfo).port;
    const host = on.address.includes(':') ? `[${on.address}]` : on.address;
    url = `http://${host}:${port}`;
    rules.acceptHosts = new Set([`${host}:${port}`, ...(isLoopback(on.address) ? [`localhost:${port}`] : []), ...(options.acceptHosts ?? []).map((h) => h.toLowerCase())]);
  } else if (options.acceptHosts) {
    rules.acceptHosts = new Set(options.acceptHosts.map((h) => h.toLowerCase()));
  }

  return {
    url,
    port,
    balancer,
    counters: () => ({ ...counters }),
    stats: () => balancer.stats(),
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
      agent.destroy();
      if (owned) await balancer.close();
    },
  };
}

async function upstreamOf(options: ProxyOptions): Promise<{ upstream: Upstream; balancer: Balancer; owned: boolean }> {
  if (options.kubeConfig) {
    if (options.balancer) throw new BalancerError('ERR_INVALID_OPTION', 'options.balancer and options.kubeConfig: give one of them');
    const built = await createKubeBalancer(options.kubeConfig, options.balancerOptions ?? {});
    return { upstream: { dispatcher: built.balancer, server: built.material.server, credentials: built.credentials }, balancer: built.balancer, owned: true };
  }
  if (!options.balancer || options.server === undefined) throw new BalancerError('ERR_INVALID_OPTION', 'options.kubeConfig, or options.balancer with options.server, is required');
  const source = options.credentials;
  const credentials = async (): Promise<Record<string, string>> => (source ? await source() : {});
  return { upstream: { dispatcher: options.balancer, server: new URL(options.server), credentials }, balancer: options.balancer, owned: false };
}
