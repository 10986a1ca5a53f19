// One query to one server over one fresh socket: UDP (RFC 1035 §4.2.1) or TCP with the 2-byte
// length prefix (§4.2.2, RFC 7766). Retries, server order and rcodes are the client's business.
import dgram from 'node:dgram';
import net from 'node:net';
import type { Clock } from '../clock.ts';
import { DnsError } from './DnsError.ts';
import { endpointKey } from '../net/endpointKey.ts';
import { ipFamily, type NameServer } from './ResolvConf.ts';
import { encodeQuery, parseResponse, type Query, type Response } from './wire.ts';

export interface Exchange {
  server: NameServer;
  query: Query;
  /** Milliseconds to wait for a matching answer. */
  timeout: number;
  clock: Clock;
  signal?: AbortSignal | undefined;
}

/** A TCP connection may carry more than one frame; this bounds what we read from a misbehaving server. */
const MAX_TCP_BYTES = 4 * (2 + 0xffff);

/**
 * Sends the query from a new connected UDP socket (so the kernel picks a random source port and
 * drops datagrams from anyone but the server) and resolves with the first datagram that is a
 * well-formed answer to exactly this query. Stray, spoofed and malformed datagrams are ignored.
 */
export function exchangeUdp(x: Exchange): Promise<Response> {
  return exchange(x, (settle) => {
    const socket = dgram.createSocket({ type: ipFamily(x.server.address) === 6 ? 'udp6' : 'udp4', lookup: literal });
    const expected = canonicalAddress(x.server.address);
    socket.on('error', (error: NodeJS.ErrnoException) => settle(socketError(x, error)));
    socket.on('message', (message, remote) => {
      // The connected socket already filters by peer; checked again so nothing depends on the kernel.
      if (remote.port !== x.server.port || canonicalAddress(remote.address) !== expected) return;
      const response = parseResponse(message, x.query);
      if (response) settle(response);
    });
    let closed = false;
    socket.connect(x.server.port, x.server.address, () => {
      // The exchange may be over (timeout, abort) before the connect callback runs.
      if (closed) return;
      // Without a callback, send errors come as 'error' events, and dgram may send at once.
      socket.send(encodeQuery(x.query));
    });
    return () => {
      closed = true;
      try {
        socket.close();
      } catch {
        // already closed by an error
      }
    };
  });
}

/** The same query over a new TCP connection, framed by hand (dns-packet's streamDecode is unsafe). */
export function exchangeTcp(x: Exchange): Promise<Response> {
  return exchange(x, (settle) => {
    const socket = net.connect({ host: x.server.address, port: x.server.port });
    let pending: Buffer = Buffer.alloc(0);
    let received = 0;
    socket.setNoDelay(true);
    socket.on('error', (error: NodeJS.ErrnoException) => settle(socketError(x, error)));
    socket.on('connect', () => {
      const message = encodeQuery(x.query);
      const frame = Buffer.allocUnsafe(2 + message.length);
      frame.writeUInt16BE(message.length, 0);
      message.copy(frame, 2);
      socket.write(frame);
    });
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > MAX_TCP_BYTES) return settle(malformed(x, `more than ${MAX_TCP_BYTES} bytes without an answer`));
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      // Frames may arrive split or several in one read; a frame that does not answer us is skipped.
      while (pending.length >= 2) {
        const length = pending.readUInt16BE(0);
        if (pending.length < 2 + length) break;
        const response = parseResponse(pending.subarray(2, 2 + length), x.query);
        if (response) return settle(response);
        pending = pending.subarray(2 + length);
      }
    });
    socket.on('close', () => settle(malformed(x, 'the server closed the connection before a complete answer')));
    return () => socket.destroy();
  });
}

type Settle = (outcome: Response | DnsError) => void;

/** Common lifecycle: one outcome, a timeout through the clock, abort, and the socket always released. */
function exchange(x: Exchange, open: (settle: Settle) => () => void): Promise<Response> {
  return new Promise((resolve, reject) => {
    if (x.signal?.aborted) return reject(aborted(x));
    let done = false;
    /** Releases the socket; unset until `open` returns, which it may do after settling. */
    let release: (() => void) | undefined;
    const onAbort = (): void => settle(aborted(x));
    const timer = x.clock.setTimeout(() => settle(new DnsError('TIMEOUT', describe(x), `no answer within ${x.timeout} ms`)), x.timeout);
    const settle: Settle = (outcome) => {
      if (done) return;
      done = true;
      x.clock.clearTimeout(timer);
      x.signal?.removeEventListener('abort', onAbort);
      release?.();
      if (outcome instanceof DnsError) reject(outcome);
      else resolve(outcome);
    };
    x.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      release = open(settle);
    } catch (error) {
      settle(socketError(x, error as NodeJS.ErrnoException));
    }
    if (done) release?.();
  });
}

function describe(x: Exchange): string {
  return `${x.query.name} ${x.query.type} @${endpointKey(x.server)}`;
}

function socketError(x: Exchange, error: NodeJS.ErrnoException): DnsError {
  if (error.code === 'ECONNREFUSED') return new DnsError('ECONNREFUSED', describe(x), undefined, { cause: error });
  return new DnsError('NETWORK', describe(x), error.code ?? error.message, { cause: error });
}

function malformed(x: Exchange, detail: string): DnsError {
  return new DnsError('MALFORMED', describe(x), detail);
}

function aborted(x: Exchange): DnsError {
  return new DnsError('ABORTED', describe(x));
}

/**
 * dgram resolves even an IP literal through dns.lookup (a tick each for bind and connect); every
 * address we connect to is a literal, so the answer is the address itself, at once.
 */
function literal(address: string, options: unknown, callback: (error: null, address: string, family: number) => void): void {
  callback(null, address, ipFamily(address) === 6 ? 6 : 4);
}

/** One spelling per address, so `::1` and `0:0:0:0:0:0:0:1` compare equal. */
function canonicalAddress(address: string): string {
  const bare = address.split('%')[0] ?? '';
  return net.isIPv6(bare) ? new URL(`http://[${bare}]/`).hostname : bare;
}
