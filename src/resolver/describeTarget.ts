import { isResolver } from './parseTarget.ts';

/** How a target is named in stats: never a resolver object's innards. */
export function describeTarget(target: unknown): string {
  if (typeof target === 'string') return target;
  if (!Array.isArray(target)) return 'custom';
  // A chain of URIs and resolvers is named by its links, as CLIENT_LOAD_BALANCE_TARGET spells one.
  const chain = target.length > 0 && target.every((link) => typeof link === 'string' || isResolver(link));
  return chain ? target.map(describeTarget).join(' ') : 'list';
}
