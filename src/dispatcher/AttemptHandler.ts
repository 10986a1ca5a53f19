import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;
type Headers = Parameters<NonNullable<Handler['onResponseStart']>>[2];

/** How one attempt on one endpoint ended. */
export interface AttemptOutcome {
  /** HTTP status, when a response started. */
  statusCode?: number;
  /** Transport or protocol error, when the attempt failed. */
  error?: Error;
  /** True when the caller aborted: says nothing about the endpoint's health. */
  aborted: boolean;
}

/**
 * Forwards every callback to the caller's (v2) handler and reports the outcome once. An explicit
 * forwarding class, because `Object.create(handler)` breaks handlers with `#private` fields.
 */
export class AttemptHandler implements Handler {
  readonly #inner: Handler;
  readonly #done: (outcome: AttemptOutcome) => void;
  #statusCode: number | undefined;
  #settled = false;
  #controller: Controller | undefined;

  constructor(inner: Handler, done: (outcome: AttemptOutcome) => void) {
    this.#inner = inner;
    this.#done = done;
  }

  onRequestStart(controller: Controller, context: unknown): void {
    this.#controller = controller;
    this.#inner.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(controller: Controller, statusCode: number, headers: Headers, socket: Duplex): void {
    this.#statusCode = statusCode;
    // An upgraded socket (exec, attach, port-forward) is a stream until it closes.
    socket.once('close', () => this.#settle({ statusCode, aborted: false }));
    this.#inner.onRequestUpgrade?.(controller, statusCode, headers, socket);
  }

  onResponseStart(controller: Controller, statusCode: number, headers: Headers, statusMessage?: string): void {
    this.#statusCode = statusCode;
    this.#inner.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    this.#inner.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Controller, trailers: Headers): void {
    this.#settle({ statusCode: this.#statusCode, aborted: false });
    this.#inner.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Controller | null, error: Error): void {
    const aborted = (controller ?? this.#controller)?.aborted === true;
    this.#settle({ statusCode: this.#statusCode, error, aborted });
    this.#inner.onResponseError?.(controller as Controller, error);
  }

  onBodySent(chunk: Buffer): void {
    this.#inner.onBodySent?.(chunk);
  }

  onRequestSent(): void {
    this.#inner.onRequestSent?.();
  }

  onResponseStarted(): void {
    this.#inner.onResponseStarted?.();
  }

  #settle(outcome: AttemptOutcome): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#done(outcome);
  }
}
