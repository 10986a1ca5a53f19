import type { Balancer } from '../dispatcher/Balancer.ts';
import { balancerInternals } from '../dispatcher/internals.ts';
import type { Pem, ResolvedTls } from '../net/tls.ts';

/**
 * What kubernetes-fluent-client 3.11's `getHTTPSAgent` builds for every call, as undici 8's `Agent`
 * keeps it (its `options` symbol): these timeouts, no `maxOrigins`, and `connect` holding only the
 * kubeconfig's `ca`, `cert`, `key`, read from client-node's https.Agent.
 */
const FLUENT_OPTIONS = { keepAliveMaxTimeout: 600_000, keepAliveTimeout: 600_000, bodyTimeout: 0, maxOrigins: Infinity } as const;
const FLUENT_CONNECT = new Set(['ca', 'cert', 'key']);

/** Per agent, the decision and the balancer TLS settings it was made against (they rotate). */
const decisions = new WeakMap<object, { tls: ResolvedTls; fluent: boolean }>();

/**
 * Whether `agent` is one kubernetes-fluent-client built for `balancer`'s cluster (`origin`): KFC's options
 * exactly, and the same CA, client certificate and key as the balancer's now. Only such an agent is
 * rerouted, so the balancer presents no certificate the agent would not have presented itself, and
 * an application's agent (other options, other or no certificate) is never taken over. An agent an
 * application built with KFC's options and the kubeconfig's own material is indistinguishable, and
 * equivalent. Anything unexpected (an undici without the `options` symbol, a closed balancer) means
 * not rerouted: KFC then talks to its server itself, as without the balancer.
 */
export function isFluentAgent(agent: unknown, balancer: Balancer, origin: URL): boolean {
  if (typeof agent !== 'object' || agent === null) return false;
  const internals = balancerInternals(balancer);
  if (internals.closed()) return false;
  const { tls } = internals.tlsFor(origin);
  const known = decisions.get(agent);
  if (known?.tls === tls) return known.fluent;
  const fluent = matches(agentOptions(agent), tls);
  decisions.set(agent, { tls, fluent });
  return fluent;
}

function agentOptions(agent: object): Record<string, unknown> | undefined {
  const symbol = Object.getOwnPropertySymbols(agent).find((s) => s.description === 'options');
  const options: unknown = symbol === undefined ? undefined : (agent as Record<symbol, unknown>)[symbol];
  return typeof options === 'object' && options !== null ? (options as Record<string, unknown>) : undefined;
}

function matches(options: Record<string, unknown> | undefined, tls: ResolvedTls): boolean {
  if (!options) return false;
  const keys = Object.keys(options).filter((key) => options[key] !== undefined);
  if (keys.length !== Object.keys(FLUENT_OPTIONS).length + 1 || !keys.includes('connect')) return false;
  for (const [key, value] of Object.entries(FLUENT_OPTIONS)) if (options[key] !== value) return false;
  const connect = options.connect;
  if (typeof connect !== 'object' || connect === null) return false;
  const given = connect as Record<string, unknown>;
  if (Object.keys(given).some((key) => given[key] !== undefined && !FLUENT_CONNECT.has(key))) return false;
  return samePem(given.ca, tls.ca) && samePem(given.cert, tls.cert) && samePem(given.key, tls.key);
}

/** By content: both sides decode the kubeconfig into fresh buffers. */
function samePem(a: unknown, b: Pem | readonly Pem[] | undefined): boolean {
  if (a === undefined || a === null) return b === undefined;
  if (b === undefined || Array.isArray(b)) return false;
  if (typeof a !== 'string' && !Buffer.isBuffer(a)) return false;
  const bytes = (pem: string | Buffer): Buffer => (typeof pem === 'string' ? Buffer.from(pem) : pem);
  return bytes(a).equals(bytes(b as Pem));
}
