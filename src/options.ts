import { X509Certificate, createPrivateKey } from 'node:crypto';
import { isIP } from 'node:net';
import type * as Undici from 'undici';
import { systemClock, type Clock } from './clock.ts';
import type { Policy } from './balancer/Picker.ts';
import { dnsCacheDefaults } from './dns/DnsCache.ts';
import type { DnsClientOverrides } from './dns/DnsClient.ts';
import { parseNameServer } from './dns/ResolvConf.ts';
import { invalidOption } from './errors.ts';
import { createResolver, type ResolverContext, type Target } from './resolver/parseTarget.ts';
import type { Resolver } from './resolver/Resolver.ts';

/** The parts of an undici module the balancer builds its connection pools from. */
export type UndiciModule = Pick<typeof Undici, 'Pool' | 'Agent' | 'Dispatcher1Wrapper'>;

export type Pem = string | Buffer;

export interface TlsOptions {
  /** CA certificates (PEM) that sign the apiservers' certificates. Default: Node's root store. */
  ca?: Pem | readonly Pem[];
  /** Client certificate (PEM) for mutual TLS. Needs `key`. */
  cert?: Pem;
  /** Private key (PEM) of `cert`. */
  key?: Pem;
  /**
   * Name the server certificates must carry, sent as SNI. Default: the hostname of the request's
   * origin; for an IP origin, that IP is verified and no SNI is sent. The dialled endpoint's own
   * address never decides.
   */
  servername?: string;
  /** `false` turns certificate verification off. Only for a kubeconfig that says so. Default `true`. */
  rejectUnauthorized?: boolean;
}

/**
 * How `dns+srv:` and `dns:` targets are resolved. Whatever is not set here comes from
 * `/etc/resolv.conf` (with `LOCALDOMAIN` and `RES_OPTIONS`), as glibc reads it.
 */
export interface DnsOptions {
  /**
   * Name servers to ask, in order: `'10.96.0.10'`, `'127.0.0.1:5353'`, `'[::1]:53'` (port 53 when
   * left out). Default: the `nameserver` lines of resolv.conf (at most 3, as glibc), else 127.0.0.1.
   */
  servers?: readonly string[];
  /**
   * Milliseconds to wait for one server's answer on the first round; it doubles every round, and
   * a whole lookup gives up after 10 s (or this timeout, if longer). Default: resolv.conf's
   * `options timeout:` capped at 2000, since a refresher that can serve stale answers need not wait
   * glibc's 5 s.
   */
  timeout?: number;
  /** Rounds over all servers before a lookup fails. Default: resolv.conf's `options attempts:` (2). */
  attempts?: number;
  /**
   * Milliseconds; shorter TTLs, 0 included (dnsmasq's default), count as this. Default 1000: a
   * refresh at most about once a second per name (RFC 9520 asks for at least 1 s on failures).
   */
  minTtl?: number;
  /**
   * Milliseconds; longer TTLs count as this, so a changed record is seen within it even if its zone
   * says an hour. Default 300000 (5 min).
   */
  maxTtl?: number;
  /**
   * Milliseconds an answer is still used after its TTL while refreshing fails (SERVFAIL, REFUSED,
   * timeouts), and how long the last endpoints are kept after DNS starts saying NXDOMAIN/NODATA.
   * Default 3600000 (1 h), the low end of what RFC 8767 suggests.
   */
  maxStale?: number;
}

export interface BalancerOptions {
  /**
   * Where the apiservers are: a URI (`static:///10.0.0.1:6443,10.0.0.2:6443`,
   * `dns+srv:///_https._tcp.kubernetes-headless.default.svc.cluster.local.`,
   * `dns:///apiservers.example.com:6443`), a resolver object, or an array of
   * `{ address, port, weight?, priority? }`. Required.
   */
  target: Target;
  /**
   * Only requests to this origin (e.g. `https://kubernetes.default.svc:443`) are balanced; requests
   * to any other origin go unchanged through a plain undici `Agent`. Default: every request is balanced.
   */
  origin?: string | URL;
  /** TLS settings used for every endpoint. */
  tls?: TlsOptions;
  /**
   * The undici module to build connection pools from, so they match the caller's `fetch`
   * (`@kubernetes/client-node` brings its own copy). Default: the undici this package resolves.
   */
  undici?: UndiciModule;
  /** Milliseconds allowed for TCP + TLS connection setup to one endpoint. Default 1000. */
  connectTimeout?: number;
  /** Milliseconds an idle keep-alive connection is kept open. Default 30000. */
  keepAliveTimeout?: number;
  /** DNS settings for `dns+srv:` and `dns:` targets. */
  dns?: DnsOptions;
  /** Time source for every timer and measurement. For tests; default: the system clock. */
  clock?: Clock;
  /**
   * How short requests are spread. `'round-robin'` (default): weighted and deterministic, each
   * endpoint within a pick or two of its share in any stretch of requests. `'least-request'`: power
   * of two choices between the round robin's next endpoint and a random one, by in-flight requests
   * per unit of weight; for workloads whose requests differ a lot in cost. Long-running requests
   * (watches, `follow=true` logs, exec/attach/port-forward) always go where the fewest are open.
   */
  policy?: Policy;
  /**
   * Milliseconds over which an endpoint that joins or comes back ramps from 10 % to its full weight,
   * so a restarted apiserver is not hit by its whole share at once (Envoy's slow start, linear). Read
   * at every pick, so it also holds at low request rates. Endpoints of the first set start at full
   * weight. `0` turns it off. Default 10000.
   */
  slowStartMs?: number;
  /**
   * Panic mode: when fewer than this fraction of the endpoints are ready (with SRV priorities: in
   * every priority level), health is not to be trusted and requests go to every endpoint that has
   * not been removed, instead of piling onto the few survivors or failing. In [0, 1]; `0` turns it
   * off. Default 0.5 (Envoy's default).
   */
  panicThreshold?: number;
}

