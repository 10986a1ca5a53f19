import type * as Undici from 'undici';
import type { Policy } from '../balancer/Picker.ts';
import type { Clock } from '../clock.ts';
import { dnsCacheDefaults } from '../dns/DnsCache.ts';
import type { HeadersSource } from '../net/headers.ts';
import type { Pem, TlsOptions } from '../net/tls.ts';
import type { Logger } from '../observability/logger.ts';
import type { Target } from '../resolver/parseTarget.ts';

export type { HeadersSource, Pem, TlsOptions };

/** The parts of an undici module the balancer builds its connection pools from. */
export type UndiciModule = Pick<typeof Undici, 'Pool' | 'Agent' | 'Dispatcher1Wrapper'>;

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
   * Milliseconds; shorter TTLs, 0 included (dnsmasq's default), count as this. Default 5000
   * (CoreDNS's default TTL): a refresh at most about every 4 s per name, so that 10,000 clients
   * of a TTL-0 name send ~2,400 queries a second rather than 12,000 (`npm run fleet -- --scenario
   * dns-ttl0`); an apiserver that joins is seen within about 5 s, one that leaves at once (failed
   * connections refresh).
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
   * Only requests to this origin (e.g. `https://kubernetes.default.svc:443`) are balanced, and
   * probes are sent for it; requests to any other origin go unchanged through a plain undici
   * `Agent`. Default: the origin of `bootstrap.server`; without either, construction fails.
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
   * of every apiserver cannot multiply the load (Envoy's and Finagle's defaults); retries after an
   * apiserver's shutdown rejection are not counted. Default `{ percent: 20, min: 3 }`.
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
   * (by `Content-Length`, or once it grows past it), or one not complete within 1 s, streams as it
   * arrives and is not retried. Costs
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
   * How short requests are spread. `'weighted-round-robin'` (default): the round robin below, each
   * endpoint's weight also scaled down while it answers short GETs slower than the fastest endpoint
   * (or stops answering), recomputed at most every 100 ms; alike endpoints keep exactly the plain
   * round robin. `'round-robin'`: weighted (SRV weights, health, slow start) and deterministic, each
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
   * times a second the oldest watch on the endpoint furthest above its quota (the client's watches
   * shared out by weight, rounded at random per client so that a fleet of clients comes out even)
   * is ended for the caller at an event boundary, exactly as an apiserver ends a watch at its
   * timeout, and the caller's informer re-watches from its last resourceVersion, on the endpoint
   * furthest below. Moves begin once the endpoint has been ready for `graceMs` (plus up to a third
   * of it at random): a restarted apiserver's watch cache starts at the resourceVersion it started
   * from and answers older watches 410, which makes informers re-list; watches get a bookmark about
   * once a minute. `false` turns it off. Default `{ maxPerSecond: 1, graceMs: 60000 }`.
   */
  rebalanceWatches?: { maxPerSecond?: number; graceMs?: number } | false;
  /**
   * The most endpoints the balancer uses from any listing; beyond it, the lowest priority values
   * are kept, then the lowest `address:port`, with a `warning` event. A cluster runs a handful of
   * apiservers (3 to 5 for kubeadm HA), so a listing of hundreds is broken or hostile DNS or
   * EndpointSlices, which would otherwise cost a probe every `probe.intervalMs` and a connection
   * pool each. An integer from 1 to 10000. Default 100.
   */
  maxEndpoints?: number;
  /**
   * Hedged requests: a GET or HEAD (not long-running) with no response headers after the
   * `percentile` (default 99) of recent times to first byte, within `minDelayMs` (default 50) and
   * `maxDelayMs` (default 250), while its endpoint has answered nothing since it was sent, is sent
   * to a second endpoint too; the first response wins. Hedges are earned (2 per 100 answered
   * GETs) and spend the retry budget. On by default (`{}` is the defaults); `false` turns it off.
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
  policy: 'weighted-round-robin',
  slowStartMs: 10_000,
  panicThreshold: 0.5,
  dns: dnsCacheDefaults,
  rebalanceWatches: { maxPerSecond: 1, graceMs: 60_000 },
  maxEndpoints: 100,
  hedge: { minDelayMs: 50, maxDelayMs: 250, percentile: 99 },
  tls: { allowUnverifiedDiscovered: false },
} as const;
