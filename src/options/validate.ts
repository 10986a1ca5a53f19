import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import type { Policy } from '../balancer/Picker.ts';
import { systemClock, type Clock } from '../clock.ts';
import type { DnsClientOverrides } from '../dns/DnsClient.ts';
import { parseNameServer } from '../dns/ResolvConf.ts';
import { invalidOption } from '../errors.ts';
import { isHostName, isIpLiteral } from '../net/hostnames.ts';
import type { Pem, ResolvedTls, TlsOptions } from '../net/tls.ts';
import { isLogger, type Logger } from '../observability/logger.ts';
import type { ResolvedBootstrap, ResolverContext, Target } from '../resolver/parseTarget.ts';
import { discoveringTarget } from '../resolver/discoveringTarget.ts';
import { knownKeys, rejectUnknownKeys } from './knownKeys.ts';
import { defaultOptions, type BalancerOptions, type BootstrapOptions, type DnsOptions, type ProbeOptions, type UndiciModule } from './BalancerOptions.ts';

/**
 * Options after validation, with defaults applied: plain data. The balancer builds what they
 * describe (the resolver from `target`, `dns` and `bootstrap`; the TLS state from `tls`).
 */
export interface ResolvedOptions {
  /** Checked only for presence: the resolver checks the rest as it is built. */
  target: Target;
  dns: ResolverContext['dns'];
  bootstrap: ResolvedBootstrap | undefined;
  /** The one origin balanced: `options.origin`, else `bootstrap.server`'s. */
  origin: URL;
  tls: ResolvedTls;
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
  rebalanceWatches: { maxPerSecond: number; graceMs: number } | false;
  maxEndpoints: number;
  hedge: { minDelayMs: number; maxDelayMs: number; percentile: number } | false;
}

/** Validates everything up front so a bad option fails at construction, naming the field. */
export function resolveOptions(options: BalancerOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw invalidOption('', options, 'must be an object');
  rejectUnknownKeys('', options, knownKeys['']!);
  if (options.target === undefined) throw invalidOption('target', undefined, 'is required');
  const clock = validateClock(options.clock);
  const dns = validateDns(options.dns);
  const tls = validateTls(options.tls ?? {});
  refuseUnverifiedDiscovery(options.target, tls);
  const undici = validateUndici(options.undici);
  const bootstrap = validateBootstrap(options.bootstrap);
  const origin = validateOrigin(options, bootstrap);
  refuseCleartextDiscovery(options.target, origin, tls);
  return {
    target: options.target,
    dns,
    bootstrap,
    origin,
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
    maxEndpoints: integerIn('maxEndpoints', options.maxEndpoints ?? defaultOptions.maxEndpoints, 1, 10_000),
  };
}

/**
 * Without verification, an endpoint that DNS or an EndpointSlice names gets every request and its
 * credentials, whoever answers there: that takes the user's explicit word, at construction (a
 * balancer that silently served only its last resort would hide the choice instead).
 */
function refuseUnverifiedDiscovery(target: Target, tls: ResolvedTls): void {
  if (tls.rejectUnauthorized || tls.allowUnverifiedDiscovered === true) return;
  const discovering = discoveringTarget(target);
  if (discovering === undefined) return;
  throw invalidOption(
    'tls.allowUnverifiedDiscovered',
    tls.allowUnverifiedDiscovered,
    `must be true to use ${discovering} with tls.rejectUnauthorized: false (or insecure-skip-tls-verify): nothing would verify the endpoints it discovers, yet they would get every request and its credentials; list the endpoints with static:/// instead, or opt in`,
  );
}

/**
 * Over `http:` nothing verifies who answers either, so a discovering target would send the bearer
 * token to whatever address DNS or an EndpointSlice names: refused like unverified TLS, with the
 * same opt-in.
 */
