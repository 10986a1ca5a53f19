import { isIP } from 'node:net';
import tls, { type PeerCertificate } from 'node:tls';
import { Agent, request } from 'undici';
import { tlsConnectOptions } from '../net/tls.ts';
import { type EndpointAddress } from '../resolver/Resolver.ts';
import { endpointKey } from '../net/endpointKey.ts';
import type { ClusterAccess } from './kubeconfig.ts';

export interface TlsResult {
  /** The chain verified against the kubeconfig's CA and the certificate covers `name`. */
  ok: boolean;
  /** What went wrong, e.g. `ECONNREFUSED`, `UNABLE_TO_VERIFY_LEAF_SIGNATURE`, `ERR_TLS_CERT_ALTNAME_INVALID`. */
  error: string | null;
  /** The certificate's subject alternative names, as OpenSSL prints them (`DNS:kubernetes`, `IP Address:10.0.0.1`). */
  covers: string[];
  issuer: string | null;
  validTo: string | null;
  /** ALPN result: `h2` or `http/1.1`. */
  protocol: string | null;
}

export interface ReadyzResult {
  /** HTTP status; `null` when not asked (TLS failed) or no answer came. */
  status: number | null;
  ok: boolean;
  /** The failing checks (`[-]etcd failed`), or why /readyz was not asked. */
  detail: string | null;
}

export interface EndpointCheck {
  address: string;
  port: number;
  tls: TlsResult;
  readyz: ReadyzResult;
  /** Milliseconds for the /readyz round trip over an established connection; `null` without one. */
  latencyMs: number | null;
  /** What to fix, one sentence each; empty when the endpoint is fine. */
  problems: string[];
}

/** TLS as kube-balancer verifies it (against `access.verification.name`, never the dialled IP), then `/readyz`, then advice. */
export async function checkEndpoint(endpoint: EndpointAddress, access: ClusterAccess, timeoutMs: number): Promise<EndpointCheck> {
  const result: EndpointCheck = {
    address: endpoint.address,
    port: endpoint.port,
    tls: await handshake(endpoint, access, timeoutMs),
    readyz: { status: null, ok: false, detail: null },
    latencyMs: null,
    problems: [],
  };
  const reachable = result.tls.protocol !== null;
  if (!reachable) {
    result.readyz.detail = 'not asked: no TLS connection';
  } else if (!result.tls.ok && access.tls.rejectUnauthorized) {
    // Credentials go only to a server that proved it is the cluster.
    result.readyz.detail = 'not asked: the certificate did not verify';
  } else {
    await readyz(endpoint, access, timeoutMs, result);
  }
  result.problems = advice(result, access, timeoutMs);
  return result;
}

function handshake(endpoint: EndpointAddress, access: ClusterAccess, timeoutMs: number): Promise<TlsResult> {
  const result: TlsResult = { ok: false, error: null, covers: [], issuer: null, validTo: null, protocol: null };
  return new Promise((resolve) => {
    const socket = tls.connect({
      host: endpoint.address,
      port: endpoint.port,
      servername: access.verification.sni,
      ca: access.tls.ca as tls.ConnectionOptions['ca'],
      ALPNProtocols: ['h2', 'http/1.1'],
      // Verified below, so the result can say which part failed. No client certificate is offered
      // here: credentials go only to a server already verified (the /readyz request below).
      rejectUnauthorized: false,
    });
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => {
      result.error = 'ETIMEDOUT';
      done();
    }, timeoutMs);
    socket.once('error', (error: NodeJS.ErrnoException) => {
      result.error = error.code ?? error.message;
      done();
    });
    socket.once('secureConnect', () => {
      const peer = socket.getPeerCertificate();
      result.protocol = socket.alpnProtocol || 'http/1.1';
      result.covers = (peer.subjectaltname ?? '').split(', ').filter(Boolean);
      result.issuer = distinguishedName(peer.issuer);
      result.validTo = peer.valid_to ?? null;
      const chain = socket.authorizationError as unknown as Error | string | null;
      const identity = tls.checkServerIdentity(access.verification.name, peer);
      if (chain) result.error = typeof chain === 'string' ? chain : ((chain as NodeJS.ErrnoException).code ?? chain.message);
      else if (identity) result.error = (identity as NodeJS.ErrnoException).code ?? 'ERR_TLS_CERT_ALTNAME_INVALID';
      result.ok = !chain && !identity;
      done();
    });
  });
}

