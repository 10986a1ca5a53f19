import type { Dispatcher } from 'undici';

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;
type Headers = Parameters<NonNullable<Handler['onResponseStart']>>[2];

/**
 * A response held back until it is complete (a short GET or HEAD): its head and body chunks, up to
 * `limit` bytes. While it is held the caller has seen nothing, so a connection that breaks before
 * the end can still be retried on another endpoint; once released, it is the caller's.
 *
 * Chunks are kept as undici hands them over: each is a view of a buffer read for it alone (an
 * HTTP/1.1 socket read, an HTTP/2 DATA frame), never rewritten, so holding them costs no copy.
 */
export class HeldResponse {
  readonly #statusCode: number;
  readonly #headers: Headers;
  readonly #statusMessage: string | undefined;
  readonly #limit: number;
  /** The first chunk, and the rest once there are more: most held responses are one chunk. */
  #first: Buffer | undefined;
  #rest: Buffer[] | undefined;
  #bytes = 0;

  constructor(statusCode: number, headers: Headers, statusMessage: string | undefined, limit: number) {
    this.#statusCode = statusCode;
    this.#headers = headers;
    this.#statusMessage = statusMessage;
    this.#limit = limit;
  }

  /** Holds one more chunk; false once the body has grown past the limit (the chunk is held all the same). */
  add(chunk: Buffer): boolean {
    if (this.#first === undefined) this.#first = chunk;
    else (this.#rest ??= []).push(chunk);
    this.#bytes += chunk.length;
    return this.#bytes <= this.#limit;
  }

  /** Hands the head and every held chunk to `downstream`, and lets go of them. */
  release(downstream: Handler, controller: Controller): void {
    const first = this.#first;
    const rest = this.#rest;
    this.#first = undefined;
    this.#rest = undefined;
    downstream.onResponseStart?.(controller, this.#statusCode, this.#headers, this.#statusMessage);
    if (first === undefined || controller.aborted) return;
    downstream.onResponseData?.(controller, first);
    if (rest === undefined) return;
    for (const chunk of rest) {
      if (controller.aborted) return;
      downstream.onResponseData?.(controller, chunk);
    }
  }
}

/** Whether a response of this `Content-Length` (if it says) can be held within `limit` bytes. */
export function fitsHold(contentLength: string | string[] | undefined, limit: number): boolean {
  if (limit <= 0) return false;
  const value = Array.isArray(contentLength) ? contentLength[0] : contentLength;
  if (value === undefined) return true;
  const length = Number(value);
  return !(length > limit);
}
