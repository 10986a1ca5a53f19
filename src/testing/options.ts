import { isIP } from 'node:net';
import { BalancerError, describe, invalidOption } from '../errors.ts';
import type { StartApiserversOptions } from './types.ts';

/** `startApiservers`' options, checked, with their defaults filled in. */
export interface ValidTestingOptions extends Required<Pick<StartApiserversOptions, 'hosts' | 'port' | 'h2' | 'anonymous' | 'kubeconfig' | 'simulator'>> {
  pki: StartApiserversOptions['pki'];
  token: string | undefined;
  kubeconfigPath: string | undefined;
}

const KEYS = ['count', 'hosts', 'port', 'pki', 'token', 'kubeconfig', 'kubeconfigPath', 'h2', 'anonymous', 'simulator'] as const;
const ANONYMOUS = ['public-info', 'all', 'none'] as const;
/** 127.0.0.2 up to 127.0.0.254: one loopback address per server, all on one port, as apiservers share theirs. */
const MAX_COUNT = 253;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as { then?: unknown }).then !== 'function';

function pem(field: string, value: unknown, kind: 'CERTIFICATE' | 'PRIVATE KEY'): void {
  if (typeof value !== 'string' || !value.includes(`-----BEGIN `) || !value.includes(kind === 'CERTIFICATE' ? 'CERTIFICATE-----' : 'KEY-----')) {
    throw invalidOption(field, value, `must be PEM text (${kind === 'CERTIFICATE' ? 'a certificate' : 'a private key'})`);
  }
}

function checkPki(value: unknown): void {
  if (!isObject(value)) throw invalidOption('pki', value, 'must be { ca, apiserver: { cert, key }, client: { cert, key } } (e.g. from `await generatePki()`)');
  pem('pki.ca', value.ca, 'CERTIFICATE');
  for (const pair of ['apiserver', 'client'] as const) {
    const keyPair = value[pair];
    if (!isObject(keyPair)) throw invalidOption(`pki.${pair}`, keyPair, 'must be { cert, key } in PEM');
    pem(`pki.${pair}.cert`, keyPair.cert, 'CERTIFICATE');
    pem(`pki.${pair}.key`, keyPair.key, 'PRIVATE KEY');
  }
}

/**
 * Checks what a user passed to `startApiservers` before anything starts: a wrong type, or a Promise
 * where its value belongs (`pki: generatePki()`), is an `ERR_INVALID_OPTION` naming the field, not a
 * failure deep in TLS a second later.
 */
export function validateTestingOptions(options: unknown): ValidTestingOptions {
  if (options === undefined) options = {};
  if (!isObject(options)) throw new BalancerError('ERR_INVALID_OPTION', `startApiservers options must be an object; got ${describe(options)}`);
  for (const key of Object.keys(options)) {
    if (!(KEYS as readonly string[]).includes(key)) throw new BalancerError('ERR_INVALID_OPTION', `options.${key} is not an option of startApiservers (options: ${KEYS.join(', ')})`);
  }
  const o = options as StartApiserversOptions & Record<string, unknown>;
  if (o.count !== undefined && (!Number.isInteger(o.count) || o.count < 1 || o.count > MAX_COUNT)) {
    throw invalidOption('count', o.count, `must be a whole number from 1 to ${MAX_COUNT}`);
  }
  let hosts: readonly string[];
  if (o.hosts === undefined) {
    hosts = Array.from({ length: o.count ?? 3 }, (_, i) => `127.0.0.${i + 2}`);
  } else {
    if (!Array.isArray(o.hosts) || o.hosts.length === 0) throw invalidOption('hosts', o.hosts, 'must be a non-empty array of local IP addresses');
    for (const [i, host] of (o.hosts as unknown[]).entries()) {
      if (typeof host !== 'string' || isIP(host) === 0) throw invalidOption(`hosts[${i}]`, host, 'must be an IP address (the servers share one port, so each needs its own address)');
    }
    if (new Set(o.hosts).size !== o.hosts.length) throw invalidOption('hosts', o.hosts, 'must not repeat an address (the servers share one port)');
    if (o.count !== undefined && o.count !== o.hosts.length) throw invalidOption('count', o.count, `must match options.hosts (${o.hosts.length} addresses), or be left out`);
    hosts = o.hosts;
  }
  if (o.port !== undefined && (!Number.isInteger(o.port) || o.port < 0 || o.port > 65_535)) throw invalidOption('port', o.port, 'must be a port number from 0 (any free port) to 65535');
  if (o.pki !== undefined) checkPki(o.pki);
  if (o.token !== undefined && (typeof o.token !== 'string' || !/^[\x21-\x7e]+$/.test(o.token))) throw invalidOption('token', o.token, 'must be a non-empty string of printable ASCII without spaces');
  if (o.kubeconfig !== undefined && !isObject(o.kubeconfig)) throw invalidOption('kubeconfig', o.kubeconfig, 'must be an object (KubeconfigOptions)');
  if (o.kubeconfigPath !== undefined && (typeof o.kubeconfigPath !== 'string' || o.kubeconfigPath === '')) throw invalidOption('kubeconfigPath', o.kubeconfigPath, 'must be a file path');
  if (o.h2 !== undefined && typeof o.h2 !== 'boolean') throw invalidOption('h2', o.h2, 'must be true or false');
  if (o.anonymous !== undefined && !(ANONYMOUS as readonly unknown[]).includes(o.anonymous)) throw invalidOption('anonymous', o.anonymous, `must be one of ${ANONYMOUS.join(', ')}`);
  if (o.simulator !== undefined && !isObject(o.simulator)) throw invalidOption('simulator', o.simulator, 'must be an object (SimulatorOptions)');
  return {
    hosts,
    port: o.port ?? 0,
    pki: o.pki,
    token: o.token,
    kubeconfig: o.kubeconfig ?? {},
    kubeconfigPath: o.kubeconfigPath,
    h2: o.h2 ?? true,
    anonymous: o.anonymous ?? 'public-info',
    simulator: o.simulator ?? {},
  };
}