export const defaultOptions = {
  connectTimeout: 1_000,
  keepAliveTimeout: 30_000,
  policy: 'round-robin',
  slowStartMs: 10_000,
  panicThreshold: 0.5,
  dns: dnsCacheDefaults,
} as const;

/** Options after validation, with defaults applied. */
export interface ResolvedOptions {
  resolver: Resolver;
  origin: URL | undefined;
  tls: Required<Pick<TlsOptions, 'rejectUnauthorized'>> & Omit<TlsOptions, 'rejectUnauthorized'>;
  undici: UndiciModule | undefined;
  connectTimeout: number;
  keepAliveTimeout: number;
  dns: ResolverContext['dns'];
  clock: Clock;
  policy: Policy;
  slowStartMs: number;
  panicThreshold: number;
}

/** Validates everything up front so a bad option fails at construction, naming the field. */
export function resolveOptions(options: BalancerOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw invalidOption('', options, 'must be an object');
  if (options.target === undefined) throw invalidOption('target', undefined, 'is required');
  const clock = validateClock(options.clock);
  const dns = validateDns(options.dns);
  const resolver = createResolver(options.target, { clock, dns });
  return {
    resolver,
    origin: options.origin === undefined ? undefined : parseOrigin(options.origin),
    tls: validateTls(options.tls ?? {}),
    undici: validateUndici(options.undici),
    connectTimeout: positiveMs('connectTimeout', options.connectTimeout ?? defaultOptions.connectTimeout),
    keepAliveTimeout: positiveMs('keepAliveTimeout', options.keepAliveTimeout ?? defaultOptions.keepAliveTimeout),
    dns,
    clock,
    policy: validatePolicy(options.policy ?? defaultOptions.policy),
    slowStartMs: nonNegativeMs('slowStartMs', options.slowStartMs ?? defaultOptions.slowStartMs),
    panicThreshold: fraction('panicThreshold', options.panicThreshold ?? defaultOptions.panicThreshold),
  };
}

const policies: readonly Policy[] = ['round-robin', 'least-request'];

function validatePolicy(policy: unknown): Policy {
  if (!policies.includes(policy as Policy)) throw invalidOption('policy', policy, `must be one of ${policies.map((p) => `'${p}'`).join(', ')}`);
  return policy as Policy;
}

function nonNegativeMs(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw invalidOption(field, value, 'must be a number of milliseconds, 0 or more');
  return value;
}

function fraction(field: string, value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) throw invalidOption(field, value, 'must be a fraction in [0, 1]');
  return value;
}

function validateDns(dns: DnsOptions | undefined): ResolvedOptions['dns'] {
  if (dns === undefined) return { ...defaultOptions.dns };
  if (typeof dns !== 'object' || dns === null) throw invalidOption('dns', dns, 'must be an object');
  const overrides: DnsClientOverrides = {};
  if (dns.servers !== undefined) {
    if (!Array.isArray(dns.servers) || dns.servers.length === 0) throw invalidOption('dns.servers', dns.servers, 'must be a non-empty array of addresses');
    overrides.servers = dns.servers.map((spec: unknown, i) => {
      const server = typeof spec === 'string' ? parseNameServer(spec) : undefined;
      if (!server) throw invalidOption(`dns.servers[${i}]`, spec, "must be an IP address with an optional port: '10.96.0.10', '127.0.0.1:5353', '[::1]:53'");
      return server;
    });
  }
  if (dns.timeout !== undefined) overrides.timeout = positiveMs('dns.timeout', dns.timeout);
  if (dns.attempts !== undefined) {
    if (typeof dns.attempts !== 'number' || !Number.isInteger(dns.attempts) || dns.attempts < 1 || dns.attempts > 10) {
      throw invalidOption('dns.attempts', dns.attempts, 'must be an integer in 1–10');
    }
    overrides.attempts = dns.attempts;
  }
  const minTtl = positiveMs('dns.minTtl', dns.minTtl ?? defaultOptions.dns.minTtl);
  const maxTtl = positiveMs('dns.maxTtl', dns.maxTtl ?? defaultOptions.dns.maxTtl);
  if (maxTtl < minTtl) throw invalidOption('dns.maxTtl', maxTtl, `must not be less than dns.minTtl (${minTtl})`);
  const maxStale = nonNegativeMs('dns.maxStale', dns.maxStale ?? defaultOptions.dns.maxStale);
  return { ...overrides, minTtl, maxTtl, maxStale };
}

