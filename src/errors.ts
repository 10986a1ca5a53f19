/**
 * Every error this package raises itself is a `BalancerError` with a stable `code`, so callers can
 * branch on `err.code` instead of parsing messages.
 */
export type BalancerErrorCode =
  /** `options.target` is not a target this package understands. */
  | 'ERR_INVALID_TARGET'
  /** An option has a wrong type or value; the message names the field. */
  | 'ERR_INVALID_OPTION'
  /** No endpoint is known (resolution failed or returned nothing) or none can take a request. */
  | 'ERR_NO_ENDPOINTS'
  /** Every attempt of a request failed; `causes` holds each endpoint's error. */
  | 'ERR_ALL_ENDPOINTS_FAILED'
  /** The balancer was closed or destroyed. */
  | 'ERR_BALANCER_CLOSED'
  /** A DNS lookup failed or found no records; `reason` says which (a `DnsError`). */
  | 'ERR_DNS'
  /** A kubeconfig cannot be used: no current cluster, a server that is not a URL, already attached. */
  | 'ERR_KUBECONFIG'
  /** The running Node.js or the installed undici is outside what this package supports; the message says what was found, what is needed and the fix. */
  | 'ERR_PLATFORM'
  /** An optional package a feature needs (e.g. `ws` and `jsrsasign` for `kube-balancer/testing`) is not installed; the message names it and the install command. */
  | 'ERR_MISSING_PACKAGE';

export class BalancerError extends Error {
  override readonly name: string = 'BalancerError';
  readonly code: BalancerErrorCode;
  /** For `ERR_ALL_ENDPOINTS_FAILED`: each endpoint tried (`ip:port`) and its error, in order. */
  readonly causes: ReadonlyArray<{ endpoint: string; error: Error }>;

  constructor(code: BalancerErrorCode, message: string, options?: { cause?: unknown; causes?: ReadonlyArray<{ endpoint: string; error: Error }> }) {
    super(message, options);
    this.code = code;
    this.causes = options?.causes ?? [];
  }
}

/** Every endpoint a request tried failed: the error names each one's cause. */
export function allEndpointsFailed(error: Error, causes: ReadonlyArray<{ endpoint: string; error: Error }>): BalancerError {
  const list = causes.map((c) => `${c.endpoint}: ${describeError(c.error)}`).join('; ');
  return new BalancerError('ERR_ALL_ENDPOINTS_FAILED', `every apiserver endpoint tried failed (${list})`, { cause: error, causes: [...causes] });
}

function describeError(error: Error): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : error.message;
}

export function invalidOption(field: string, value: unknown, expected: string): BalancerError {
  return new BalancerError('ERR_INVALID_OPTION', `options.${field} ${expected}; got ${describe(value)}`);
}

export function invalidTarget(target: string, reason: string): BalancerError {
  return new BalancerError('ERR_INVALID_TARGET', `options.target ${JSON.stringify(target)}: ${reason}`);
}

/** A short, safe rendering of a bad value for an error message (never dumps key material). */
export function describe(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (Buffer.isBuffer(value)) return `a Buffer of ${value.length} bytes`;
  if (typeof value === 'string' && value.includes('-----BEGIN')) return `PEM text of ${value.length} characters`;
  if (typeof value === 'string') return value.length > 60 ? `${JSON.stringify(value.slice(0, 57))}…` : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'function') return 'a function';
  // A Promise where its value belongs is the usual slip (`pki: generatePki()` without `await`).
  if (typeof (value as { then?: unknown }).then === 'function') return 'a Promise (a missing await?)';
  return `an object`;
}
