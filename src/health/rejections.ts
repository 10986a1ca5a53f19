type Headers = Record<string, string | string[] | undefined>;

/** Bytes of a rejection's body kept to read what it says; every rejection below is far smaller. */
export const REJECTION_BODY_BYTES = 512;

/** `kept` with what `chunk` adds of a 429's or 5xx's body, up to `REJECTION_BODY_BYTES`; other bodies are not kept. */
export function keepRejectionBody(kept: string, statusCode: number, chunk: Buffer): string {
  if ((statusCode !== 429 && statusCode < 500) || kept.length >= REJECTION_BODY_BYTES) return kept;
  return kept + chunk.toString('latin1', 0, REJECTION_BODY_BYTES - kept.length);
}

/**
 * A 429 from an apiserver that is shutting down (`--shutdown-send-retry-after`) rather than from API
 * Priority and Fairness: it closes the connection (HTTP/1.1; on HTTP/2 Go turns that into GOAWAY)
 * and says so in its body, and carries none of APF's `X-Kubernetes-PF-*` headers.
 */
export function isShutdown429(headers: Headers, body: string): boolean {
  return String(headers.connection ?? '').toLowerCase().includes('close') || body.includes('shutting down');
}

/**
 * Whether a 429 may be a shutdown's, from its headers alone: `Retry-After`, none of APF's headers
 * (kube-apiserver's `WithRetryAfter` filter answers before API Priority and Fairness runs), a body
 * small enough to read whole. On HTTP/2 only its body tells (`isShutdown429`): such a 429 whose retry
 * was refused as a throttle's is read before the caller gets it.
 */
export function mayBeShutdown429(statusCode: number, headers: Headers): boolean {
  if (statusCode !== 429 || first(headers['retry-after']) === undefined || headers['x-kubernetes-pf-flowschema-uid'] !== undefined) return false;
  const length = first(headers['content-length']);
  return length === undefined || Number(length) <= REJECTION_BODY_BYTES;
}

/**
 * Whether a 503 may be the default shutdown's rejection, from its headers alone: `Retry-After`, a
 * JSON body small enough to read whole before deciding. Only such a 503 is held back from the caller
 * of a request that may not be repeated, while its body is read.
 */
export function mayBeShutdown503(statusCode: number, headers: Headers): boolean {
  if (statusCode !== 503 || first(headers['retry-after']) === undefined) return false;
  if (!/^application\/json\b/i.test(first(headers['content-type']) ?? '')) return false;
  const length = first(headers['content-length']);
  return length === undefined || Number(length) <= REJECTION_BODY_BYTES;
}

/**
 * The default shutdown's 503 (no `--shutdown-send-retry-after`): once an apiserver stops accepting
 * requests, each new one that reaches it on an open connection is answered, before any handler runs,
 * by k8s.io/apiserver pkg/server/filters/waitgroup.go with 503, `Retry-After: 1` and the Status
 * `{"kind":"Status",…,"status":"Failure","message":"apiserver is shutting down",
 * "reason":"ServiceUnavailable","code":503}`. Only that exact evidence makes a 503 safe to send
 * elsewhere for any verb: `Retry-After`, a JSON Status with code 503, reason `ServiceUnavailable` and
 * that message. A 503 from a webhook, an aggregated API, etcd or a proxy says something else (or is
 * not a Status) and may have run.
 */
export function isShutdown503(statusCode: number, headers: Headers, body: string): boolean {
  if (!mayBeShutdown503(statusCode, headers)) return false;
  const status = parseStatus(body);
  return status?.code === 503 && status.reason === 'ServiceUnavailable' && status.message === 'apiserver is shutting down';
}

/**
 * The watch cache of this apiserver has not reached the resourceVersion asked for (an
 * RV-pinned list, `resourceVersionMatch=NotOlderThan`): after waiting 3 s it answers 504 with reason
 * `Timeout` and the cause `ResourceVersionTooLarge` (k8s.io/apiserver pkg/storage/errors.go
 * `NewTooLargeResourceVersionError`, pkg/storage/cacher). Another apiserver's cache may be ahead:
 * the read is worth sending elsewhere, and it says nothing bad about this apiserver's health.
 */
export function isResourceVersionTooLarge(statusCode: number, body: string): boolean {
  if (statusCode !== 504) return false;
  const status = parseStatus(body);
  return status?.reason === 'Timeout' && (status.details?.causes ?? []).some((c) => c?.reason === 'ResourceVersionTooLarge');
}

interface Status {
  code?: unknown;
  reason?: unknown;
  message?: unknown;
  details?: { causes?: Array<{ reason?: unknown } | null> };
}

function parseStatus(body: string): Status | undefined {
  try {
    const value = JSON.parse(body) as unknown;
    if (typeof value !== 'object' || value === null || (value as { kind?: unknown }).kind !== 'Status') return undefined;
    const details = (value as Status).details;
    if (details !== undefined && (typeof details !== 'object' || details === null || (details.causes !== undefined && !Array.isArray(details.causes)))) return undefined;
    return value;
  } catch {
    return undefined;
  }
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
