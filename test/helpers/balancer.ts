// What most end-to-end tests start with: HTTPS test servers, a balancer over them, GETs through it.
import * as undici from 'undici';
import { APISERVER_NAME, certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget, type TestServer, type TestServerOptions } from '../../fixtures/server/TestServer.ts';
import { createBalancer, type Balancer, type BalancerOptions } from '../../src/index.ts';

/** The origin requests are sent to; the servers' certificate is for this name. */
export const ORIGIN = `https://${APISERVER_NAME}:6443`;

export const HOSTS = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];

/** A GET through the balancer, its body read; resolves with the status. */
export async function get(balancer: Balancer, path = '/api/v1/pods'): Promise<number> {
  const res = await undici.request(`${ORIGIN}${path}`, { dispatcher: balancer });
  await res.body.dump();
  return res.statusCode;
}

export interface Cluster {
  servers: TestServer[];
  balancer: Balancer;
  /** Closes the balancer, then the servers. */
  close: () => Promise<void>;
}

/**
 * Servers on `HOSTS` and a balancer over them that trusts the test CA. Hedging is off unless asked
 * for: these tests count requests exactly, and a hedge on a busy machine would add one.
 */
export async function cluster(options: Partial<BalancerOptions> = {}, serverOptions: Omit<TestServerOptions, 'host'> = {}): Promise<Cluster> {
  const servers = await startServers(HOSTS, serverOptions);
  const balancer = createBalancer({ target: staticTarget(servers), origin: ORIGIN, tls: { ca: certs.ca }, hedge: false, ...options });
  return {
    servers,
    balancer,
    close: async () => {
      await balancer.close();
      await Promise.all(servers.map((s) => s.close()));
    },
  };
}
