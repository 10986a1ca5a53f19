import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { BalancerError } from '../errors.ts';
import { classifyError } from '../health/classifyError.ts';
import { sendStatus } from './status.ts';

/** Where and how requests go: the balancer, its origin (with the server's path prefix) and the credentials of the moment. */
export interface Upstream {
  dispatcher: Dispatcher;
  /** The kubeconfig's `server`: its origin is the balanced one, its path a prefix of every request's. */
  server: URL;
  /** The headers that authenticate a request (`authorization`, …), read fresh enough to follow rotations. */
  credentials(): Promise<Record<string, string>>;
}

/**
 * The largest request body the proxy takes. It holds a body whole so that the balancer can send a
 * request again where that is safe; the apiserver's own limit is 3 MiB (`MaxRequestBodyBytes`).
 */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** Headers of one hop (RFC 9110 §7.6.1) and those the proxy sets itself. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host']);

/** The client's headers as sent (repeats kept), without hop-by-hop ones and those `Connection` names; `drop` too. */
export function endToEnd(raw: readonly string[], drop: ReadonlySet<string> = new Set()): string[] {
  const named = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'connection') for (const n of raw[i + 1]!.split(',')) named.add(n.trim().toLowerCase());
  }
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (HOP.has(name) || named.has(name) || drop.has(name)) continue;
    out.push(raw[i]!, raw[i + 1]!);
  }
  return out;
}

/** The credentials replace whatever the client sent under the same names: the proxy speaks with the kubeconfig's identity. */
export function withCredentials(headers: string[], credentials: Record<string, string>): string[] {
  const names = new Set(Object.keys(credentials).map((n) => n.toLowerCase()));
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) if (!names.has(headers[i]!.toLowerCase())) out.push(headers[i]!, headers[i + 1]!);
  for (const [name, value] of Object.entries(credentials)) out.push(name, value);
  return out;
}

/** The upstream URL path for a client path: the server's own path prefix, then the client's. */
export function upstreamPath(server: URL, path: string, search: string): string {
  return `${server.pathname.replace(/\/$/, '')}${path}${search}`;
}

/** A request with neither of these has no body (RFC 9112 §6.3): nothing to wait for. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

const NO_BODY = Buffer.alloc(0);

/**
 * Sends one request through the balancer and streams the answer back chunk by chunk (a watch or a
 * followed log reaches the client as the apiserver writes it; the balancer sets no idle timeout on
 * those). When no apiserver could answer, the client gets a 503 with `Retry-After` and a Status
 * body — but only where sending again is safe: a write that may have reached an apiserver gets a 502
 * without `Retry-After`, so that client-go does not send it twice. Resolves once the answer is over.
 */
export async function forward(req: IncomingMessage, res: ServerResponse, upstream: Upstream, path: string, search: string): Promise<void> {
  const method = req.method ?? 'GET';
  let resolve!: () => void;
  const over = new Promise<void>((r) => (resolve = r));
  // Made first: it watches for the client going away while the body and credentials are read.
  const handler = new ToClient(res, method, resolve);
  const body = hasBody(req) ? await readBody(req) : NO_BODY;
  if (body === 'too large') return sendStatus(res, 413, 'RequestEntityTooLarge', `the request body is over the proxy's ${MAX_BODY_BYTES} bytes`);
  const credentials = await upstream.credentials();
  if (handler.gone) return;
  upstream.dispatcher.dispatch(
    {
      origin: upstream.server.origin,
      path: upstreamPath(upstream.server, path, search),
      method,
      headers: withCredentials(endToEnd(req.rawHeaders), credentials),
      body: body.length > 0 || !NO_BODY_METHODS.has(method) ? body : null,
    },
    handler,
  );
  return over;
}

const NO_BODY_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/**
 * The balancer's answer written straight to the client's response: a dispatch handler rather than
 * `request()` and a pipeline, which cost a body stream, an abort signal and a pipeline's listeners
 * per request (about a third of the proxy's CPU per request, profiled).
 */
class ToClient implements Dispatcher.DispatchHandler {
  readonly #res: ServerResponse;
  readonly #method: string;
  readonly #done: () => void;
  #controller: Dispatcher.DispatchController | undefined;
  /** The client went away before the request started upstream: abort it as it starts. */
  #gone = false;
  #ended = false;

  constructor(res: ServerResponse, method: string, done: () => void) {
    this.#res = res;
    this.#method = method;
    this.#done = done;
    // The client going away ends the upstream request (a watch's included).
    res.once('close', () => {
      if (this.#ended) return;
      this.#gone = true;
      this.#controller?.abort(new Error('the client closed the connection'));
    });
  }

  get gone(): boolean {
    return this.#gone;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#gone) controller.abort(new Error('the client closed the connection'));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    const res = this.#res;
    const out: string[] = [];
    for (const name in headers) {
      const value = headers[name];
      if (HOP.has(name) || value === undefined) continue;
      if (typeof value === 'string') out.push(name, value);
      else for (const v of value) out.push(name, v);
    }
    res.writeHead(statusCode, out);
    // A quiet watch's headers must not wait for its first event; an answer of known length follows at once.
    if (headers['content-length'] === undefined) res.flushHeaders();
    res.on('drain', () => controller.resume());
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.#res.write(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    this.#ended = true;
    this.#res.end();
    this.#done();
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.#ended = true;
    const res = this.#res;
    // The client left, or the apiserver broke the stream: the client sees its connection end short.
    if (this.#gone || res.headersSent) res.destroy();
    else failed(res, this.#method, error);
    this.#done();
  }
}

function failed(res: ServerResponse, method: string, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  if (retrySafe(method, error)) return sendStatus(res, 503, 'ServiceUnavailable', `no apiserver could serve the request: ${message}`);
  sendStatus(res, 502, 'InternalError', `the apiserver connection broke after the request was sent; it may have been applied: ${message}`);
}

/** Whether the client may send the request again: a read, or a write that no apiserver can have seen. */
function retrySafe(method: string, error: unknown): boolean {
  if (['GET', 'HEAD', 'OPTIONS'].includes(method)) return true;
  if (!(error instanceof BalancerError)) return isUnsent(error);
  if (error.code === 'ERR_NO_ENDPOINTS' || error.code === 'ERR_BALANCER_CLOSED') return true;
  if (error.code === 'ERR_ALL_ENDPOINTS_FAILED') return error.causes.every((c) => isUnsent(c.error));
  return isUnsent(error.cause);
}

function isUnsent(error: unknown): boolean {
  const kind = classifyError(error);
  return kind === 'connect' || kind === 'tls' || kind === 'refused';
}

/** The request body, whole; `'too large'` past the limit (the rest is not read). */
async function readBody(req: IncomingMessage): Promise<Buffer | 'too large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return 'too large';
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
