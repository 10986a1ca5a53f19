import { X509Certificate, createPrivateKey } from 'node:crypto';
import type * as Undici from 'undici';
import { systemClock, type Clock } from './clock.ts';
import type { Policy } from './balancer/Picker.ts';
import { dnsCacheDefaults } from './dns/DnsCache.ts';
import type { DnsClientOverrides } from './dns/DnsClient.ts';
import { parseNameServer } from './dns/ResolvConf.ts';
import { TlsState } from './dispatcher/TlsState.ts';
import { invalidOption } from './errors.ts';
import { isLogger, type Logger } from './observability/logger.ts';
import { createResolver, type ResolverContext, type Target } from './resolver/parseTarget.ts';
import type { Resolver } from './resolver/Resolver.ts';

/** The parts of an undici module the balancer builds its connection pools from. */
export type UndiciModule = Pick<typeof Undici, 'Pool' | 'Agent' | 'Dispatcher1Wrapper'>;

export type Pem = string | Buffer;

/**
 * Request headers, or a function that returns the current ones (sync or async), asked for before
 * every request so credentials that rotate (exec plugins, service-account token files) stay valid.
 */
export type HeadersSource = Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);

/**
 * The apiserver a client was configured with (a kubeconfig's `server`): `kubernetes:` targets list
 * and watch EndpointSlices through it, and it stays in the endpoint set as the last resort.
 */
export interface BootstrapOptions {
  /** `https://host:port` (a path prefix is kept for API requests), e.g. `https://10.96.0.1:443`. Required. */
  server: string | URL;
  /** Credentials for the EndpointSlice requests, e.g. `{ authorization: 'Bearer …' }`. Default none. */
  headers?: HeadersSource;
  /**
   * Keep the server's own address (its host name resolved by the system resolver, as a direct
   * connection would) in the endpoint set, one priority below everything the target lists: it takes
   * traffic only when the discovered apiservers are mostly down or unreachable (e.g. private
   * addresses seen from outside the cluster), or before discovery has answered. Default true.
   */
  lastResort?: boolean;
}

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
   * timeouts), and how long a DNS resolver keeps the last endpoints after DNS starts saying
   * NXDOMAIN/NODATA before it reports an empty set. A balancer keeps its endpoints regardless:
   * nothing from the network empties its set. Default 3600000 (1 h), the low end of what RFC 8767 suggests.
   */
  maxStale?: number;
}

export interface BalancerOptions {
  /**
   * Where the apiservers are: a URI (`static:///10.0.0.1:6443,10.0.0.2:6443`,
   * `dns+srv:///_https._tcp.kubernetes-headless.default.svc.cluster.local.`,
   * `dns:///apiservers.example.com:6443`, `kubernetes:///default/kubernetes`), a resolver object, an
   * array of `{ address, port, weight?, priority? }`, or an array of URIs and resolvers tried in order
   * (the first that lists endpoints is used). Required.
   */
  target: Target;
  /** Required by `kubernetes:` targets; see `BootstrapOptions`. Default none. */
  bootstrap?: BootstrapOptions;
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
  /**
   * Milliseconds between HTTP/2 PINGs on each connection; one left unanswered when the next is due
   * resets the connection, so requests waiting on a black-holed apiserver fail over within two
   * intervals even with probes off (the probe usually finds it sooner). Kept well above event-loop
   * stalls a busy process may see, which would reset healthy connections. 0 turns it off. Default 5000.
   */
  pingInterval?: number;
  /**
   * Milliseconds to wait for the response headers of a request that is not long-running, on one
   * endpoint, before trying another (GET/HEAD) or failing: the last line against an apiserver that
   * accepts but never answers (the probe usually catches it sooner). Default 30000.
   */
  requestTimeout?: number;
  /** Attempts per request, each on a different endpoint. Default 3. */
  maxAttempts?: number;
  /**
   * Retries in flight may not exceed `percent` % of the requests in flight plus `min`, so an outage
   * of every apiserver cannot multiply the load (Envoy's and Finagle's defaults). Default `{ percent: 20, min: 3 }`.
   */
  retryBudget?: { percent?: number; min?: number };
  /**
   * A one-shot request body (a stream; `fetch` always sends one) up to this many bytes is read into
   * memory so it can be sent again after a 429 or a refused connection. Default 4 MiB.
   */
  maxBufferedBody?: number;
  /**
   * Bytes of a GET or HEAD response (not a watch or other long-running request) held back until
   * the response is complete, so that a connection broken before its end (an apiserver that died
   * mid-response) is retried on another endpoint instead of failing; a response larger than this
   * (by `Content-Length`, or once it grows past it) streams as it arrives and is not retried. Costs
   * its time to first byte (the whole body instead of the first chunk) and, at worst, this many
   * bytes per GET in flight. `0` turns it off. Default 1 MiB.
   */
  maxHeldResponse?: number;
  /** Consecutive 5xx (or request timeouts) that eject an endpoint. Default 5. */
  consecutive5xx?: number;
  /** Ejection time after the first failure; doubles per ejection in a row, with ±20 % jitter. Default 1000. */
  baseEjectionMs?: number;
  /** Upper bound of an ejection. Default 30000. */
  maxEjectionMs?: number;
  /** 5xx-based ejections never take out more than this percentage of the endpoints. Default 50. */
  maxEjectionPercent?: number;
  /** Active health probes (`GET /readyz` on every endpoint), or `false` to turn them off. */
  probe?: ProbeOptions | false;
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
  /**
   * Where the balancer logs ejections, restores and drains (warn/info), retries (debug), resolver
   * failures and warnings (warn): a pino logger, `console`, or anything with `debug`, `info`, `warn`
   * and `error` methods. Each call is `(fields, message)`. Default: silent; the same events are on
   * the balancer as events either way.
   */
  logger?: Logger;
  /**
   * When an endpoint joins or comes back, open watches move to it gradually: at most `maxPerSecond`
   * times a second the oldest watch on the most loaded endpoint (open streams per unit of weight) is
   * ended for the caller at an event boundary, exactly as an apiserver ends a watch at its timeout,
   * and the caller's informer re-watches from its last resourceVersion, where the fewest streams
   * are. Only while moving one would even the load out. `false` turns it off. Default `{ maxPerSecond: 1 }`.
   */
  rebalanceWatches?: { maxPerSecond?: number } | false;
  /**
   * Hedged requests: a GET or HEAD (not long-running) with no response headers after the
   * `percentile` (default 99) of recent times to first byte, within `minDelayMs` (default 50) and
   * `maxDelayMs` (default 250), is sent to a second endpoint too; the first response wins. About
   * 1 % of requests in steady state, each within the retry budget; a GET caught on a black-holed
   * apiserver waits about `maxDelayMs` at worst. Default `false` (off) while its end-to-end
   * behaviour under a black hole is still being measured; `{}` turns it on with the defaults.
   */
  hedge?: { minDelayMs?: number; maxDelayMs?: number; percentile?: number } | false;
}

