/**
 * Long-running requests hold a stream open for minutes: watches (`watch=true` or a `/watch/` path),
 * followed logs (`follow=true`) and upgrades (exec, attach, port-forward). They are balanced by open
 * streams rather than by request count, and get no body timeout. Of them, watches that are GETs can
 * be ended at an event boundary.
 */
export type RequestKind = 'short' | 'long-running' | 'watch';

/** Runs for every request: the path is scanned in place, and its query parsed only if it names `watch` or `follow`. */
export function classify(method: string, path: string, upgrade: unknown, query?: Record<string, unknown> | null): RequestKind {
  let watch = query ? isTrue(query.watch) : false;
  let follow = query ? isTrue(query.follow) : false;
  const q = path.indexOf('?');
  // `/watch/` in the path proper: an occurrence that ends before the query.
  if (!watch && path.lastIndexOf('/watch/', (q === -1 ? path.length : q) - 7) !== -1) watch = true;
  if (!watch && q !== -1 && (path.includes('watch', q) || path.includes('follow', q))) {
    const params = new URLSearchParams(path.slice(q + 1));
    watch = isTrue(params.get('watch'));
    follow ||= isTrue(params.get('follow'));
  }
  if (watch) return method === 'GET' || method === 'get' ? 'watch' : 'long-running';
  return follow || (upgrade !== undefined && upgrade !== null && upgrade !== false) ? 'long-running' : 'short';
}

function isTrue(value: unknown): boolean {
  return value === true || value === 'true' || value === '1' || value === 1;
}
