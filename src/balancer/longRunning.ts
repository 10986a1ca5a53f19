/**
 * Long-running requests hold a stream open for minutes: watches (`watch=true` or a `/watch/` path),
 * followed logs (`follow=true`) and upgrades (exec, attach, port-forward). They are balanced by open
 * streams rather than by request count, and get no body timeout.
 */
export function isLongRunning(path: string, upgrade: unknown, query?: Record<string, unknown> | null): boolean {
  if (upgrade !== undefined && upgrade !== null && upgrade !== false) return true;
  if (query && (isTrue(query.watch) || isTrue(query.follow))) return true;
  const q = path.indexOf('?');
  const pathname = q === -1 ? path : path.slice(0, q);
  if (pathname.includes('/watch/')) return true;
  if (q === -1 || (!path.includes('watch', q) && !path.includes('follow', q))) return false;
  const params = new URLSearchParams(path.slice(q + 1));
  return isTrue(params.get('watch')) || isTrue(params.get('follow'));
}

function isTrue(value: unknown): boolean {
  return value === true || value === 'true' || value === '1' || value === 1;
}

/** Of the long-running requests, the watches: `watch=true` or a `/watch/` path (a GET). */
export function isWatch(method: string, path: string, query?: Record<string, unknown> | null): boolean {
  if (method !== 'GET' && method !== 'get') return false;
  if (query && isTrue(query.watch)) return true;
  const q = path.indexOf('?');
  if ((q === -1 ? path : path.slice(0, q)).includes('/watch/')) return true;
  return q !== -1 && path.includes('watch', q) && isTrue(new URLSearchParams(path.slice(q + 1)).get('watch'));
}
