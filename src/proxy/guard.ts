import type { IncomingMessage } from 'node:http';

/** Why the proxy refused a request before sending anything upstream: the status, and a message for the Status body. */
export interface Refusal {
  status: 400 | 403 | 404 | 405;
  reason: 'BadRequest' | 'Forbidden' | 'NotFound' | 'MethodNotAllowed';
  message: string;
}

/** The checks every request passes, upgrades included, in this order. */
export interface GuardRules {
  /**
   * Exact `host:port` values the `Host` header may have (lower case); `undefined` accepts any (a unix
   * socket, which a browser cannot reach, so DNS rebinding does not apply).
   */
  acceptHosts: ReadonlySet<string> | undefined;
  /** The paths refused, matched against the decoded path after the API prefix. */
  rejectPaths: readonly RegExp[];
  /** The methods refused (upper case, exact). */
  rejectMethods: ReadonlySet<string>;
}

/** A request that passed the guard: the path to send upstream (the API prefix taken off) and its query. */
export interface Admitted {
  /** `/…`, as the client wrote it (percent-encoding kept), the API prefix taken off. */
  path: string;
  /** `?…` or ''. */
  search: string;
  /** The admin prefix's endpoint asked for, if the request is for the proxy itself. */
  admin?: string;
}

/** The proxy's own endpoints live under this prefix: no apiserver path starts with `/.`. */
const ADMIN_PREFIX = '/.kube-balancer/';

/**
 * Checks one request against the rules (README "proxy" and SECURITY.md's trust model): the request
 * target must be a plain absolute path (no absolute form, no `*`, no dot segments or empty segments
 * that a path rule could be dodged with); the Host must be one of the accepted ones (DNS rebinding);
 * a browser's cross-site request is refused by its `Origin` or `Sec-Fetch-Site` (WebSockets carry
 * both, and browsers apply no same-origin policy to them); then the path and method rules.
 */
export function admit(req: IncomingMessage, rules: GuardRules, apiPrefix: string): Admitted | Refusal {
  const target = req.url ?? '';
  if (!target.startsWith('/') || target.startsWith('//')) {
    return bad(`the request target must be an absolute path (origin form), got ${JSON.stringify(target.slice(0, 80))}: this is not a forward proxy`);
  }
  const host = (req.headers.host ?? '').toLowerCase();
  const normalHost = host.includes(':') && !host.endsWith(']') ? host : `${host}:80`;
  if (rules.acceptHosts && !rules.acceptHosts.has(normalHost)) {
    return forbidden(`Host ${JSON.stringify(host)} is not one this proxy answers to (DNS rebinding guard; see --accept-hosts)`);
  }
  const origin = req.headers.origin;
  if (origin !== undefined && !sameOrigin(origin, normalHost, rules.acceptHosts)) {
    return forbidden(`cross-origin request refused: Origin ${JSON.stringify(origin)} is not this proxy's`);
  }
  if (String(req.headers['sec-fetch-site'] ?? '').toLowerCase() === 'cross-site') {
    return forbidden('cross-site request refused (Sec-Fetch-Site: cross-site)');
  }
  const query = target.indexOf('?');
  const rawPath = query === -1 ? target : target.slice(0, query);
  const search = query === -1 ? '' : target.slice(query);
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    return bad('the request path has a malformed percent-encoding');
  }
  const segments = decoded.split('/').slice(1);
  if (segments.some((s, i) => s === '.' || s === '..' || (s === '' && i < segments.length - 1)) || decoded.includes('\\')) {
    return bad(`the request path ${JSON.stringify(rawPath.slice(0, 80))} has empty, "." or ".." segments: send it normalized`);
  }
  if (decoded.startsWith(ADMIN_PREFIX)) return { path: rawPath, search, admin: decoded.slice(ADMIN_PREFIX.length) };
  const prefix = apiPrefix === '/' ? '' : apiPrefix.replace(/\/$/, '');
  // The prefix is plain text: matched on the path as written, so an encoded prefix is not one.
  if (prefix && rawPath !== prefix && !rawPath.startsWith(`${prefix}/`)) {
    return { status: 404, reason: 'NotFound', message: `the API is served under ${prefix}/ here (--api-prefix)` };
  }
  const upstreamPath = rawPath.slice(prefix.length) || '/';
  const upstreamDecoded = decoded.slice(prefix.length) || '/';
  if (rules.rejectPaths.some((rule) => rule.test(upstreamDecoded))) {
    return forbidden(`the path ${upstreamDecoded} is refused by this proxy (--reject-paths)`);
  }
  const method = (req.method ?? '').toUpperCase();
  if (rules.rejectMethods.has(method)) return forbidden(`the method ${method} is refused by this proxy (--reject-methods)`);
  return { path: upstreamPath, search };
}

/** `Origin` is the proxy's own: `http://` and a Host it answers to (the request's own Host when any is accepted). */
function sameOrigin(origin: string, normalHost: string, accepted: ReadonlySet<string> | undefined): boolean {
  const parsed = URL.parse(origin);
  if (!parsed || parsed.protocol !== 'http:' || parsed.origin === 'null') return false;
  const host = `${parsed.hostname}:${parsed.port || '80'}`;
  return accepted ? accepted.has(host) : host === normalHost;
}

function forbidden(message: string): Refusal {
  return { status: 403, reason: 'Forbidden', message };
}

function bad(message: string): Refusal {
  return { status: 400, reason: 'BadRequest', message };
}

export function isRefusal(result: Admitted | Refusal): result is Refusal {
  return 'status' in result;
}
