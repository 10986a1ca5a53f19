/**
 * The class of a short request that is no GET of one named object (`isPointRead`): its verb, its
 * resource (group, version, resource, subresource) and its scope (cluster, a namespace — any one —
 * or one named object), e.g. `GET /api/v1/namespaces/*\/pods` for a LIST of one namespace's pods,
 * `DELETE /apis/apps/v1/namespaces/*\/deployments/*`; a non-resource path (discovery, `/version`) is
 * its own class. Requests of one class cost about the same on every apiserver, so their latencies
 * compare endpoints where latencies of different classes would not (`ClassCosts`).
 */
export function requestClass(method: string, path: string): string {
  const q = path.indexOf('?');
  const proper = q === -1 ? path : path.slice(0, q);
  const parts = proper.split('/');
  const skip = parts[1] === 'api' ? 3 : parts[1] === 'apis' ? 4 : 0;
  if (skip === 0 || parts.length <= skip) return `${method} ${proper}`;
  // Names (of the namespace, of the object) are left out; resources and subresources kept.
  let i = skip;
  if (parts[i] === 'namespaces' && parts.length > i + 2) {
    parts[i + 1] = '*';
    i += 2;
  }
  if (parts.length > i + 1) parts[i + 1] = '*';
  return `${method} ${parts.join('/')}`;
}
