import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { isIpLiteral, unbracket } from './hostnames.ts';

export type Pem = string | Buffer;

export interface TlsOptions {
  /** CA certificates (PEM) that sign the apiservers' certificates. Default: Node's root store. */
  ca?: Pem | readonly Pem[];
  /**
   * Client certificate (PEM) for mutual TLS. Needs `key`. With a client certificate, connections
   * are TLS 1.3 only: over TLS 1.2 the certificate would reach an endpoint before its own
   * certificate failed verification.
   */
  cert?: Pem;
  /** Private key (PEM) of `cert`. */
  key?: Pem;
  /**
   * Name the server certificates must carry, sent as SNI. Default: the hostname of the request's
   * origin; for an IP origin, that IP is verified and no SNI is sent. The dialled endpoint's own
   * address never decides.
   */
  servername?: string;
  /** `false` turns certificate verification off. Only for a kubeconfig that says so. Default `true`. */
  rejectUnauthorized?: boolean;
  /**
   * With `rejectUnauthorized: false`, or an `http:` origin, whether endpoints that DNS or
   * EndpointSlices list may be used: nothing then checks who answers there, and every request (and
   * its credentials) goes to whatever address the discovery names. Without it such a balancer is an
   * option error. A static target (`static:///…`, an array of endpoints) is addresses you typed,
   * and needs no opt-in. Default `false`.
   */
  allowUnverifiedDiscovered?: boolean;
}

/** TLS options after validation. */
export type ResolvedTls = Required<Pick<TlsOptions, 'rejectUnauthorized'>> & Omit<TlsOptions, 'rejectUnauthorized'>;

/** The name every endpoint's certificate must carry, and the SNI to send for it. */
export interface Verification {
  /** Verified against the certificate: `tls.servername`, else the origin's host (an IP stays an IP). */
  name: string;
  /** Sent as SNI; `undefined` for an IP, which RFC 6066 does not allow as SNI. */
  sni: string | undefined;
}

export function verificationFor(origin: URL, tls: ResolvedTls): Verification {
  const name = unbracket(tls.servername ?? origin.hostname);
  return { name, sni: isIpLiteral(name) ? undefined : name };
}

/**
 * `connect` options for one endpoint's pool. Identity is always checked against the verification
 * name, never against the dialled address, so an endpoint IP missing from the certificate's SANs
 * is fine and a certificate for another name is not.
 */
export function tlsConnectOptions(tls: ResolvedTls, verification: Verification): Record<string, unknown> {
  const name = verification.name;
  return {
    ca: tls.ca,
    cert: tls.cert,
    key: tls.key,
    rejectUnauthorized: tls.rejectUnauthorized,
    // Over TLS 1.2 the client certificate is sent before the server's has been judged, to whoever
    // answers; TLS 1.3 sends it encrypted, after the server has proven its identity. kube-apiserver
    // speaks TLS 1.3 (Go's default since 1.13).
    ...(tls.cert === undefined ? {} : { minVersion: 'TLSv1.3' }),
    servername: verification.sni,
    checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(name, cert),
  };
}

/**
 * How requests for one origin reach an endpoint: the scheme, the name certificates are verified
 * against, the `Host` to keep, and whether the HTTP/1.1-only pool serves them (legacy handlers).
 * Cached per origin, so pools can be keyed by its identity without building strings per request.
 */
export interface Route {
  /** What a pool depends on, as a string (protocol, host, verification, HTTP/1.1-only): pools are keyed by it. */
  readonly key: string;
  readonly protocol: string;
  readonly host: string;
  /** The headers of a request that brings none: `host` alone, one frozen object for every such request (undici only reads it). */
  readonly hostHeaders: Readonly<Record<string, string>>;
  readonly verification: Verification;
  readonly http1Only: boolean;
}
