import type { Dispatcher } from 'undici';

type Headers = Dispatcher.DispatchOptions['headers'];

/**
 * Request headers, or a function that returns the current ones (sync or async), asked for before
 * every request so credentials that rotate (exec plugins, service-account token files) stay valid.
 */
export type HeadersSource = Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);

/**
 * Returns the request headers with `host` set to the original authority, unless the caller set one.
 * Accepts every shape undici accepts: a flat array, an iterable of pairs (returned as a flat array,
 * read once), or a plain object. `alone`
 * is what no headers at all become: a caller that sends many such requests passes one shared
 * `{ host }` instead of a new object each.
 */
export function withHost(headers: Headers, host: string, alone: Headers = { host }): Headers {
  if (headers == null) return alone;
  if (Array.isArray(headers)) {
    const flat = headers;
    for (let i = 0; i < flat.length; i += 2) if (isHost(flat[i])) return headers;
    return [...flat, 'host', host];
  }
  if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    // The flat copy is returned even when the caller set a host: the iterable may be one-shot (a
    // generator, a Map's entries()), read up here, and every attempt sends these headers again.
    const flat: string[] = [];
    let hasHost = false;
    for (const [name, value] of headers as Iterable<[string, string | string[] | undefined]>) {
      if (value === undefined) continue;
      if (isHost(name)) hasHost = true;
      for (const v of Array.isArray(value) ? value : [value]) flat.push(name, v);
    }
    if (!hasHost) flat.push('host', host);
    return flat;
  }
  for (const name of Object.keys(headers)) if (isHost(name)) return headers;
  return { ...(headers as Record<string, unknown>), host } as Headers;
}

function isHost(name: unknown): boolean {
  return typeof name === 'string' && name.length === 4 && name.toLowerCase() === 'host';
}