function parseOrigin(origin: string | URL): URL {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw invalidOption('origin', origin, 'must be an absolute URL like https://kubernetes.default.svc');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidOption('origin', String(origin), 'must use https: or http:');
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash || url.username || url.password) {
    throw invalidOption('origin', String(origin), 'must be an origin only (scheme, host, port), without path, query or credentials');
  }
  return new URL(url.origin);
}

function validateTls(tls: TlsOptions): ResolvedOptions['tls'] {
  if (typeof tls !== 'object' || tls === null) throw invalidOption('tls', tls, 'must be an object');
  if (tls.ca !== undefined) {
    const list: readonly unknown[] = Array.isArray(tls.ca) ? tls.ca : [tls.ca];
    list.forEach((pem, i) => checkCertificates(Array.isArray(tls.ca) ? `tls.ca[${i}]` : 'tls.ca', pem));
  }
  if (tls.cert !== undefined) checkCertificates('tls.cert', tls.cert);
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    throw invalidOption(tls.cert === undefined ? 'tls.cert' : 'tls.key', undefined, 'is required when the other of tls.cert/tls.key is given');
  }
  if (tls.key !== undefined) {
    if (!isPem(tls.key)) throw invalidOption('tls.key', tls.key, 'must be a PEM private key (string or Buffer)');
    try {
      createPrivateKey(tls.key);
    } catch (err) {
      throw invalidOption('tls.key', tls.key, `must be a valid PEM private key (${(err as Error).message})`);
    }
  }
  if (tls.servername !== undefined && (typeof tls.servername !== 'string' || tls.servername === '' || /[\s/]/.test(tls.servername))) {
    throw invalidOption('tls.servername', tls.servername, 'must be a host name or IP address');
  }
  if (tls.rejectUnauthorized !== undefined && typeof tls.rejectUnauthorized !== 'boolean') {
    throw invalidOption('tls.rejectUnauthorized', tls.rejectUnauthorized, 'must be a boolean');
  }
  return { ...tls, rejectUnauthorized: tls.rejectUnauthorized !== false };
}

function isPem(value: unknown): value is Pem {
  return (typeof value === 'string' || Buffer.isBuffer(value)) && value.toString().includes('-----BEGIN ');
}

function checkCertificates(field: string, value: unknown): void {
  if (!isPem(value)) throw invalidOption(field, value, 'must be PEM certificate text (string or Buffer)');
  const blocks = value.toString().match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!blocks) throw invalidOption(field, value, 'holds no "-----BEGIN CERTIFICATE-----" block');
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw invalidOption(field, value, `holds a certificate that does not parse (${(err as Error).message})`);
    }
  }
}

function validateUndici(undici: UndiciModule | undefined): UndiciModule | undefined {
  if (undici === undefined) return undefined;
  if (typeof undici !== 'object' || undici === null || typeof undici.Pool !== 'function' || typeof undici.Agent !== 'function') {
    throw invalidOption('undici', undici, 'must be an undici module (with Pool and Agent)');
  }
  if (typeof undici.Dispatcher1Wrapper !== 'function') {
    throw invalidOption('undici', undici, 'must be undici 8 or newer (Dispatcher1Wrapper is missing)');
  }
  return undici;
}

function validateClock(clock: Clock | undefined): Clock {
  if (clock === undefined) return systemClock;
  if (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function' || typeof clock.setTimeout !== 'function' || typeof clock.clearTimeout !== 'function') {
    throw invalidOption('clock', clock, 'must have now(), setTimeout() and clearTimeout()');
  }
  return clock;
}

function positiveMs(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw invalidOption(field, value, 'must be a positive number of milliseconds');
  return value;
}


/** True for an IPv4/IPv6 literal (brackets allowed), which is verified as an IP, never sent as SNI. */
export function isIpLiteral(host: string): boolean {
  return isIP(host.replace(/^\[|\]$/g, '')) !== 0;
}
