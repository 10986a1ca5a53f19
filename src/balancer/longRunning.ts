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
