import { LengthPrefixFramer } from './LengthPrefixFramer.ts';
import { LineFramer } from './LineFramer.ts';

/**
 * Cuts a watch's event stream at event boundaries, so that it can end cleanly between two events
 * (a broken connection, a watch moved to another endpoint) and never hand the caller half of one.
 */
export interface WatchFramer {
  /**
   * Takes the next chunk of the stream; returns what may be passed on now: everything up to the
   * last complete event (with any bytes held from before), or `undefined` when no event completed.
   * The rest is held until a later chunk completes it.
   */
  push(chunk: Buffer): Buffer | undefined;
  /** The bytes held after the last boundary, taken out: passed on unchanged when the server itself ends the stream. */
  rest(): Buffer | undefined;
}

const PROTOBUF = 'application/vnd.kubernetes.protobuf';

/**
 * The framer for a watch response's `Content-Type`, as kube-apiserver frames each serializer's
 * watch stream (k8s.io/apimachinery `runtime/serializer`): JSON events one per line
 * (`application/json`, and any `+json` type; also a response that names no type, as a JSON watch
 * from an older or simpler server may); protobuf (`application/vnd.kubernetes.protobuf;stream=watch`)
 * as 4-byte big-endian length-prefixed frames (`protobuf.LengthDelimitedFramer`), where a newline is
 * an ordinary byte. Anything else (CBOR sequences, types yet to come) gets `undefined`: it is passed
 * through unchanged, with no boundary promise.
 */
export function framerFor(contentType: string | string[] | undefined): WatchFramer | undefined {
  const value = Array.isArray(contentType) ? contentType[0] : contentType;
  if (value === undefined || value === '') return new LineFramer();
  const semicolon = value.indexOf(';');
  const type = (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase();
  if (type === 'application/json' || type.endsWith('+json')) return new LineFramer();
  if (type === PROTOBUF) return new LengthPrefixFramer();
  return undefined;
}
