import net from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { ApiserverCluster, type KubeconfigOptions } from '../../fixtures/apiserver/index.ts';
import { createProxy, type KubeProxy, type ProxyOptions } from '../../src/proxy/createProxy.ts';

/**
 * Three simulated apiservers and a proxy in front of them (a free port, the cluster's instances as the
 * target, 10 s to connect: on a loaded 2-core machine a TLS handshake has taken over the default 1 s).
 */
export async function proxiedCluster(
  options: Omit<ProxyOptions, 'kubeConfig'> = {},
  hosts?: readonly string[],
  kubeconfig: KubeconfigOptions = {},
): Promise<{ cluster: ApiserverCluster; proxy: KubeProxy; close: () => Promise<void> }> {
  const cluster = await ApiserverCluster.start(hosts ? { hosts } : {});
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig(kubeconfig));
  const proxy = await createProxy({ port: 0, ...options, kubeConfig: kc, balancerOptions: { target: cluster.target, connectTimeout: 10_000, ...options.balancerOptions } });
  return {
    cluster,
    proxy,
    close: async () => {
      await proxy.close();
      await cluster.close();
    },
  };
}

/** What the apiservers saw besides probes: the proof that a refused request went nowhere. */
export function apiRequests(cluster: ApiserverCluster): number {
  return cluster.instances.flatMap((i) => i.requests).filter((r) => !['/readyz', '/livez', '/healthz'].some((p) => r.path.startsWith(p))).length;
}

/** Sends `text` as is on a new TCP connection and returns everything read until the server closes (or 5 s). */
export function rawExchange(port: number, text: string, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, host, () => socket.write(text));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      // A keep-alive answer with a complete body is enough: no need to wait for the close.
      const all = Buffer.concat(chunks).toString();
      const length = /content-length: (\d+)/i.exec(all)?.[1];
      const split = all.indexOf('\r\n\r\n');
      if (length !== undefined && split !== -1 && Buffer.byteLength(all.slice(split + 4)) >= Number(length)) socket.end();
    });
    socket.setTimeout(5_000, () => socket.destroy(new Error('no answer in 5 s')));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString()));
  });
}

/** The status code of a raw HTTP answer. */
export function statusOf(answer: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
}