export interface ProbeOptions {
  /** Path probed on every endpoint. Default `/readyz` (fails as soon as an apiserver begins shutting down). */
  path?: string;
  /** Milliseconds between probes of one endpoint, ±20 % jitter. Default 2000. */
  intervalMs?: number;
  /** Milliseconds a probe may take. Default 1000. */
  timeoutMs?: number;
  /**
   * Extra headers, e.g. `authorization` where anonymous access to /readyz is disabled, or a function
   * returning them for every probe. Default none.
   */
  headers?: HeadersSource;
}

export const defaultOptions = {
  connectTimeout: 1_000,
  keepAliveTimeout: 30_000,
  pingInterval: 5_000,
  requestTimeout: 30_000,
  maxAttempts: 3,
  retryBudget: { percent: 20, min: 3 },
  maxBufferedBody: 4 * 1024 * 1024,
  maxHeldResponse: 1024 * 1024,
  consecutive5xx: 5,
  baseEjectionMs: 1_000,
  maxEjectionMs: 30_000,
  maxEjectionPercent: 50,
  probe: { path: '/readyz', intervalMs: 2_000, timeoutMs: 1_000, headers: {} },
  policy: 'round-robin',
  slowStartMs: 10_000,
  panicThreshold: 0.5,
  dns: dnsCacheDefaults,
  rebalanceWatches: { maxPerSecond: 1 },
  hedge: false,
} as const;

/** Options after validation, with defaults applied. */
export interface ResolvedOptions {
  resolver: Resolver;
  origin: URL | undefined;
  /** Replaced when credentials rotate (see `TlsState`). */
  tls: TlsState;
  undici: UndiciModule | undefined;
  connectTimeout: number;
  keepAliveTimeout: number;
  pingInterval: number;
  requestTimeout: number;
  maxAttempts: number;
  retryBudget: { percent: number; min: number };
  maxBufferedBody: number;
  maxHeldResponse: number;
  consecutive5xx: number;
  baseEjectionMs: number;
  maxEjectionMs: number;
  maxEjectionPercent: number;
  probe: Required<ProbeOptions> | false;
  clock: Clock;
  policy: Policy;
  slowStartMs: number;
  panicThreshold: number;
  logger: Logger | undefined;
  rebalanceWatches: { maxPerSecond: number } | false;
  hedge: { minDelayMs: number; maxDelayMs: number; percentile: number } | false;
}

/** TLS options after validation. */
export type ResolvedTls = Required<Pick<TlsOptions, 'rejectUnauthorized'>> & Omit<TlsOptions, 'rejectUnauthorized'>;

