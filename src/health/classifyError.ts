import type { FailureKind } from './outcome.ts';

const CONNECT = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);
// UND_ERR_RES_CONTENT_LENGTH_MISMATCH: a content-length that contradicts the framing (or the bytes
// that came); undici destroys the connection with it, so the answer is as broken as a reset.
const RESET = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH']);
const TIMEOUT = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
// OpenSSL verification failures surface with these codes (node's tls module passes them through).
const TLS_PREFIXES = ['ERR_TLS_', 'ERR_SSL_', 'CERT_', 'UNABLE_TO_', 'ERR_OSSL_'];
const TLS = new Set(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'HOSTNAME_MISMATCH', 'INVALID_CA', 'PATH_LENGTH_EXCEEDED', 'INVALID_PURPOSE']);

export function classifyError(error: unknown): FailureKind {
  const { code, name, message } = (error ?? {}) as { code?: unknown; name?: unknown; message?: unknown };
  if (name === 'AbortError' || code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR') return 'aborted';
  // undici fails only the streams a GOAWAY says were never processed, with this message.
  if (typeof message === 'string') {
    if (message.includes('"GOAWAY" frame received') || message.includes('REFUSED_STREAM')) return 'refused';
    // Node could not send the request's HEADERS frame (type 1; the session was failing): the server never saw it.
    if (message.includes('"frameError" received - type 1,')) return 'refused';
    if (message.includes('connection unresponsive')) return 'unresponsive';
    // undici's informational errors for one HTTP/2 stream that broke (the server reset or closed it
    // before the response ended): a broken request like a reset connection, so a GET may go elsewhere.
    if (code === 'UND_ERR_INFO' && (message.startsWith('HTTP/2: stream ') || message.startsWith('HTTP/2: "stream error" received'))) return 'reset';
  }
  // A response undici's HTTP/1.1 parser cannot read (its code, HPE_*, is sometimes missing): the
  // connection is destroyed, as when it breaks; the endpoint answered garbage.
  if (name === 'HTTPParserError') return 'reset';
  // undici 8's HTTP/1.1 client fails a request with its own AssertionError when the answer breaks
  // its state (a bare `101` to a plain GET: llhttp pauses on every 101, undici asserts it asked for
  // an upgrade) and destroys the socket with it: the same garbage answer, the same broken connection.
  if (code === 'ERR_ASSERTION') return 'reset';
  if (typeof code !== 'string') return 'other';
  if (CONNECT.has(code)) return 'connect';
  if (TLS.has(code) || TLS_PREFIXES.some((p) => code.startsWith(p))) return 'tls';
  if (RESET.has(code) || code.startsWith('ERR_HTTP2_')) return 'reset';
  if (TIMEOUT.has(code)) return 'timeout';
  return 'other';
}
