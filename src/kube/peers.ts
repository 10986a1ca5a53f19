// The optional peers, @kubernetes/client-node and kubernetes-fluent-client, are loaded only when a
// helper that needs them is called: `import { createBalancer } from 'kube-balancer'` works without them.
import type * as ClientNodeModule from '@kubernetes/client-node';
import type * as Undici from 'undici';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { BalancerError } from '../errors.ts';
import type { UndiciModule } from '../options/BalancerOptions.ts';
import type { KubeConfigLike } from './readKubeConfig.ts';

type ClientNode = typeof ClientNodeModule;

/**
 * The undici copy client-node's `fetch` comes from: pools must be built from it, or undici 8 `fetch`
 * loses every response header (research: a dispatcher from another major silently breaks it).
 * `undefined` when client-node cannot be found, so the balancer falls back on its own undici.
 */
export function clientNodeUndici(): typeof Undici | undefined {
  try {
    return createRequire(import.meta.resolve('@kubernetes/client-node'))('undici') as typeof Undici;
  } catch {
    return undefined;
  }
}

export async function importClientNode(): Promise<ClientNode> {
  try {
    return await import('@kubernetes/client-node');
  } catch (error) {
    throw new BalancerError('ERR_KUBECONFIG', 'loadBalancedKubeConfig needs @kubernetes/client-node 2.x: npm install @kubernetes/client-node', { cause: error });
  }
}

/** kubernetes-fluent-client's own undici and client-node copies (it resolves both from its own folder). */
export async function fluentClientPeers(): Promise<{ undici: UndiciModule; KubeConfig: new () => FluentKubeConfig }> {
  let require: NodeJS.Require;
  try {
    require = createRequire(import.meta.resolve('kubernetes-fluent-client'));
  } catch (error) {
    throw new BalancerError('ERR_KUBECONFIG', 'attachToFluentClient needs kubernetes-fluent-client: npm install kubernetes-fluent-client', { cause: error });
  }
  const undici = require('undici') as UndiciModule;
  const clientNode = (await import(pathToFileURL(require.resolve('@kubernetes/client-node')).href)) as { KubeConfig: new () => FluentKubeConfig };
  return { undici, KubeConfig: clientNode.KubeConfig };
}

export type DispatchFunction = (this: unknown, opts: { origin?: string | URL | null }, handler: unknown) => boolean;

/** The `KubeConfig` of kubernetes-fluent-client's own client-node copy. */
interface FluentKubeConfig extends KubeConfigLike {
  loadFromDefault(): void;
}
