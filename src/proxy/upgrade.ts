import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { BalancingAgent } from '../dispatcher/BalancingAgent.ts';
import { unbracket } from '../net/hostnames.ts';
import { endToEnd, upstreamPath, withCredentials, type Upstream } from './forward.ts';
import { sendStatusOnSocket } from './status.ts';

/** Of the hop-by-hop headers, an upgrade keeps these two: they are the request. */
const UPGRADE_HEADERS = new Set(['connection', 'upgrade']);

/**
 * Carries an upgrade (exec, attach, port-forward over WebSocket or SPDY/3.1) to one apiserver the
 * balancer picks (`agent`: the balancer's https.Agent, which places it as a long-running stream and
 * verifies TLS as the balancer does), over HTTP/1.1, with every header the client sent (repeated
 * `X-Stream-Protocol-Version`s included) and the proxy's credentials. A 101 joins the two sockets,
 * each direction ending on its own (a half-close passes through); any other answer is passed back
 * as it came and the connection closes, which is what makes kubectl fall back from WebSocket to SPDY.
 */
export function carryUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, upstream: Upstream, agent: BalancingAgent, path: string, search: string): void {
  socket.on('error', () => socket.destroy());
  void upstream.credentials().then(
    (credentials) => send(req, socket, head, upstream, agent, path, search, credentials),
    (error: unknown) => sendStatusOnSocket(socket, 503, 'ServiceUnavailable', `the kubeconfig's credentials could not be read: ${String(error)}`),
  );
}

/**
 * How many apiservers an upgrade is offered to. A 503 or 429 before the switch (an apiserver shutting
 * down, or overloaded) means nothing ran: the next apiserver may take it.
 */
const UPGRADE_ATTEMPTS = 3;

function send(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  upstream: Upstream,
  agent: BalancingAgent,
  path: string,
  search: string,
  credentials: Record<string, string>,
  attempt = 1,
): void {
  const raw = req.rawHeaders;
  const kept: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (UPGRADE_HEADERS.has(raw[i]!.toLowerCase())) kept.push(raw[i]!, raw[i + 1]!);
  const headers = [...kept, ...withCredentials(endToEnd(raw), credentials), 'Host', upstream.server.host];
  const outgoing = https.request({
    agent,
    host: unbracket(upstream.server.hostname),
    port: upstream.server.port || 443,
    method: req.method,
    path: upstreamPath(upstream.server, path, search),
    headers,
  });
  const abandon = (): void => void outgoing.destroy();
  socket.once('close', abandon);
  outgoing.once('close', () => socket.off('close', abandon));
  outgoing.once('error', (error) => {
    if (socket.writable) sendStatusOnSocket(socket, 503, 'ServiceUnavailable', `no apiserver could take the upgrade: ${error.message}`);
  });
  outgoing.once('upgrade', (res: IncomingMessage, upSocket: Socket, upHead: Buffer) => {
    socket.write(statusLine(res) + headerLines(res.rawHeaders));
    if (upHead.length > 0) socket.write(upHead);
    if (head.length > 0) upSocket.write(head);
    join(socket, upSocket);
  });
  outgoing.once('response', (res: IncomingMessage) => {
    if ((res.statusCode === 503 || res.statusCode === 429) && attempt < UPGRADE_ATTEMPTS && !socket.destroyed) {
      res.resume();
      return send(req, socket, head, upstream, agent, path, search, credentials, attempt + 1);
    }
    // Not upgraded: the answer as it came; Node took off its chunked framing, so the body ends with the connection.
    const headers = res.rawHeaders.filter((_, i, all) => !['transfer-encoding', 'connection', 'keep-alive'].includes(all[i - (i % 2)]!.toLowerCase()));
    socket.write(statusLine(res) + headerLines([...headers, 'Connection', 'close']));
    res.pipe(socket);
    res.once('error', () => socket.destroy());
  });
  outgoing.end();
}

/** Bytes both ways; an end on one side ends the other side's writing only, and errors tear both down. */
function join(client: Duplex, server: Socket): void {
  server.setNoDelay(true);
  server.setTimeout(0);
  const teardown = (): void => {
    client.destroy();
    server.destroy();
  };
  client.on('error', teardown);
  server.on('error', teardown);
  client.pipe(server);
  server.pipe(client);
  let ended = 0;
  const both = (): void => {
    if (++ended === 2) teardown();
  };
  client.once('end', both);
  server.once('end', both);
  client.once('close', () => server.destroy());
  server.once('close', () => client.destroy());
}

function statusLine(res: IncomingMessage): string {
  return `HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}\r\n`;
}

function headerLines(raw: readonly string[]): string {
  let out = '';
  for (let i = 0; i < raw.length; i += 2) out += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return `${out}\r\n`;
}