/** Validates everything up front so a bad option fails at construction, naming the field. */
export function resolveOptions(options: BalancerOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw invalidOption('', options, 'must be an object');
  if (options.target === undefined) throw invalidOption('target', undefined, 'is required');
  const clock = validateClock(options.clock);
  const dns = validateDns(options.dns);
  const tls = new TlsState(validateTls(options.tls ?? {}));
  const undici = validateUndici(options.undici);
  const bootstrap = validateBootstrap(options.bootstrap);
  const resolver = createResolver(options.target, { clock, dns, tls: () => tls.current, bootstrap });
  return {
    resolver,
    origin: options.origin === undefined ? undefined : parseOrigin(options.origin),
    tls,
    undici,
    connectTimeout: positiveMs('connectTimeout', options.connectTimeout ?? defaultOptions.connectTimeout),
    keepAliveTimeout: positiveMs('keepAliveTimeout', options.keepAliveTimeout ?? defaultOptions.keepAliveTimeout),
    pingInterval: integerIn('pingInterval', options.pingInterval ?? defaultOptions.pingInterval, 0, 3_600_000),
    requestTimeout: positiveMs('requestTimeout', options.requestTimeout ?? defaultOptions.requestTimeout),
    maxAttempts: integerIn('maxAttempts', options.maxAttempts ?? defaultOptions.maxAttempts, 1, 10),
    retryBudget: validateRetryBudget(options.retryBudget),
    maxBufferedBody: integerIn('maxBufferedBody', options.maxBufferedBody ?? defaultOptions.maxBufferedBody, 0, 2 ** 30),
    maxHeldResponse: integerIn('maxHeldResponse', options.maxHeldResponse ?? defaultOptions.maxHeldResponse, 0, 2 ** 30),
    consecutive5xx: integerIn('consecutive5xx', options.consecutive5xx ?? defaultOptions.consecutive5xx, 1, 1000),
    baseEjectionMs: positiveMs('baseEjectionMs', options.baseEjectionMs ?? defaultOptions.baseEjectionMs),
    maxEjectionMs: positiveMs('maxEjectionMs', options.maxEjectionMs ?? defaultOptions.maxEjectionMs),
    maxEjectionPercent: integerIn('maxEjectionPercent', options.maxEjectionPercent ?? defaultOptions.maxEjectionPercent, 0, 100),
    probe: validateProbe(options.probe),
    clock,
    policy: validatePolicy(options.policy ?? defaultOptions.policy),
    slowStartMs: nonNegativeMs('slowStartMs', options.slowStartMs ?? defaultOptions.slowStartMs),
    panicThreshold: fraction('panicThreshold', options.panicThreshold ?? defaultOptions.panicThreshold),
    logger: validateLogger(options.logger),
    rebalanceWatches: validateRebalance(options.rebalanceWatches),
    hedge: validateHedge(options.hedge),
  };
}

function validateRebalance(rebalance: BalancerOptions['rebalanceWatches']): ResolvedOptions['rebalanceWatches'] {
  if (rebalance === false) return false;
  if (rebalance === undefined) return { ...defaultOptions.rebalanceWatches };
  if (typeof rebalance !== 'object' || rebalance === null) throw invalidOption('rebalanceWatches', rebalance, 'must be { maxPerSecond } or false');
  const rate = rebalance.maxPerSecond ?? defaultOptions.rebalanceWatches.maxPerSecond;
  if (typeof rate !== 'number' || !(rate > 0 && rate <= 1000)) throw invalidOption('rebalanceWatches.maxPerSecond', rate, 'must be a number above 0, at most 1000');
  return { maxPerSecond: rate };
}

const HEDGE_DEFAULTS = { minDelayMs: 50, maxDelayMs: 250, percentile: 99 };

function validateHedge(hedge: BalancerOptions['hedge']): ResolvedOptions['hedge'] {
  if (hedge === false || hedge === undefined) return false;
  if (typeof hedge !== 'object' && hedge !== undefined) throw invalidOption('hedge', hedge, 'must be { minDelayMs, maxDelayMs, percentile } or false');
  const d = HEDGE_DEFAULTS;
  const minDelayMs = positiveMs('hedge.minDelayMs', hedge?.minDelayMs ?? d.minDelayMs);
  const maxDelayMs = positiveMs('hedge.maxDelayMs', hedge?.maxDelayMs ?? Math.max(d.maxDelayMs, minDelayMs));
  if (maxDelayMs < minDelayMs) throw invalidOption('hedge.maxDelayMs', maxDelayMs, 'must be at least hedge.minDelayMs');
  const percentile = hedge?.percentile ?? d.percentile;
  if (typeof percentile !== 'number' || !(percentile >= 50 && percentile <= 99.9)) throw invalidOption('hedge.percentile', percentile, 'must be a number in [50, 99.9]');
  return { minDelayMs, maxDelayMs, percentile };
}

