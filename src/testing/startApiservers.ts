import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import type { ApiserverInstance } from '../../fixtures/apiserver/index.ts';
import { BalancerError } from '../errors.ts';
import { validateTestingOptions } from './options.ts';
import { requirePackages } from './packages.ts';
import type { Apiservers, SimulatedApiserver, StartApiserversOptions } from './types.ts';

/**
 * Starts `count` simulated kube-apiservers (HTTP/2 and HTTP/1.1 over TLS, one shared store, the
 * `default/kubernetes` EndpointSlice kept up to date), with certificates made now, and writes a
 * kubeconfig for them. Needs the optional packages `ws` and `jsrsasign` (`ERR_MISSING_PACKAGE`
 * otherwise); a wrong option is `ERR_INVALID_OPTION` naming the field.
 *
 * ```ts
 * const apiservers = await startApiservers({ count: 3 });
 * const balancer = createBalancer({ target: apiservers.target, tls: { ca: apiservers.ca, servername: 'kubernetes.default.svc' } });
 * await apiservers.servers[1]!.crash();
 * await apiservers.close();
 * ```
 */
export async function startApiservers(options: StartApiserversOptions = {}): Promise<Apiservers> {
  const o = validateTestingOptions(options);
  // The simulator imports `ws` at load and the run-time PKI `jsrsasign`: both are optional peers.
  await requirePackages(o.pki ? ['ws'] : ['ws', 'jsrsasign'], 'kube-balancer/testing');
  const [{ ApiserverCluster }, { generatePki }] = await Promise.all([import('../../fixtures/apiserver/index.ts'), import('../../fixtures/certs/index.ts')]);
  const pki = o.pki ?? (await generatePki({ ips: o.hosts, client: 'kube-balancer-testing' }));
  const token = o.token ?? `kb-test-${randomBytes(16).toString('hex')}`;
  let cluster;
  try {
    cluster = await ApiserverCluster.start({ ...o.simulator, hosts: o.hosts, port: o.port, pki, tokens: { [token]: 'sim-admin' }, h2: o.h2, anonymous: o.anonymous });
  } catch (error) {
    const { code, address } = error as NodeJS.ErrnoException & { address?: string };
    if (code === 'EADDRNOTAVAIL') {
      throw new BalancerError(
        'ERR_INVALID_OPTION',
        `options.hosts: ${address ?? 'an address'} is not a local address on this machine (macOS: sudo ifconfig lo0 alias ${address ?? '127.0.0.2'} up; or pass hosts that are)`,
        { cause: error },
      );
    }
    throw error;
  }
  let kubeconfigPath: string;
  let ownFile = false;
  const kubeconfig = cluster.kubeconfig(o.kubeconfig);
  try {
    if (o.kubeconfigPath === undefined) {
      kubeconfigPath = await cluster.kubeconfigFile(o.kubeconfig);
    } else {
      // `wx`: never overwrite a file, least of all someone's real ~/.kube/config.
      await writeFile(o.kubeconfigPath, kubeconfig, { mode: 0o600, flag: 'wx' });
      kubeconfigPath = o.kubeconfigPath;
      ownFile = true;
    }
  } catch (error) {
    await cluster.close();
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new BalancerError('ERR_INVALID_OPTION', `options.kubeconfigPath ${JSON.stringify(o.kubeconfigPath)} already exists: pick a new path (it is never overwritten)`, { cause: error });
    }
    throw error;
  }
  const servers = cluster.instances.map((instance, i) => simulated(`apiserver-${i + 1}`, instance));
  let closing: Promise<void> | undefined;
  return {
    kubeconfig,
    kubeconfigPath,
    target: cluster.target,
    server: cluster.instances[0]!.url,
    ca: pki.ca,
    token,
    authHeaders: cluster.authHeaders,
    servers,
    cluster,
    close: () =>
      (closing ??= (async () => {
        await cluster.close();
        if (ownFile) await rm(kubeconfigPath, { force: true });
      })()),
  };
}

function simulated(name: string, instance: ApiserverInstance): SimulatedApiserver {
  return {
    name,
    host: instance.host,
    port: instance.port,
    address: instance.authority,
    url: instance.url,
    get state() {
      return instance.state;
    },
    get requests() {
      return instance.counters.requests;
    },
    instance,
    crash: () => instance.crash(),
    restart: async () => {
      await instance.restart();
      await instance.waitForState('running');
    },
    drain: (shutdown = {}) => instance.shutdown(shutdown),
    slow: (ms) => {
      if (!(Number.isFinite(ms) && ms >= 0)) throw new BalancerError('ERR_INVALID_OPTION', `slow(ms): ms must be a number of milliseconds ≥ 0; got ${String(ms)}`);
      instance.setModes({ latencyMs: ms });
    },
    blackHole: (on = true) => {
      if (typeof on !== 'boolean') throw new BalancerError('ERR_INVALID_OPTION', `blackHole(on): on must be true or false; got ${typeof on}`);
      instance.setModes({ blackHole: on });
    },
  };
}
