/**
 * Whether a request reads one named object: a GET or HEAD of `/api/v1/[namespaces/{ns}/]{resource}/{name}`
 * or `/apis/{group}/{version}/[namespaces/{ns}/]{resource}/{name}` — the cheapest request an
 * apiserver serves, and about as costly on every apiserver. Only these feed the latency estimate:
 * a LIST of 5,000 pods takes seconds anywhere, a write waits for etcd and admission webhooks,
 * `/openapi/v2` is megabytes, a subresource such as `log` or `proxy` is anybody's guess; letting
 * them in would make whichever endpoint served the last big LIST look slow. Scans the path once,
 * slash to slash, without allocating.
 */
export function isPointRead(method: string, path: string): boolean {
  if (method !== 'GET' && method !== 'HEAD' && method !== 'get' && method !== 'head') return false;
  let prefix: number;
  if (path.startsWith('/api/')) prefix = 2;
  else if (path.startsWith('/apis/')) prefix = 3;
  else return false;
  // Slashes after the first (segments after the prefix follow), and whether the first of those segments is `namespaces`.
  let slashes = 0;
  let namespaced = false;
  let end = path.indexOf('?');
  if (end === -1) end = path.length;
  if (path.charCodeAt(end - 1) === 47) end--; // a trailing slash
  for (let i = path.indexOf('/', 1); i !== -1 && i < end; i = path.indexOf('/', i + 1)) {
    if (i + 1 < end && path.charCodeAt(i + 1) === 47) return false; // an empty segment
    slashes++;
    if (slashes === prefix) namespaced = path.startsWith('namespaces/', i + 1);
  }
  const segments = slashes + 1 - prefix;
  // `{resource}/{name}`, or `namespaces/{ns}/{resource}/{name}`; `namespaces/{name}` is a named object too.
  return namespaced ? segments === 4 || segments === 2 : segments === 2;
}