/** Validated `bootstrap` option. */
export interface ResolvedBootstrap {
  server: URL;
  headers: HeadersSource;
  lastResort: boolean;
}

function validateBootstrap(bootstrap: BootstrapOptions | undefined): ResolvedBootstrap | undefined {
  if (bootstrap === undefined) return undefined;
  if (typeof bootstrap !== 'object' || bootstrap === null) throw invalidOption('bootstrap', bootstrap, 'must be an object { server, headers?, lastResort? }');
  const server = httpUrl('bootstrap.server', bootstrap.server, 'https://10.96.0.1:443');
  if (server.search || server.hash || server.username || server.password) {
    throw invalidOption('bootstrap.server', String(bootstrap.server), 'must be scheme, host, port and an optional path, without query or credentials');
  }
  const headers = bootstrap.headers ?? {};
  validateHeaders('bootstrap.headers', headers);
  if (bootstrap.lastResort !== undefined && typeof bootstrap.lastResort !== 'boolean') {
    throw invalidOption('bootstrap.lastResort', bootstrap.lastResort, 'must be a boolean');
  }
  return { server, headers, lastResort: bootstrap.lastResort !== false };
}

function validateHeaders(field: string, headers: unknown): void {
  if (typeof headers === 'function') return;
  if (typeof headers !== 'object' || headers === null || Object.values(headers).some((v) => typeof v !== 'string')) {
    throw invalidOption(field, headers, 'must be an object of string header values, or a function returning one');
  }
}

const policies: readonly Policy[] = ['round-robin', 'least-request'];

function validatePolicy(policy: unknown): Policy {
  if (!policies.includes(policy as Policy)) throw invalidOption('policy', policy, `must be one of ${policies.map((p) => `'${p}'`).join(', ')}`);
  return policy as Policy;
}

function validateLogger(logger: unknown): Logger | undefined {
  if (logger === undefined) return undefined;
  if (!isLogger(logger)) throw invalidOption('logger', logger, 'must have debug, info, warn and error methods (pino, console…)');
  return logger;
}

function nonNegativeMs(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw invalidOption(field, value, 'must be a number of milliseconds, 0 or more');
  return value;
}

function fraction(field: string, value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) throw invalidOption(field, value, 'must be a fraction in [0, 1]');
  return value;
}

function validateDns(dns: DnsOptions | undefined): ResolverContext['dns'] {
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
  const url = httpUrl('origin', origin, 'https://kubernetes.default.svc');
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash || url.username || url.password) {
    throw invalidOption('origin', String(origin), 'must be an origin only (scheme, host, port), without path, query or credentials');
  }
  return new URL(url.origin);
}

/** An absolute `https:` or `http:` URL; `example` shows what one looks like. */
function httpUrl(field: string, value: string | URL, example: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidOption(field, value, `must be an absolute URL like ${example}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidOption(field, String(value), 'must use https: or http:');
  return url;
}

export function validateTls(tls: TlsOptions): ResolvedTls {
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

function validateRetryBudget(budget: BalancerOptions['retryBudget']): ResolvedOptions['retryBudget'] {
  if (budget === undefined) return { ...defaultOptions.retryBudget };
  if (typeof budget !== 'object' || budget === null) throw invalidOption('retryBudget', budget, 'must be an object { percent, min }');
  return {
    percent: integerIn('retryBudget.percent', budget.percent ?? defaultOptions.retryBudget.percent, 0, 100),
    min: integerIn('retryBudget.min', budget.min ?? defaultOptions.retryBudget.min, 0, 1_000_000),
  };
}

function validateProbe(probe: BalancerOptions['probe']): ResolvedOptions['probe'] {
  if (probe === false) return false;
  if (probe === undefined) return { ...defaultOptions.probe, headers: {} };
  if (typeof probe !== 'object' || probe === null) throw invalidOption('probe', probe, 'must be an object or false');
  const path = probe.path ?? defaultOptions.probe.path;
  if (typeof path !== 'string' || !path.startsWith('/')) throw invalidOption('probe.path', path, 'must be a path starting with "/"');
  const headers = probe.headers ?? {};
  validateHeaders('probe.headers', headers);
  return {
    path,
    intervalMs: positiveMs('probe.intervalMs', probe.intervalMs ?? defaultOptions.probe.intervalMs),
    timeoutMs: positiveMs('probe.timeoutMs', probe.timeoutMs ?? defaultOptions.probe.timeoutMs),
    headers: typeof headers === 'function' ? headers : { ...headers },
  };
}

function integerIn(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidOption(field, value, `must be an integer from ${min} to ${max}`);
  }
  return value;
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
