import type { Dispatcher } from 'undici';
import type { UndiciModule } from '../options/BalancerOptions.ts';

// undici's handler contract, as the balancer's `dispatch` meets it.

/** undici reads `allowH2` and `servername` per request, though its types do not list them. */
export type DispatchOptions = Dispatcher.DispatchOptions & { allowH2?: boolean; servername?: string };
export type DispatchHandler = Dispatcher.DispatchHandler;
type AnyHandler = DispatchHandler & { onError?: (error: Error) => void };

export function withoutDispatcher(opts: DispatchOptions): DispatchOptions {
  const { dispatcher: _ignored, ...rest } = opts as DispatchOptions & { dispatcher?: unknown };
  return rest;
}

/** Wraps a v1 handler (Node's built-in fetch, undici 7) for the v2 core of undici 8. */
export function wrapLegacyHandler(module: UndiciModule, handler: DispatchHandler): DispatchHandler {
  const wrapper = module.Dispatcher1Wrapper as unknown as { wrapHandler(h: unknown): DispatchHandler };
  return wrapper.wrapHandler(handler);
}

/** Failures are reported through the handler, never thrown out of dispatch (undici's contract). */
export function reportError(handler: AnyHandler, error: Error): void {
  if (typeof handler.onResponseError === 'function') handler.onResponseError(null as never, error);
  else handler.onError?.(error);
}