function refuseCleartextDiscovery(target: Target, origin: URL, tls: ResolvedTls): void {
  if (origin.protocol !== 'http:' || tls.allowUnverifiedDiscovered === true) return;
  const discovering = discoveringTarget(target);
  if (discovering === undefined) return;
  throw invalidOption(
    'origin',
    origin.origin,
    `must use https: to use ${discovering}: over http: nothing verifies the endpoints it discovers, yet they would get every request and its credentials; use an https: origin, list the endpoints with static:/// instead, or opt in with tls.allowUnverifiedDiscovered: true`,
  );
}

/**
 * The balanced origin must be known up front: guessed from the first request, one request to another
 * site made it the probe origin and judged the endpoints by a name they were never verified for.
 */
function validateOrigin(options: BalancerOptions, bootstrap: ResolvedBootstrap | undefined): URL {
  const origin = options.origin !== undefined ? parseOrigin(options.origin) : bootstrap && new URL(bootstrap.server.origin);
  if (!origin) {
    throw invalidOption('origin', undefined, "is required (or bootstrap.server): only requests to this origin are balanced, e.g. origin: 'https://kubernetes.default.svc'");
  }
  // Probes go to the origin on their own schedule: never with credentials in clear text.
  if (origin.protocol === 'http:' && options.probe && options.probe.headers !== undefined) {
    throw invalidOption('probe.headers', options.probe.headers, `must not be set for the http: origin ${origin.origin}: probes would carry them in clear text`);
  }
  return origin;
}

function validateRebalance(rebalance: BalancerOptions['rebalanceWatches']): ResolvedOptions['rebalanceWatches'] {
  if (rebalance === false) return false;
  if (rebalance === undefined) return { ...defaultOptions.rebalanceWatches };
  if (typeof rebalance !== 'object' || rebalance === null) throw invalidOption('rebalanceWatches', rebalance, 'must be { maxPerSecond, graceMs } or false');
  rejectUnknownKeys('rebalanceWatches', rebalance, knownKeys['rebalanceWatches']!);
  const rate = rebalance.maxPerSecond ?? defaultOptions.rebalanceWatches.maxPerSecond;
  if (typeof rate !== 'number' || !(rate > 0 && rate <= 1000)) throw invalidOption('rebalanceWatches.maxPerSecond', rate, 'must be a number above 0, at most 1000');
  return { maxPerSecond: rate, graceMs: nonNegativeMs('rebalanceWatches.graceMs', rebalance.graceMs ?? defaultOptions.rebalanceWatches.graceMs) };
}

function validateHedge(hedge: BalancerOptions['hedge']): ResolvedOptions['hedge'] {
  if (hedge === false) return false;
  if (hedge === undefined) return { ...defaultOptions.hedge };
  if (typeof hedge !== 'object' || hedge === null) throw invalidOption('hedge', hedge, 'must be { minDelayMs, maxDelayMs, percentile } or false');
  rejectUnknownKeys('hedge', hedge, knownKeys['hedge']!);
  const d = defaultOptions.hedge;
  const minDelayMs = positiveMs('hedge.minDelayMs', hedge.minDelayMs ?? d.minDelayMs);
  const maxDelayMs = positiveMs('hedge.maxDelayMs', hedge.maxDelayMs ?? Math.max(d.maxDelayMs, minDelayMs));
  if (maxDelayMs < minDelayMs) throw invalidOption('hedge.maxDelayMs', maxDelayMs, 'must be at least hedge.minDelayMs');
  const percentile = hedge.percentile ?? d.percentile;
  if (typeof percentile !== 'number' || !(percentile >= 50 && percentile <= 99.9)) throw invalidOption('hedge.percentile', percentile, 'must be a number in [50, 99.9]');
  return { minDelayMs, maxDelayMs, percentile };
}

