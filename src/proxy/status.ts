import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** Seconds a client is told to wait when no apiserver could serve: client-go retries a 503 after `Retry-After`. */
const RETRY_AFTER_SECONDS = 1;

/** A `metav1.Status` failure, as an apiserver writes it, so client-go and kubectl read the reason and message. */
function statusBody(code: number, reason: string, message: string): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

/** Answers with a Status body; a 503 carries `Retry-After`. */
export function sendStatus(res: ServerResponse, code: number, reason: string, message: string): void {
  const body = statusBody(code, reason, message);
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' };
  if (code === 503) headers['retry-after'] = RETRY_AFTER_SECONDS;
  res.writeHead(code, headers).end(body);
}

/** The same answer on a raw socket (an upgrade request, which has no ServerResponse), then the connection closes. */
export function sendStatusOnSocket(socket: Duplex, code: number, reason: string, message: string): void {
  const body = statusBody(code, reason, message);
  const lines = [
    `HTTP/1.1 ${code} ${STATUS_CODES[code] ?? ''}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...(code === 503 ? [`Retry-After: ${RETRY_AFTER_SECONDS}`] : []),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}
