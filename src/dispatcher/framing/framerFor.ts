import { LengthPrefixFramer } from './LengthPrefixFramer.ts';
import { LineFramer } from './LineFramer.ts';
import type { WatchFramer } from './WatchFramer.ts';

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
