import { isIP } from 'node:net';

/** A URL's hostname without the brackets of an IPv6 literal, as sockets, SNI and certificate checks take it. */
export function unbracket(host: string): string {
  return host.replace(/^\[|\]$/g, '');
}

/** True for an IPv4/IPv6 literal (brackets allowed), which is verified as an IP, never sent as SNI. */
export function isIpLiteral(host: string): boolean {
  return isIP(unbracket(host)) !== 0;
}
