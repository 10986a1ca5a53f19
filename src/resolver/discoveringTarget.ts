import { isResolver, type Target } from './parseTarget.ts';

/** Schemes whose endpoints someone else lists (DNS, the EndpointSlices): see `tls.allowUnverifiedDiscovered`. */
const DISCOVERING = /^\s*(dns|dns\+srv|kubernetes):/i;

/**
 * The first part of `target` that discovers endpoints rather than listing them — a `dns:`,
 * `dns+srv:` or `kubernetes:` URI, or a resolver object (code whose answers may come from
 * anywhere) — described for an error message; `undefined` for addresses written out
 * (`static:///…`, an array of endpoints).
 */
export function discoveringTarget(target: Target): string | undefined {
  const parts: readonly unknown[] = Array.isArray(target) ? target : [target];
  for (const [i, part] of parts.entries()) {
    if (typeof part === 'string') {
      if (DISCOVERING.test(part)) return `target ${JSON.stringify(part)}`;
    } else if (isResolver(part)) {
      return Array.isArray(target) ? `the resolver object at target[${i}]` : 'a resolver object as target';
    }
  }
  return undefined;
}
