import { isIP } from 'node:net';

/** A URL's hostname without the brackets of an IPv6 literal, as sockets, SNI and certificate checks take it. */
export function unbracket(host: string): string {
  return host.replace(/^\[|\]$/g, '');
}

/** True for an IPv4/IPv6 literal (brackets allowed), which is verified as an IP, never sent as SNI. */
export function isIpLiteral(host: string): boolean {
  return isIP(unbracket(host)) !== 0;
}

/** True for a DNS host name (letters, digits, `-` and `_` in labels of 1–63, 253 in all; a final dot allowed). */
export function isHostName(name: string): boolean {
  const bare = name.endsWith('.') ? name.slice(0, -1) : name;
  return bare.length > 0 && bare.length <= 253 && bare.split('.').every((label) => /^[A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?$/.test(label));
}
