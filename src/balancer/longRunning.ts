import { stringify } from 'node:querystring';

/**
 * Long-running requests hold a stream open for minutes: watches, followed logs (`follow`) and
 * upgrades (exec, attach, port-forward). They are balanced by open streams rather than by request
 * count, and get no body timeout. Of them, watches that are GETs can be ended at an event boundary.
 */
export type RequestKind = 'short' | 'long-running' | 'watch';

/**
 * Runs for every request. A request is a watch when kube-apiserver's RequestInfoFactory makes its
 * verb `watch` (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go, NewRequestInfo): the
 * `/watch/` prefix right after the group version, or a GET/HEAD of a collection (no object name)
 * whose `watch` parameter is true as apimachinery reads booleans ({@link queryBool}). `watch=true`
 * on a named object is a plain get there, and so it is here. The query is parsed only if it names
 * `watch` or `follow`; `query` is undici's option, serialized as undici will send it.
 */
export function classify(method: string, path: string, upgrade: unknown, query?: Record<string, unknown> | null): RequestKind {
  const q = path.indexOf('?');
  const pathProper = q === -1 ? path : path.slice(0, q);
  let params: URLSearchParams | undefined;
  if (query && ('watch' in query || 'follow' in query)) params = new URLSearchParams(stringify(query as Parameters<typeof stringify>[0]));
  else if (q !== -1 && (path.includes('watch', q) || path.includes('follow', q))) params = new URLSearchParams(path.slice(q + 1));
  // Most requests name neither: their path is not split.
  const parts = params || pathProper.includes('/watch') ? resourceParts(pathProper) : undefined;
  let watch = false;
  if (parts?.[0] === 'watch') watch = parts.length > 1;
  else if (parts && params && (method === 'GET' || method === 'get' || method === 'HEAD' || method === 'head')) watch = isCollection(parts) && queryBool(params.getAll('watch'));
  if (watch) return method === 'GET' || method === 'get' ? 'watch' : 'long-running';
  const follow = params !== undefined && queryBool(params.getAll('follow'));
  return follow || (upgrade !== undefined && upgrade !== null && upgrade !== false) ? 'long-running' : 'short';
}

/**
 * A boolean query parameter as apimachinery decodes it (k8s.io/apimachinery/pkg/runtime/
 * conversion.go, Convert_Slice_string_To_bool, used for ListOptions.watch and PodLogOptions.follow):
 * absent is false; the first value decides; "0" and "false" in any case are false; anything else —
 * "", a bare `watch`, "t", "yes", "True" — is true. Not strconv.ParseBool: `watch=f` is a watch.
 */
export function queryBool(values: readonly string[]): boolean {
  const first = values[0];
  return first !== undefined && first !== '0' && first.toLowerCase() !== 'false';
}

/**
 * The segments after the group version of a resource path, as NewRequestInfo splits it (slashes
 * trimmed; `/api/{version}/…` or `/apis/{group}/{version}/…`), or `undefined` for a non-resource
 * path (`/version`, `/healthz`, discovery), whose `watch` parameter the apiserver never reads.
 */
function resourceParts(pathProper: string): string[] | undefined {
  const parts = pathProper.replace(/^\/+|\/+$/g, '').split('/');
  const skip = parts[0] === 'api' ? 2 : parts[0] === 'apis' ? 3 : 0;
  if (skip === 0 || parts.length <= skip) return undefined;
  return parts.slice(skip);
}

/** `namespaces/{ns}` and its `status`/`finalize` name a namespace; `namespaces/{ns}/{resource}/…` is relative to the resource. */
function isCollection(parts: readonly string[]): boolean {
  let rest = parts;
  if (rest[0] === 'namespaces' && rest.length > 2 && rest[2] !== 'status' && rest[2] !== 'finalize') rest = rest.slice(2);
  return rest.length === 1;
}
