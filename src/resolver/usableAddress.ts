// Addresses that DNS or an EndpointSlice may list but that never reach an apiserver. Loopback and
// private ranges stay usable (single-node clusters, tests, in-cluster addresses).
import { BlockList, isIP } from 'node:net';

function ranges(list: Array<[string, number, 'ipv4' | 'ipv6']>): BlockList {
  const block = new BlockList();
  for (const [network, prefix, family] of list) block.addSubnet(network, prefix, family);
  return block;
}

// BlockList matches IPv4 rules against IPv4-mapped IPv6 addresses too (::ffff:169.254.0.1).
const UNUSABLE: Array<[reason: string, ranges: BlockList]> = [
  // RFC 1122 §3.2.1.3 "this network"; RFC 4291 §2.5.2. Connecting to 0.0.0.0 reaches the local host.
  ['unspecified', ranges([['0.0.0.0', 8, 'ipv4'], ['::', 128, 'ipv6']])],
  // RFC 3927, RFC 4291 §2.5.6: valid on one link only, and an IPv6 one needs a zone we cannot know.
  ['link-local', ranges([['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']])],
  // RFC 5771, RFC 4291 §2.7: TCP cannot connect to a group.
  ['multicast', ranges([['224.0.0.0', 4, 'ipv4'], ['ff00::', 8, 'ipv6']])],
  ['broadcast', ranges([['255.255.255.255', 32, 'ipv4']])],
  // RFC 1112 class E (reserved), RFC 6666 discard-only.
  ['reserved', ranges([['240.0.0.0', 4, 'ipv4'], ['100::', 64, 'ipv6']])],
];

/**
 * Verdicts by address: every resolver round checks every address it lists, and a BlockList check
 * builds a SocketAddress each time (12 % of a fleet simulation's CPU, `npm run fleet`). Bounded:
 * cleared when full, so a resolver listing ever new addresses cannot grow it.
 */
const verdicts = new Map<string, string | undefined>();
const MAX_VERDICTS = 4_096;

/** Why `address` is never dialled when discovery lists it, or `undefined` when it may be. */
export function unusableAddress(address: string): string | undefined {
  if (verdicts.has(address)) return verdicts.get(address);
  if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
  const verdict = check(address);
  verdicts.set(address, verdict);
  return verdict;
}

function check(address: string): string | undefined {
  const family = isIP(address.split('%')[0] ?? '');
  if (family === 0) return 'not an IP address';
  for (const [reason, block] of UNUSABLE) if (block.check(address, family === 4 ? 'ipv4' : 'ipv6')) return reason;
  return undefined;
}

/** `address (reason)` for at most `max` of `dropped`, and how many more: for one warning line. */
export function describeDropped(dropped: readonly string[], max = 5): string {
  const shown = dropped.slice(0, max).join(', ');
  return dropped.length > max ? `${shown} and ${dropped.length - max} more` : shown;
}