async function readyz(endpoint: EndpointAddress, access: ClusterAccess, timeoutMs: number, result: EndpointCheck): Promise<void> {
  const agent = new Agent({
    // The balancer's own connect options: the same material, name and SNI.
    connect: { ...tlsConnectOptions(access.tls, access.verification), timeout: timeoutMs },
    allowH2: true,
  });
  const url = `https://${endpointKey(endpoint)}`;
  try {
    // The first request pays for the connection; the second measures what a balanced request would.
    const options = { headers: access.headers, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, dispatcher: agent };
    await (await request(`${url}/livez`, options)).body.dump();
    const start = performance.now();
    const res = await request(`${url}/readyz`, options);
    const body = await res.body.text();
    result.latencyMs = Math.round((performance.now() - start) * 10) / 10;
    result.readyz.status = res.statusCode;
    result.readyz.ok = res.statusCode === 200;
    if (!result.readyz.ok) {
      const failing = body.split('\n').filter((l) => l.startsWith('[-]'));
      result.readyz.detail = (failing.length ? failing.join(', ') : body.trim().slice(0, 200)) || null;
    }
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    result.readyz.detail = code ?? message;
  } finally {
    await agent.destroy();
  }
}

/** One sentence per problem, each saying what to change. */
function advice(check: EndpointCheck, access: ClusterAccess, timeoutMs: number): string[] {
  const where = endpointKey(check);
  const { tls: t, readyz: r } = check;
  const problems: string[] = [];
  if (t.protocol === null) {
    const code = t.error ?? 'no answer';
    if (code === 'ECONNREFUSED') problems.push(`${where} refuses connections: no kube-apiserver listens there (down, or the wrong port)`);
    else if (code === 'ETIMEDOUT') problems.push(`${where} does not answer within ${timeoutMs} ms: the host is down or a firewall drops the traffic`);
    else if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') problems.push(`${where} is unreachable from here (${code}): check routing and firewalls`);
    else problems.push(`${where}: no TLS connection (${code}): is this an HTTPS apiserver port?`);
    return problems;
  }
  if (!t.ok) {
    const covers = t.covers.length ? t.covers.join(', ') : 'no subject alternative names';
    const chainCodes = ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_GET_ISSUER_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT'];
    if (t.error === 'ERR_TLS_CERT_ALTNAME_INVALID') {
      const alternative = t.covers.includes('DNS:kubernetes.default.svc') && isIP(access.verification.name) ? ' (it covers kubernetes.default.svc: set tls-server-name: kubernetes.default.svc in the kubeconfig)' : '';
      problems.push(
        `certificate of ${check.address} does not cover ${access.verification.name} (it covers ${covers}): add ${access.verification.name} to its subject alternative names (kubeadm: apiServer.certSANs), or set tls-server-name in the kubeconfig to a name every apiserver's certificate covers${alternative}`,
      );
    } else if (t.error !== null && chainCodes.includes(t.error)) {
      problems.push(`certificate of ${check.address} (issuer ${t.issuer ?? 'unknown'}) is not signed by the kubeconfig's CA (${t.error}): put the CA that signed it in certificate-authority-data, or reissue the certificate from the cluster CA`);
    } else if (t.error === 'CERT_HAS_EXPIRED') {
      problems.push(`certificate of ${check.address} expired on ${t.validTo ?? 'an earlier date'}: renew it (kubeadm: kubeadm certs renew apiserver)`);
    } else if (t.error === 'CERT_NOT_YET_VALID') {
      problems.push(`certificate of ${check.address} is not valid yet: check the clocks of this machine and of ${check.address}`);
    } else {
      problems.push(`certificate of ${check.address} failed verification (${t.error ?? 'unknown'})`);
    }
    if (!access.tls.rejectUnauthorized) problems[problems.length - 1] += ' — ignored, because the kubeconfig says insecure-skip-tls-verify';
  }
  if (r.status === 401) problems.push(`${where} rejects the kubeconfig's credentials on /readyz (401): refresh the token or client certificate`);
  else if (r.status === 403) problems.push(`${where} forbids /readyz to the kubeconfig's user (403): allow get on the non-resource URL /readyz (the system:public-info-viewer role does)`);
  else if (r.status !== null && !r.ok) problems.push(`${where} is not ready (/readyz ${r.status}${r.detail ? `: ${r.detail}` : ''}): kube-balancer sends it no requests until it is`);
  else if (r.status === null && (t.ok || !access.tls.rejectUnauthorized)) problems.push(`${where}: /readyz got no answer (${r.detail ?? 'unknown'})`);
  return problems;
}

function distinguishedName(name: PeerCertificate['issuer'] | undefined): string | null {
  if (!name) return null;
  return Object.entries(name)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : String(v)}`)
    .join(', ');
}
