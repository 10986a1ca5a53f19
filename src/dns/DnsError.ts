import { BalancerError } from '../errors.ts';

/**
 * Why a lookup produced no usable answer. The first group are answers (the name or type does not
 * exist); every other reason is a failure, after which the last good answer stays in use.
 */
export type DnsErrorReason =
  | 'NXDOMAIN'
  | 'NODATA'
  | 'SERVFAIL'
  | 'REFUSED'
  | 'FORMERR'
  | 'NOTIMP'
  /** Any other response code. */
  | 'RCODE'
  /** NOERROR without an answer, not authoritative, without recursion: a referral (glibc moves on). */
  | 'REFERRAL'
  /** No matching answer within the per-try timeout or the overall deadline. */
  | 'TIMEOUT'
  /** The server's port is closed (ICMP unreachable on a connected UDP socket, RST over TCP). */
  | 'ECONNREFUSED'
  /** Another socket error. */
  | 'NETWORK'
  /** A TCP answer that could not be used (bad framing, undecodable, not matching the query). */
  | 'MALFORMED'
  /** A CNAME chain longer than the hop limit, or a loop. */
  | 'CNAME_LOOP'
  /** The name cannot be queried (bad label, too long). */
  | 'BAD_NAME'
  | 'ABORTED';

/** A failed or negative DNS lookup: `code` is always `ERR_DNS`, `reason` tells what happened. */
export class DnsError extends BalancerError {
  override readonly name: string = 'DnsError';
  readonly reason: DnsErrorReason;
  /** `name type`, e.g. `_https._tcp.example.com SRV`. */
  readonly question: string;

  constructor(reason: DnsErrorReason, question: string, detail?: string, options?: { cause?: unknown }) {
    super('ERR_DNS', `DNS ${question}: ${reason}${detail ? ` (${detail})` : ''}`, options);
    this.reason = reason;
    this.question = question;
  }

  /** NXDOMAIN and NODATA are answers from the authority, not failures to get one. */
  get negative(): boolean {
    return this.reason === 'NXDOMAIN' || this.reason === 'NODATA';
  }
}