function validateBootstrap(bootstrap: BootstrapOptions | undefined): ResolvedBootstrap | undefined {
  if (bootstrap === undefined) return undefined;
  if (typeof bootstrap !== 'object' || bootstrap === null) throw invalidOption('bootstrap', bootstrap, 'must be an object { server, headers?, lastResort? }');
  rejectUnknownKeys('bootstrap', bootstrap, knownKeys['bootstrap']!);
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

const policies: readonly Policy[] = ['weighted-round-robin', 'round-robin', 'least-request'];

function validatePolicy(policy: unknown): Policy {
  if (!policies.includes(policy as Policy)) throw invalidOption('policy', policy, `must be one of ${policies.map((p) => `'${p}'`).join(', ')}`);
  return policy as Policy;
}

function validateLogger(logger: unknown): Logger | undefined {
  if (logger === undefined) return undefined;
  if (!isLogger(logger)) throw invalidOption('logger', logger, 'must have debug, info, warn and error methods (pino, console…)');
  return logger;
}

/**
 * Node's timers hold a signed 32-bit count of milliseconds: a longer delay fires after 1 ms (with
 * a TimeoutOverflowWarning), so `probe.intervalMs: 1e12` would probe a thousand times a second.
 * Every millisecond option goes through `nonNegativeMs`/`positiveMs`, which reject such values.
 */
const maxTimerMs = 2 ** 31 - 1;

function nonNegativeMs(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw invalidOption(field, value, 'must be a number of milliseconds, 0 or more');
  return belowTimerLimit(field, value);
}

function belowTimerLimit(field: string, value: number): number {
  if (value > maxTimerMs) throw invalidOption(field, value, `must be at most ${maxTimerMs} ms (2^31-1, the longest delay a Node timer keeps; about 24.8 days)`);
  return value;
}

function fraction(field: string, value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) throw invalidOption(field, value, 'must be a fraction in [0, 1]');
  return value;
}

function validateDns(dns: DnsOptions | undefined): ResolverContext['dns'] {
  if (dns === undefined) return { ...defaultOptions.dns };
  if (typeof dns !== 'object' || dns === null) throw invalidOption('dns', dns, 'must be an object');
  rejectUnknownKeys('dns', dns, knownKeys['dns']!);
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
  rejectUnknownKeys('tls', tls, knownKeys['tls']!);
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
    let key: KeyObject;
    try {
      key = createPrivateKey(tls.key);
    } catch (err) {
      throw invalidOption('tls.key', tls.key, `must be a valid PEM private key (${(err as Error).message})`);
    }
    // A key of another pair would fail every handshake, and each failure would count against an endpoint.
    if (!new X509Certificate(tls.cert!).checkPrivateKey(key)) throw invalidOption('tls.key', tls.key, 'is not the private key of tls.cert (its first certificate)');
  }
  if (tls.servername !== undefined && (typeof tls.servername !== 'string' || !(isHostName(tls.servername) || isIpLiteral(tls.servername)))) {
    throw invalidOption('tls.servername', tls.servername, 'must be a host name or IP address, without a port or a scheme');
  }
  if (tls.rejectUnauthorized !== undefined && typeof tls.rejectUnauthorized !== 'boolean') {
    throw invalidOption('tls.rejectUnauthorized', tls.rejectUnauthorized, 'must be a boolean');
  }
  if (tls.allowUnverifiedDiscovered !== undefined && typeof tls.allowUnverifiedDiscovered !== 'boolean') {
    throw invalidOption('tls.allowUnverifiedDiscovered', tls.allowUnverifiedDiscovered, 'must be a boolean');
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
  rejectUnknownKeys('retryBudget', budget, knownKeys['retryBudget']!);
  return {
    percent: integerIn('retryBudget.percent', budget.percent ?? defaultOptions.retryBudget.percent, 0, 100),
    min: integerIn('retryBudget.min', budget.min ?? defaultOptions.retryBudget.min, 0, 1_000_000),
  };
}

function validateProbe(probe: BalancerOptions['probe']): ResolvedOptions['probe'] {
  if (probe === false) return false;
  if (probe === undefined) return { ...defaultOptions.probe, headers: {} };
  if (typeof probe !== 'object' || probe === null) throw invalidOption('probe', probe, 'must be an object or false');
  rejectUnknownKeys('probe', probe, knownKeys['probe']!);
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
  return belowTimerLimit(field, value);
}
