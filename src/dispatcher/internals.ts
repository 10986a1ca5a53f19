import type { ResolvedTls, TlsOptions, Verification } from '../net/tls.ts';
import type { RequestHost } from './RequestHost.ts';

/**
 * What the rest of the package (never its users) reaches inside a balancer: the request host for the
 * https.Agent adapter, and swapping TLS credentials when a kubeconfig's rotate.
 */
export interface BalancerInternals {
  readonly host: RequestHost;
  readonly connectTimeout: number;
  /** Whether `close()` or `destroy()` was called: hooks installed for the balancer step aside. */
  closed(): boolean;
  /** Whether requests to `origin` are balanced (else they pass through). */
  balances(origin: URL): boolean;
  /** The name to verify and the TLS settings in force, for connections made for `origin`. */
  tlsFor(origin: URL): { verification: Verification; tls: ResolvedTls };
  /** Numbers a reading of the TLS settings (of a kubeconfig) as it begins: see `replaceTls`. */
  beginTlsReading(): number;
  /**
   * Switches to new TLS settings, validated like `options.tls`: new connections use them, those
   * already open finish what runs on them and close. `reading` is the number `beginTlsReading` gave
   * when the reading of `tls` began (default: a reading that begins now); a reading that began
   * before the one in force changes nothing. Returns false when nothing changed.
   */
  replaceTls(tls: TlsOptions, reading?: number): boolean;
}

// Keyed by the balancer object, so that internals never show on its public face.
const internals = new WeakMap<object, BalancerInternals>();

/** Called once by each balancer as it is built. */
export function registerInternals(balancer: object, inside: BalancerInternals): void {
  internals.set(balancer, inside);
}

export function balancerInternals(balancer: object): BalancerInternals {
  const found = internals.get(balancer);
  if (!found) throw new TypeError('not a kube-balancer Balancer');
  return found;
}
